"""Program IR expressions as C (and CUDA) expressions with exactly the reference's semantics (``ops``).

Every emitted sub-expression has the C type of its inferred (concrete) type, and every operation converts
its operands to the result type first, as ``ops`` does; the helper functions of ``PRELUDE`` implement the
operations C leaves undefined the way ``ops`` defines them (integer ``/`` and ``%`` by zero or of the minimum
by −1, float → narrow integer wrap-around, NumPy's ``%``/``//``/``minimum``). The generated code must be
compiled with ``-fwrapv -ffp-contract=off -fexcess-precision=standard`` so that signed arithmetic wraps, no
multiply-add is fused, and every ``_Float16`` cast rounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stencilmap.backends import ops
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import COMPARE_OPS, Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Program
from stencilmap.program.typecheck import TypeEnv, infer


class Unsupported(Exception):
    """A construct a compiled backend cannot reproduce bit for bit; the caller reports it to the user."""


CTYPES = {
    "bool": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "_Float16",
    "float32": "float",
    "float64": "double",
}

_INT_SUFFIX = {f"{s}int{b}": f"{s}{b}" for s in ("", "u") for b in (8, 16, 32, 64)}

#: Helpers every generated file starts with (after the typedefs of ``stdint.h``); all static inline.
PRELUDE = r"""
static inline double sm_wrap_span(double x, double span, int is_signed) {
  if (!isfinite(x)) return 0.0;
  double t = trunc(x);
  double w = t - span * floor(t / span);
  if (is_signed && w >= span / 2) w -= span;
  return w;
}
#define SM_F2I(T, bits, sgn) static inline T sm_f2##T(double x) { \
  return (T)sm_wrap_span(x, (double)(1ULL << (bits - 1)) * 2.0, sgn); }
SM_F2I(int8_t, 8, 1) SM_F2I(int16_t, 16, 1) SM_F2I(int32_t, 32, 1)
SM_F2I(uint8_t, 8, 0) SM_F2I(uint16_t, 16, 0) SM_F2I(uint32_t, 32, 0)
#define SM_IDIV(T, UT, MN) \
  static inline T sm_cdiv_##T(T a, T b) { if (b == 0) return 0; if (MN && b == (T)-1) return (T)(0 - (UT)a); return (T)(a / b); } \
  static inline T sm_cmod_##T(T a, T b) { if (b == 0 || (MN && b == (T)-1)) return 0; return (T)(a % b); } \
  static inline T sm_pmod_##T(T a, T b) { T r = sm_cmod_##T(a, b); if (MN && r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b); return r; } \
  static inline T sm_fdiv_##T(T a, T b) { if (b == 0) return 0; if (MN && b == (T)-1) return (T)(0 - (UT)a); \
    T q = (T)(a / b); if (MN && (a % b) != 0 && ((a < 0) != (b < 0))) q = (T)(q - 1); return q; } \
  static inline T sm_ipow_##T(T a, T b) { if (MN && b < 0) return 0; UT r = 1, x = (UT)a; UT e = (UT)b; \
    while (e) { if (e & 1) r = (UT)(r * x); x = (UT)(x * x); e >>= 1; } return (T)r; }
