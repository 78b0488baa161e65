"""A stencil's expression as a DAG of single-instruction PEs, for programs that are not linear (CGRA §III-A:
"each PE can be configured to execute part of a stencil computation"; §V: the DFG of the instructions).

Leaves are the stencil's reads (``Access``: a field at an offset, with its boundary), inner nodes one
operation each (``OpNode``: ADD, MUL, MIN, SEL, SQRT, …), constants immediate operands of the PE that
uses them. Temporaries are shared nodes (a PE may feed several). Every operation rounds to the stencil's
float type. What no PE computes is refused: integer data, bitwise operators, integer casts, ``%``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stencilmap.design.cgra_terms import Offset, refusal
from stencilmap.program.dtypes import is_float
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Program, Stencil

BINARY = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "**": "POW", "<": "LT", "<=": "LE", ">": "GT",
          ">=": "GE", "==": "EQ", "!=": "NE", "&&": "AND", "||": "OR"}  # fmt: skip
UNARY_FUNCS = ("sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
               "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "abs",
               "floor", "ceil", "trunc", "rint", "erf", "erfc")  # fmt: skip
BINARY_FUNCS = {"pow": "POW", "atan2": "ATAN2", "hypot": "HYPOT", "fmod": "FMOD", "fmin": "MIN",
                "fmax": "MAX", "copysign": "COPYSIGN", "fdim": "FDIM", "min": "MIN", "max": "MAX"}  # fmt: skip
#: every PE op of a DAG and its operand count
ARITY = {**{op: 2 for op in set(BINARY.values()) | set(BINARY_FUNCS.values())},
         **{f.upper(): 1 for f in UNARY_FUNCS}, "NEG": 1, "NOT": 1, "ROUND": 1, "SEL": 3, "FMA": 3}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Access:
    """A read of ``field`` at ``offset`` (iteration-space axes, padded to 3); ``boundary``: shrink,
    constant (``value``) or copy (the centre value)."""

    field: str
    offset: Offset
    boundary: str = "shrink"
    value: float = 0.0


@dataclass(frozen=True, slots=True)
class OpNode:
    """One operation; each argument is a node index or an immediate constant."""

    op: str
    args: tuple[int | float, ...]


Node = Access | OpNode


@dataclass(frozen=True, slots=True)
class StageDag:
    """A stencil as PE nodes (leaves first, each op after its operands) and the node of its value."""

    name: str
    dtype: str
    nodes: tuple[Node, ...]
    root: int

    def accesses(self) -> tuple[Access, ...]:
        return tuple(n for n in self.nodes if isinstance(n, Access))

    def ops(self) -> int:
        return sum(1 for n in self.nodes if isinstance(n, OpNode))


def stage_dag(program: Program, st: Stencil) -> StageDag:
    if not is_float(st.dtype):
        raise refusal(f"stencil '{st.name}' computes {st.dtype}: the arithmetic PEs are floating-point")
    b = _Builder(program, st)
    root = b.expr(st.expr)
    if not isinstance(root, int):
        raise refusal(f"stencil '{st.name}' is a constant: it needs no worker")
    return StageDag(st.name, st.dtype, tuple(b.nodes), root)


class _Builder:
    def __init__(self, program: Program, st: Stencil) -> None:
        self.program, self.st = program, st
        self.nodes: list[Node] = []
        self.index: dict[Node, int] = {}
        self.temps = {t.name: t.expr for t in st.temps}
        self.temp_value: dict[str, int | float] = {}

    def add(self, node: Node) -> int:
        if node not in self.index:
            self.index[node] = len(self.nodes)
            self.nodes.append(node)
        return self.index[node]

    def op(self, name: str, *args: int | float) -> int | float:
        if all(not isinstance(a, int) for a in args):
            raise refusal(f"stencil '{self.st.name}' has a constant sub-expression ({name}) the PEs would recompute")  # fmt: skip
        return self.add(OpNode(name, tuple(float(a) if isinstance(a, float) else a for a in args)))

    def expr(self, e: Expr) -> int | float:
        if isinstance(e, Const):
            return _constant(e.value)
        if isinstance(e, Ref):
            return self.ref(e)
        if isinstance(e, Var) and not e.index:
            return self.var(e)
        if isinstance(e, Cast):
            if not is_float(e.dtype):
                raise refusal(f"it casts to {e.dtype}: the arithmetic PEs are floating-point")
            inner = self.expr(e.operand)
            return self.op("ROUND", inner) if e.dtype == "float32" and isinstance(inner, int) else inner
        if isinstance(e, Unary) and e.op in ("-", "+", "!"):
            inner = self.expr(e.operand)
            if e.op == "+":
                return inner
            if not isinstance(inner, int):
                return -inner if e.op == "-" else float(inner == 0)
            return self.op("NEG" if e.op == "-" else "NOT", inner)
        if isinstance(e, Binary) and e.op in BINARY:
            return self.binary(e)
        if isinstance(e, Select):
            return self.op("SEL", self.expr(e.cond), self.expr(e.then), self.expr(e.else_))
        if isinstance(e, Call):
            return self.call(e)
        what = f"operator '{e.op}'" if isinstance(e, (Binary, Unary)) else type(e).__name__
        raise refusal(f"stencil '{self.st.name}' uses {what}, which no PE computes")

    def binary(self, e: Binary) -> int | float:
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        if not isinstance(a, int) and not isinstance(b, int):
            return _fold(BINARY[e.op], a, b)
        return self.op(BINARY[e.op], a, b)

    def call(self, e: Call) -> int | float:
        args = [self.expr(a) for a in e.args]
        if e.func in UNARY_FUNCS:
            return self.op(e.func.upper() if e.func != "abs" else "FABS", *args)
        if e.func in BINARY_FUNCS and len(args) >= 2:
            acc = args[0]
            for a in args[1:]:  # min / max of n: a chain of n − 1 PEs
                acc = self.op(BINARY_FUNCS[e.func], acc, a)
            return acc
        if e.func == "fma":
            return self.op("FMA", *args)
        raise refusal(f"stencil '{self.st.name}' calls {e.func}, which no PE computes")

    def ref(self, e: Ref) -> int:
        axes = self.program.field_axes(e.field)
        full = [0, 0, 0]
        shift = 3 - self.program.rank
        for a, o in zip(axes, e.offset, strict=True):
            full[shift + a] = o
        b = self.st.boundary_of(e.field)
        return self.add(Access(e.field, (full[0], full[1], full[2]), b.kind, float(b.value)))

    def var(self, e: Var) -> int | float:
        if e.name in self.temps:
            if e.name not in self.temp_value:
                self.temp_value[e.name] = self.expr(self.temps[e.name])
            return self.temp_value[e.name]
        c = self.program.constant(e.name)
        if c is None:
            raise refusal(f"it reads '{e.name}', a param array: coefficients must be constants")
        return _constant(c.value)


def _constant(v: float | int | bool) -> float:
    return float(v)


def _fold(op: str, a: float, b: float) -> float:
    """A constant operation evaluated once (it is an immediate, not a PE)."""
    table = {"ADD": a + b, "SUB": a - b, "MUL": a * b, "LT": float(a < b), "LE": float(a <= b),
             "GT": float(a > b), "GE": float(a >= b), "EQ": float(a == b), "NE": float(a != b),
             "AND": float(bool(a) and bool(b)), "OR": float(bool(a) or bool(b))}  # fmt: skip
    if op in table:
        return table[op]
    if op == "DIV":
        return a / b if b else math.copysign(math.inf, a) if a else math.nan
    return float(a**b)
