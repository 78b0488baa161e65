"""A stencil's expression as a DAG of single-instruction PEs, for programs that are not linear (CGRA §III-A:
"each PE can be configured to execute part of a stencil computation"; §V: the DFG of the instructions).

Leaves are the stencil's reads (``Access``: a field at an offset, with its boundary), inner nodes one
operation each (``OpNode``: ADD, MUL, MIN, SEL, SQRT, …), constants immediate operands of the PE that
uses them. Temporaries are shared nodes (a PE may feed several). Each operation converts its operands
and rounds its result as the program's typing rules say (``program.typecheck``: C for SODA, NumPy for
StencilFlow; integers wrap), exactly as the reference and the FPGA engine's bytecode do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stencilmap.design.cgra.terms import Offset, refusal
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import infer, stencil_types
from stencilmap.scalar.ops import LIBM

BINARY = {
    "+": "ADD",
    "-": "SUB",
    "*": "MUL",
    "/": "DIV",
    "**": "POW",
    "<": "LT",
    "<=": "LE",
    ">": "GT",
    ">=": "GE",
    "==": "EQ",
    "!=": "NE",
    "&&": "AND",
    "||": "OR",
}
#: The functions a PE computes, from the one table of C library functions (``scalar.ops.LIBM``): each
#: one-argument function is the op of its upper-case name (``abs`` of a float is ``FABS``).
UNARY_FUNCS = (*(f for f, n in LIBM.items() if n == 1), "abs")
BINARY_FUNCS = {
    **{f: f.upper() for f, n in LIBM.items() if n == 2},
    "fmin": "MIN",
    "fmax": "MAX",
    "fdim": "FDIM",
    "min": "MIN",
    "max": "MAX",
}


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
    """One operation; each argument is a node index or an immediate constant. ``dtype``: the type its
    result is rounded to; ``cast``: the type its operands are converted to first ("" none) — the
    program's typing rules (C for SODA, NumPy for StencilFlow), as the reference applies them."""

    op: str
    args: tuple[int | float, ...]
    dtype: str = "float64"
    cast: str = ""


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
    b = _Builder(program, st)
    root = b.rounded(b.expr(st.expr), infer(st.expr, b.env), st.dtype)
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
        self.env, self.temp_types = stencil_types(program, st)
        self.c = program.semantics == "c"

    def add(self, node: Node) -> int:
        if node not in self.index:
            self.index[node] = len(self.nodes)
            self.nodes.append(node)
        return self.index[node]

    def op(self, name: str, *args: int | float, dtype: str = "float64", cast: str = "") -> int | float:
        if all(not isinstance(a, int) for a in args):
            if name in _FOLDABLE:
                values = [_round_const(float(a), cast) if cast else float(a) for a in args]
                return _round_const(_fold(name, dtype, *values), dtype)
            raise refusal(
                f"stencil '{self.st.name}' has a constant sub-expression ({name}) the PEs would recompute"
            )
        clean = tuple(a if isinstance(a, int) else float(a) for a in args)
        return self.add(OpNode(name, clean, dtype, cast))

    def rounded(self, v: int | float, have: str, want: str) -> int | float:
        """``v`` converted to ``want`` (a ROUND PE) unless it already has that type."""
        if have == want:
            return v
        if not isinstance(v, int):
            return _round_const(v, want)
        return self.op("ROUND", v, dtype=want)

    def expr(self, e: Expr) -> int | float:
        t = infer(e, self.env)
        if isinstance(e, Const):
            return _round_const(float(e.value), t)
        if isinstance(e, Ref):
            return self.ref(e)
        if isinstance(e, Var) and not e.index:
            return self.var(e, t)
        if isinstance(e, Cast):
            return self.rounded(self.expr(e.operand), infer(e.operand, self.env), t)
        if isinstance(e, Unary) and e.op in UNARY_OPS:
            inner = self.expr(e.operand)
            if e.op == "+":
                return self.rounded(inner, infer(e.operand, self.env), t)
            name = (
                "NOT" if e.op == "~" and dt.concrete(t) == "bool" else UNARY_OPS[e.op]
            )  # NumPy: ~bool is not
            return self.op(name, inner, dtype=t, cast="" if e.op == "!" else t)
        if isinstance(e, Binary) and (e.op in BINARY or e.op in ("%", "//", "&", "|", "^")):
            return self.binary(e, t)
        if isinstance(e, Select):
            return self.op("SEL", self.expr(e.cond), self.expr(e.then), self.expr(e.else_), dtype=t, cast=t)
        if isinstance(e, Call):
            return self.call(e, t)
        what = f"operator '{e.op}'" if isinstance(e, (Binary, Unary)) else type(e).__name__
        raise refusal(f"stencil '{self.st.name}' uses {what}, which no PE computes")

    def binary(self, e: Binary, t: str) -> int | float:
        ta, tb = infer(e.lhs, self.env), infer(e.rhs, self.env)
        a, b = self.expr(e.lhs), self.expr(e.rhs)
        if e.op in ("&&", "||"):
            return self.op(BINARY[e.op], a, b, dtype=t)
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            common = dt.c_common(ta, tb) if self.c else dt.np_common(ta, tb)
            return self.op(BINARY[e.op], a, b, dtype=t, cast=common)
        if e.op == "/":
            name = "IDIV" if self.c and dt.is_integer(t) else "DIV"
        elif e.op == "%":
            name = "MOD_C" if self.c else "MOD_PY"
        else:
            name = {"//": "FLOORDIV", "&": "BAND", "|": "BOR", "^": "BXOR"}.get(e.op) or BINARY[e.op]
        return self.op(name, a, b, dtype=t, cast=t)

    def call(self, e: Call, t: str) -> int | float:
        args = [self.expr(a) for a in e.args]
        if e.func in UNARY_FUNCS or e.func == "round":
            name = {"abs": "FABS", "round": "ROUND_C" if self.c else "ROUND_EVEN"}.get(e.func, e.func.upper())
            return self.op(name, *args, dtype=t, cast=t)
        if e.func in BINARY_FUNCS and len(args) >= 2:
            name = {"fmin": "FMIN", "fmax": "FMAX", "pow": "CPOW"}.get(e.func, BINARY_FUNCS[e.func])
            acc = args[0]
            for a in args[1:]:  # min / max of n: a chain of n − 1 PEs
                acc = self.op(name, acc, a, dtype=t, cast=t)
            return acc
        if e.func == "fma":
            return self.op("FMA", *args, dtype=t, cast=t)
        raise refusal(f"stencil '{self.st.name}' calls {e.func}, which no PE computes")

    def ref(self, e: Ref) -> int:
        axes = self.program.field_axes(e.field)
        full = [0, 0, 0]
        shift = 3 - self.program.rank
        for a, o in zip(axes, e.offset, strict=True):
            full[shift + a] = o
        b = self.st.boundary_of(e.field)
        return self.add(Access(e.field, (full[0], full[1], full[2]), b.kind, float(b.value)))

    def var(self, e: Var, t: str) -> int | float:
        if e.name in self.temps:
            if e.name not in self.temp_value:
                body = self.temps[e.name]
                value = self.expr(body)
                self.temp_value[e.name] = self.rounded(value, infer(body, self.env), self.temp_types[e.name])
            return self.temp_value[e.name]
        c = self.program.constant(e.name)
        if c is None:
            raise refusal(f"it reads '{e.name}', a param array: coefficients must be constants")
        return _round_const(float(c.value), t)