SM_IDIV(int8_t, uint8_t, 1) SM_IDIV(int16_t, uint16_t, 1) SM_IDIV(int32_t, uint32_t, 1) SM_IDIV(int64_t, uint64_t, 1)
SM_IDIV(uint8_t, uint8_t, 0) SM_IDIV(uint16_t, uint16_t, 0) SM_IDIV(uint32_t, uint32_t, 0) SM_IDIV(uint64_t, uint64_t, 0)
#define SM_FLT(T, S) \
  static inline T sm_min_##T(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a <= b ? a : b)); } \
  static inline T sm_max_##T(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a >= b ? a : b)); } \
  static inline T sm_pmod_##T(T a, T b) { T m = fmod##S(a, b); if (b == 0) return m; \
    if (m != 0) { if ((b < 0) != (m < 0)) m += b; } else m = copysign##S((T)0, b); return m; } \
  static inline T sm_fdiv_##T(T a, T b) { if (b == 0) return a / b; T m = fmod##S(a, b); T d = (a - m) / b; \
    if (m != 0 && ((b < 0) != (m < 0))) d -= (T)1; T f; \
    if (d != 0) { f = floor##S(d); if (d - f > (T)0.5) f += (T)1; } else f = copysign##S((T)0, a / b); return f; } \
  static inline T sm_round_##T(T a) { return copysign##S(floor##S(fabs##S(a) + (T)0.5), a); }
SM_FLT(float, f) SM_FLT(double, )
#define SM_IMM(T) static inline T sm_min_##T(T a, T b) { return a <= b ? a : b; } \
  static inline T sm_max_##T(T a, T b) { return a >= b ? a : b; }
SM_IMM(int8_t) SM_IMM(int16_t) SM_IMM(int32_t) SM_IMM(int64_t)
SM_IMM(uint8_t) SM_IMM(uint16_t) SM_IMM(uint32_t) SM_IMM(uint64_t)
"""

_LIBM = {
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "floor",
    "ceil", "trunc", "rint", "pow", "atan2", "hypot", "fmod", "fmin", "fmax", "copysign", "erf", "erfc",
}  # fmt: skip
#: Functions whose result is correctly rounded everywhere (NumPy and libm agree bit for bit).
EXACT_FUNCTIONS = frozenset(
    {"sqrt", "fabs", "abs", "floor", "ceil", "trunc", "rint", "round", "fmod", "fmin", "fmax", "copysign"}
    | {"fdim", "fma", "min", "max"}
)


def ctype(t: str) -> str:
    return CTYPES[dt.concrete(t)]


def literal(value: object, t: str) -> str:
    """A C literal of exactly the value ``np.asarray(value, concrete(t))`` has, of C type ``ctype(t)``."""
    arr = np.asarray(value, dtype=dt.concrete(t))
    return scalar_literal(arr[()], dt.concrete(t))


def scalar_literal(x: object, t: str) -> str:
    c = CTYPES[t]
    if dt.is_float(t):
        f = float(x)  # type: ignore[arg-type]
        if math.isnan(f):
            return f"(({c})NAN)"
        if math.isinf(f):
            return f"(({c})({'-' if f < 0 else ''}INFINITY))"
        return f"(({c}){f.hex()})"
    i = int(x)  # type: ignore[call-overload]
    if t == "bool":
        return f"((uint8_t){1 if i else 0})"
    if i < 0:
        return f"(({c})({i + 1}LL - 1))" if i == -(2**63) else f"(({c})({i}LL))"
    return f"(({c}){i}ULL)"


def convert(x: str, src: str, dst: str) -> str:
    """``ops.as_type`` of a C expression of type ``src`` to ``dst``."""
    s, d = dt.concrete(src), dt.concrete(dst)
    if s == d:
        return x
    if d == "bool":
        return f"((uint8_t)(({x}) != 0))"
    if dt.is_float(s) and d in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
        return f"sm_f2{CTYPES[d]}((double)({x}))"
    return f"(({CTYPES[d]})({x}))"


@dataclass
class Emitter:
    """Emits one stencil's expressions; ``read`` gives the C expression of a field access."""

    program: Program
    env: TypeEnv
    temps: dict[str, str]  # temp name -> C variable
    read: Callable[[Ref], str]
    params: dict[str, str]  # param name -> C pointer expression

    def emit(self, e: Expr) -> str:
        if isinstance(e, Const):
            return literal(e.value, e.dtype)
        if isinstance(e, Ref):
            return self.read(e)
        if isinstance(e, Var):
            return self._var(e)
        if isinstance(e, Cast):
            return convert(self.emit(e.operand), self.type(e.operand), e.dtype)
        if isinstance(e, Unary):
            return self._unary(e)
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Select):
            r = self.type(e)
            c, a, b = (self.emit(x) for x in (e.cond, e.then, e.else_))
            return (
                f"((({c}) != 0) ? {convert(a, self.type(e.then), r)} : {convert(b, self.type(e.else_), r)})"
            )
        if isinstance(e, Call):
            return self._call(e)
        raise Unsupported(f"expression {e!r}")

    def type(self, e: Expr) -> str:
        return dt.concrete(infer(e, self.env))

    def _var(self, e: Var) -> str:
        if e.name in self.temps:
            return self.temps[e.name]
        const = self.program.constant(e.name)
        if const is not None:
            return literal(const.value, const.dtype)
        par = self.program.param(e.name)
        if par is None:
            raise Unsupported(f"unknown name '{e.name}'")
        flat = int(np.ravel_multi_index(e.index, par.shape)) if par.shape else 0
        return f"{self.params[e.name]}[{flat}]"

    def _unary(self, e: Unary) -> str:
        r = self.type(e)
        a = self.emit(e.operand)
        ta = self.type(e.operand)
        if e.op == "!":
            return f"(({CTYPES[r]})(({a}) == 0))"
        x = convert(a, ta, r)
        if e.op == "+":
            return x
        if r == "bool":
            if e.op == "~":
                return f"((uint8_t)!({x}))"
            raise Unsupported(f"unary '{e.op}' on bool")
        if r == "float16":
            return f"((_Float16)({e.op}(float)({x})))"
        return f"(({CTYPES[r]})({e.op}({x})))"

    def _binary(self, e: Binary) -> str:
        r = self.type(e)
        ta, tb = self.type(e.lhs), self.type(e.rhs)
        a, b = self.emit(e.lhs), self.emit(e.rhs)
        c = self.program.semantics == "c"
        if e.op in ("&&", "||"):
            return f"(({CTYPES[r]})((({a}) != 0) {e.op} (({b}) != 0)))"
        if e.op in COMPARE_OPS:
            common = dt.concrete(dt.c_common(ta, tb) if c else dt.np_common(ta, tb))
            return f"(({CTYPES[r]})({convert(a, ta, common)} {e.op} {convert(b, tb, common)}))"
        x, y = convert(a, ta, r), convert(b, tb, r)
        if dt.is_float(r):
            return _float_binary(e.op, x, y, r)
        return _int_binary(e.op, x, y, r, c)

    def _call(self, e: Call) -> str:
        r = self.type(e)
        xs = [convert(self.emit(a), self.type(a), r) for a in e.args]
        f = e.func
        if f in ("min", "max"):
            out = xs[0]
            for x in xs[1:]:
                out = _minmax(f, out, x, r)
            return out
        if not dt.is_float(r):
            if f == "abs":
                return (
                    xs[0] if dt.is_unsigned(r) else f"(({CTYPES[r]})(({xs[0]}) < 0 ? -({xs[0]}) : ({xs[0]})))"
                )
            raise Unsupported(f"function '{f}' on {r}")
        if r == "float16" and f == "fma":  # NumPy rounds the product to half before adding
            return (
                f"((_Float16)((float)((_Float16)((float)({xs[0]}) * (float)({xs[1]}))) + (float)({xs[2]})))"
            )
        work = "float32" if r == "float16" else r
        args = [f"(({CTYPES[work]})({x}))" for x in xs] if r == "float16" else xs
        value = _float_call(f, args, work, c=self.program.semantics == "c")
        return f"((_Float16)({value}))" if r == "float16" else value


