"""``lower(program, stencil)``: a stencil's expression as a ``ScalarKernel``, every conversion explicit.

Each node is computed in its static type (``program.typecheck``) exactly as the reference computes it
(``backends/ops.py``): operands are converted to the node's type (to the common type for comparisons),
the operation is applied in that type, and the value is converted on assignment. Iterative (any depth).
"""

from __future__ import annotations

import numpy as np

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import (
    COMPARE_OPS,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    InBounds,
    Ref,
    Select,
    Unary,
    Var,
    postorder,
)
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import TypeEnv, infer, stencil_types
from stencilmap.scalar.kernel import (
    Inside,
    Lit,
    Op,
    Param,
    Read,
    ScalarKernel,
    TempValue,
    Undefined,
    Unsupported,
    Value,
)
from stencilmap.scalar.ops import COMPARE_OF, LIBM

_INT_BINARY = {
    "+": "add_wrap",
    "-": "sub_wrap",
    "*": "mul_wrap",
    "&": "band",
    "|": "bor",
    "^": "bxor",
    "//": "floordiv",
    "**": "ipow",
}
_BOOL_BINARY = {"+": "bor", "*": "band", "&": "band", "|": "bor", "^": "bxor"}
_FLOAT_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv"}


def literal_value(value: float | int | bool, t: str) -> int | float | bool:
    """``value`` converted to the concrete type ``t`` as NumPy converts it (integers wrap)."""
    c = dt.concrete(t)
    if c == "bool":
        return bool(value)
    if dt.is_float(c):
        return float(np.asarray(value, dtype=c))
    with np.errstate(all="ignore"):
        v = int(np.asarray(value).astype(c)) if not isinstance(value, int) else int(value)
    info = np.iinfo(c)
    span = int(info.max) - int(info.min) + 1
    return (v - int(info.min)) % span + int(info.min)