def _round_const(v: float, t: str) -> float:
    """A literal rounded to its type, as the reference holds it."""
    if t == "bool":
        return float(v != 0)
    with np.errstate(all="ignore"):
        if dt.is_float(t) or t not in _INT_TYPES:
            return float(np.asarray(v, dtype=dt.concrete(t)))
        return float(np.asarray(int(v)).astype(dt.concrete(t)))


_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FOLDABLE = (
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "IDIV",
    "MOD_C",
    "MOD_PY",
    "FLOORDIV",
    "BAND",
    "BOR",
    "BXOR",
    "LT",
    "LE",
    "GT",
    "GE",
    "EQ",
    "NE",
    "AND",
    "OR",
    "NEG",
    "NOT",
)
UNARY_OPS = {"-": "NEG", "!": "NOT", "~": "INV", "+": "ROUND"}


def _fold(op: str, dtype: str, *args: float) -> float:
    """A constant operation evaluated once, in integers for an integer result (C / NumPy rules: a
    division by zero gives 0 as the engine's does); it is an immediate, not a PE."""
    if len(args) == 1:
        return -args[0] if op == "NEG" else float(args[0] == 0)
    a, b = args
    table = {
        "LT": a < b,
        "LE": a <= b,
        "GT": a > b,
        "GE": a >= b,
        "EQ": a == b,
        "NE": a != b,
        "AND": bool(a) and bool(b),
        "OR": bool(a) or bool(b),
    }
    if op in table:
        return float(table[op])
    if dt.concrete(dtype) in _INT_TYPES or dt.concrete(dtype) == "bool":  # a weak int is an int64
        return float(_fold_int(op, int(a), int(b)))
    with np.errstate(all="ignore"):  # NumPy's float operations: // and % as npy_divmod, x / 0 is ±inf or NaN
        return float(_FLOAT_FOLDS[op](np.float64(a), np.float64(b)))


_FLOAT_FOLDS = {
    "ADD": np.add,
    "SUB": np.subtract,
    "MUL": np.multiply,
    "DIV": np.true_divide,
    "FLOORDIV": np.floor_divide,
    "MOD_PY": np.mod,
    "MOD_C": np.fmod,
}


def _fold_int(op: str, a: int, b: int) -> int:
    if op in ("ADD", "SUB", "MUL", "BAND", "BOR", "BXOR"):
        return {"ADD": a + b, "SUB": a - b, "MUL": a * b, "BAND": a & b, "BOR": a | b, "BXOR": a ^ b}[op]
    if b == 0:
        return 0
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # C: truncation toward zero
    return {"IDIV": q, "MOD_C": a - b * q, "FLOORDIV": a // b, "MOD_PY": a % b}.get(op, q)