def _libm(name: str, t: str) -> str:
    return name + ("f" if t == "float32" else "")


def _float_call(f: str, xs: list[str], t: str, c: bool) -> str:
    ct = CTYPES[t]
    if f == "abs":
        f = "fabs"
    if f == "round":
        return f"sm_round_{ct}({xs[0]})" if c else f"{_libm('rint', t)}({xs[0]})"
    if f == "fma":
        return f"(({ct})(({ct})(({xs[0]}) * ({xs[1]})) + ({xs[2]})))"
    if f == "fdim":
        return f"sm_max_{ct}(({ct})(({xs[0]}) - ({xs[1]})), ({ct})0)"
    if f in ("erf", "erfc"):
        return f"(({ct}){f}((double)({xs[0]})))"  # the reference evaluates these in double (math.erf)
    if f in _LIBM:
        return f"{_libm(f, t)}({', '.join(xs)})"
    raise Unsupported(f"function '{f}'")


def _minmax(f: str, a: str, b: str, t: str) -> str:
    if t == "float16":
        return f"((_Float16)sm_{f}_float((float)({a}), (float)({b})))"
    if t == "bool":
        return f"((uint8_t)(({a}) {'&' if f == 'min' else '|'} ({b})))"
    return f"sm_{f}_{CTYPES[t]}({a}, {b})"


def _float_binary(op: str, x: str, y: str, r: str) -> str:
    ct = CTYPES[r]
    if r == "float16":
        x, y = f"((float)({x}))", f"((float)({y}))"
        ct = "float"
    if op in ("+", "-", "*", "/"):
        out = f"(({ct})(({x}) {op} ({y})))"
    elif op == "%":
        out = f"sm_pmod_{ct}({x}, {y})"
    elif op == "//":
        out = f"sm_fdiv_{ct}({x}, {y})"
    elif op == "**":
        out = f"{_libm('pow', 'float32' if ct == 'float' else 'float64')}({x}, {y})"
    else:
        raise Unsupported(f"operator '{op}' on {r}")
    return f"((_Float16)({out}))" if r == "float16" else out


def _int_binary(op: str, x: str, y: str, r: str, c: bool) -> str:
    ct = CTYPES[r]
    if r == "bool":
        logical = {"+": "|", "*": "&", "&": "&", "|": "|", "^": "^"}
        if op not in logical:
            raise Unsupported(f"operator '{op}' on bool")
        return f"((uint8_t)(({x}) {logical[op]} ({y})))"
    if op in ("+", "-", "*", "&", "|", "^"):
        return f"(({ct})(({x}) {op} ({y})))"
    if op == "/":
        return f"sm_cdiv_{ct}({x}, {y})"
    if op == "%":
        return f"sm_{'c' if c else 'p'}mod_{ct}({x}, {y})"
    if op == "//":
        return f"sm_fdiv_{ct}({x}, {y})"
    if op == "**":
        return f"sm_ipow_{ct}({x}, {y})"
    raise Unsupported(f"operator '{op}' on {r}")


def boundary_literal(value: float, t: str) -> str:
    """The constant a ``constant`` boundary yields for a field of type ``t`` (``ops.as_type`` of it)."""
    v = ops.as_type(np.asarray(value), t)
    return scalar_literal(v[()], t)


def uses_inexact_math(program: Program) -> bool:
    """True when some stencil calls a function NumPy and libm may round differently (last-ulp tolerance)."""
    from stencilmap.program.expr import walk

    for s in program.stencils:
        for root in (s.expr, *(t.expr for t in s.temps)):
            for node in walk(root):
                if isinstance(node, Call) and node.func not in EXACT_FUNCTIONS:
                    return True
                if isinstance(node, Binary) and node.op == "**":
                    return True
    return False