class _Lowering:
    def __init__(self, program: Program, stencil: Stencil) -> None:
        self.program = program
        self.c = program.semantics == "c"
        self.values: list[Value] = []
        self.temps: dict[str, TempValue] = {}
        self.env, self.temp_types = stencil_types(program, stencil)

    def add(self, v: Value) -> int:
        self.values.append(v)
        return len(self.values) - 1

    def type(self, i: int) -> str:
        return self.values[i].dtype

    def op(self, op: str, t: str, *args: int, attr: str = "") -> int:
        return self.add(Op(op, args, dt.concrete(t), attr))

    def conv(self, i: int, dst: str) -> int:
        """Value ``i`` converted to ``dst`` as ``ops.as_type`` converts it."""
        s, d = self.type(i), dt.concrete(dst)
        if s == d:
            return i
        if d == "bool":
            return self.op("to_bool", d, i)
        if dt.is_float(s) and dt.is_integer(d) and dt.bits(d) < 64:
            return self.op("f2i_wrap", d, i)
        return self.op("convert", d, i)

    def expr(self, root: Expr, env: TypeEnv) -> int:
        done: list[int] = []
        for e in postorder(root):
            n = len(_children(e))
            args = done[len(done) - n :] if n else []
            del done[len(done) - n :]
            done.append(self.node(e, args, dt.concrete(infer(e, env)), env))
        return done[0]

    def node(self, e: Expr, args: list[int], t: str, env: TypeEnv) -> int:
        if isinstance(e, Const):
            return self.add(Lit(literal_value(e.value, t), t))
        if isinstance(e, Ref):
            return self.add(Read(e.field, e.offset, t))
        if isinstance(e, Var):
            return self.var(e, t)
        if isinstance(e, Cast):
            return self.conv(args[0], t)
        if isinstance(e, Unary):
            return self.unary(e.op, args[0], t)
        if isinstance(e, Binary):
            return self.binary(e, args[0], args[1], t, env)
        if isinstance(e, Select):
            return self.op("select", t, args[0], self.conv(args[1], t), self.conv(args[2], t))
        if isinstance(e, Call):
            return self.call(e.func, [self.conv(a, t) for a in args], t)
        if isinstance(e, InBounds):
            return self.add(Inside(e.offset))
        raise Unsupported(f"expression {e!r}")

    def var(self, e: Var, t: str) -> int:
        if e.name in self.temps:
            return self.temps[e.name].value
        const = self.program.constant(e.name)
        if const is not None:
            return self.add(Lit(literal_value(const.value, const.dtype), dt.concrete(const.dtype)))
        if self.program.param(e.name) is None:
            raise Unsupported(f"unknown name '{e.name}'")
        return self.add(Param(e.name, e.index, t))

    def unary(self, op: str, a: int, t: str) -> int:
        if op == "!":
            return self.op("lnot", t, a)
        x = self.conv(a, t)
        if op == "+":
            return x
        if t == "bool":
            if op == "~":
                return self.op("lnot", t, x)
            raise Unsupported(f"unary '{op}' on bool")
        if op == "~":
            return self.op("inv", t, x)
        return self.op("neg_wrap" if dt.is_integer(t) else "neg", t, x)

    def binary(self, e: Binary, a: int, b: int, t: str, env: TypeEnv) -> int:
        op = e.op
        if op in ("&&", "||"):
            return self.op("land" if op == "&&" else "lor", t, a, b)
        if op in COMPARE_OPS:
            ta, tb = infer(e.lhs, env), infer(e.rhs, env)
            common = dt.concrete(dt.c_common(ta, tb) if self.c else dt.np_common(ta, tb))
            return self.op(COMPARE_OF[op], t, self.conv(a, common), self.conv(b, common))
        x, y = self.conv(a, t), self.conv(b, t)
        if t == "bool":
            if op == "-":
                raise Undefined("boolean subtraction is not defined (NumPy refuses it)")
            if op not in _BOOL_BINARY:
                raise Unsupported(f"operator '{op}' on bool")
            return self.op(_BOOL_BINARY[op], t, x, y)
        if dt.is_float(t):
            if op == "**":
                return self.op("libm", t, x, y, attr="pow")
            if op == "%" and not self.c:
                return self.op("mod_py", t, x, y)
            if op not in _FLOAT_BINARY:
                raise Unsupported(f"operator '{op}' on {t}")
            return self.op(_FLOAT_BINARY[op], t, x, y)
        if op == "/":
            return self.op("div_trunc", t, x, y)
        if op == "%":
            return self.op("mod_c" if self.c else "mod_py", t, x, y)
        if op not in _INT_BINARY:
            raise Unsupported(f"operator '{op}' on {t}")
        return self.op(_INT_BINARY[op], t, x, y)

    def call(self, f: str, xs: list[int], t: str) -> int:
        if f in ("min", "max"):
            out = xs[0]
            for x in xs[1:]:
                out = self.op(f"{f}_nan", t, out, x)
            return out
        if not dt.is_float(t):
            if f == "abs":
                return self.op("abs_wrap", t, xs[0])
            raise Unsupported(f"function '{f}' on {t}")
        if f in ("abs", "fabs"):
            return self.op("libm", t, xs[0], attr="fabs")
        if f == "round":
            if self.c:
                return self.op("round_half_away", t, xs[0])
            return self.op("libm", t, xs[0], attr="rint")
        if f == "fma":
            return self.op("fma_unfused", t, *xs)
        if f == "fdim":
            return self.op("fdim", t, *xs)
        if f in LIBM:
            return self.op("libm", t, *xs, attr=f)
        raise Unsupported(f"function '{f}'")


def _children(e: Expr) -> tuple[Expr, ...]:
    from stencilmap.program.expr import children

    return children(e)


def lower(program: Program, stencil: Stencil) -> ScalarKernel:
    """``stencil`` of ``program`` as typed SSA values (raises ``Unsupported`` for what no executor can
    compute bit for bit, e.g. boolean subtraction)."""
    low = _Lowering(program, stencil)
    temps: list[TempValue] = []
    for tmp in stencil.temps:
        ty = dt.concrete(low.temp_types[tmp.name])
        value = low.conv(low.expr(tmp.expr, low.env), ty)
        tv = TempValue(tmp.name, value, ty)
        low.temps[tmp.name] = tv
        temps.append(tv)
    result = low.conv(low.expr(stencil.expr, low.env), stencil.dtype)
    return ScalarKernel(
        stencil.name, dt.concrete(stencil.dtype), program.semantics, tuple(low.values), tuple(temps), result
    )
