"""The helper functions a rendered kernel calls: one table, one C function per (operation, type) used.

They implement the cases ``ops.OPS`` defines where plain C is undefined or differs (integer overflow,
division and modulo by zero, ``MIN / -1``, float → narrow integer, NumPy's ``//`` and ``%`` as
``npy_divmod``, NaN-propagating ``min``/``max``, the reference's rounding). Integer arithmetic that must
wrap is computed in 64-bit unsigned arithmetic and narrowed. The same text serves every dialect; only
the types, the qualifier and the library spellings change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stencilmap.program import dtypes as dt
from stencilmap.scalar.ctypes_ import SUFFIX, Dialect, c_family, ctype

#: Helpers another helper calls (emitted first), for integer and for float types.
NEEDS_INT = {"div_trunc": ("neg_wrap",), "floordiv": ("neg_wrap",), "abs_wrap": ("neg_wrap",)}
NEEDS_FLOAT = {"fdim": ("max_nan",)}


def helper_name(op: str, t: str) -> str:
    return f"sm_{op}_{SUFFIX[t]}"


@dataclass(frozen=True, slots=True)
class _Ctx:
    """What a definition needs: the function head, the C type, the 64-bit types, a libm spelling."""

    head: str
    T: str
    ul: str
    sl: str
    signed: bool
    dialect: Dialect
    t: str

    def fn(self, name: str) -> str:
        """The library function ``name`` for this type (``floorf`` in C for float, ``std::floor`` in C++)."""
        if self.dialect == "hls":
            return f"std::{name}"
        if c_family(self.dialect) and self.t == "float32" and name not in ("isnan", "isfinite"):
            return name + "f"
        return name

    def call(self, op: str) -> str:
        return helper_name(op, self.t)


def closure(needed: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The helpers ``needed`` and those they call, dependencies first, otherwise sorted."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def add(key: tuple[str, str]) -> None:
        if key in seen:
            return
        seen.add(key)
        for dep in (NEEDS_FLOAT if dt.is_float(key[1]) else NEEDS_INT).get(key[0], ()):
            add((dep, key[1]))
        out.append(key)

    for key in sorted(needed):
        add(key)
    return out


def helpers_text(needed: set[tuple[str, str]], dialect: Dialect) -> str:
    """The definitions of every helper in ``needed`` (and their dependencies)."""
    return "\n".join(define(op, t, dialect) for op, t in closure(needed))


def define(op: str, t: str, dialect: Dialect) -> str:
    T = ctype(t, dialect)
    qualifier = "static __device__ inline" if dialect == "cuda" else "static inline"
    ul, sl = ("ulong", "long") if dialect == "opencl" else ("uint64_t", "int64_t")
    signed = not dt.is_unsigned(t) and t != "bool"
    ctx = _Ctx(f"{qualifier} {T} {helper_name(op, t)}", T, ul, sl, signed, dialect, t)
    table = _FLOAT if dt.is_float(t) else _INT
    if op not in table:
        raise ValueError(f"no helper {op} for {t}")
    return table[op](ctx)


# ------------------------------------------------------------------------------------------ integers


def _wrap2(sym: str) -> Callable[[_Ctx], str]:
    def text(c: _Ctx) -> str:
        return f"{c.head}({c.T} a, {c.T} b) {{ return ({c.T})(({c.ul})a {sym} ({c.ul})b); }}\n"

    return text


def _neg(c: _Ctx) -> str:
    return f"{c.head}({c.T} a) {{ return ({c.T})(({c.ul})0 - ({c.ul})a); }}\n"


def _inv(c: _Ctx) -> str:
    return f"{c.head}({c.T} a) {{ return ({c.T})(~({c.ul})a); }}\n"


def _div_trunc(c: _Ctx) -> str:
    T = c.T
    if c.signed:
        return (
            f"{c.head}({T} a, {T} b) {{\n    if (b == 0) return 0;\n"
            f"    if (b == ({T})-1) return {c.call('neg_wrap')}(a);\n    return ({T})(a / b);\n}}\n"
        )
    return f"{c.head}({T} a, {T} b) {{ return b == 0 ? ({T})0 : ({T})(a / b); }}\n"


def _mod_c(c: _Ctx) -> str:
    T = c.T
    cond = f"b == 0 || b == ({T})-1" if c.signed else "b == 0"
    return f"{c.head}({T} a, {T} b) {{ return ({cond}) ? ({T})0 : ({T})(a % b); }}\n"


def _floordiv(c: _Ctx) -> str:
    T = c.T
    if not c.signed:
        return f"{c.head}({T} a, {T} b) {{ return b == 0 ? ({T})0 : ({T})(a / b); }}\n"
    return (
        f"{c.head}({T} a, {T} b) {{\n    if (b == 0) return 0;\n    if (b == ({T})-1) return {c.call('neg_wrap')}(a);\n"
        f"    {T} q = ({T})(a / b);\n"
        f"    if (({T})(a % b) != 0 && ((a < 0) != (b < 0))) q = ({T})(q - 1);\n    return q;\n}}\n"
    )


def _mod_py(c: _Ctx) -> str:
    T = c.T
    if not c.signed:
        return f"{c.head}({T} a, {T} b) {{ return b == 0 ? ({T})0 : ({T})(a % b); }}\n"
    return (
        f"{c.head}({T} a, {T} b) {{\n    if (b == 0 || b == ({T})-1) return 0;\n    {T} r = ({T})(a % b);\n"
        f"    if (r != 0 && ((r < 0) != (b < 0))) r = ({T})(r + b);\n    return r;\n}}\n"
    )


def _ipow(c: _Ctx) -> str:
    return (
        f"{c.head}({c.T} a, {c.T} b) {{\n    {c.ul} r = 1, x = ({c.ul})a;\n    {c.sl} e = ({c.sl})b;\n"
        f"    if (e < 0) return 0;\n    while (e) {{\n        if (e & 1) r *= x;\n        x *= x;\n"
        f"        e >>= 1;\n    }}\n    return ({c.T})r;\n}}\n"
    )


def _abs(c: _Ctx) -> str:
    if c.signed:
        return f"{c.head}({c.T} a) {{ return a < 0 ? {c.call('neg_wrap')}(a) : a; }}\n"
    return f"{c.head}({c.T} a) {{ return a; }}\n"


def _minmax(cmp: str) -> Callable[[_Ctx], str]:
    def text(c: _Ctx) -> str:
        return f"{c.head}({c.T} a, {c.T} b) {{ return a {cmp} b ? a : b; }}\n"

    return text


def _f2i(c: _Ctx) -> str:
    span = float(2 ** dt.bits(c.t))
    wrap = f"    if (w >= {span / 2!r}) w -= {span!r};\n" if c.signed else ""
    std = "std::" if c.dialect == "hls" else ""
    return (
        f"{c.head}(double x) {{\n    double t = {std}trunc(x);\n    if (!{std}isfinite(t)) return 0;\n"
        f"    double w = t - {span!r} * {std}floor(t / {span!r});\n{wrap}    return ({c.T})({c.sl})w;\n}}\n"
    )


_INT: dict[str, Callable[[_Ctx], str]] = {
    "add_wrap": _wrap2("+"),
    "sub_wrap": _wrap2("-"),
    "mul_wrap": _wrap2("*"),
    "neg_wrap": _neg,
    "inv": _inv,
    "div_trunc": _div_trunc,
    "mod_c": _mod_c,
    "floordiv": _floordiv,
    "mod_py": _mod_py,
    "ipow": _ipow,
    "abs_wrap": _abs,
    "min_nan": _minmax("<="),
    "max_nan": _minmax(">="),
    "f2i_wrap": _f2i,
}

# ---------------------------------------------------------------------------------------------- floats


def _fminmax(cmp: str) -> Callable[[_Ctx], str]:
    def text(c: _Ctx) -> str:  # NumPy: (a <= b || isnan(a)) ? a : b
        return f"{c.head}({c.T} a, {c.T} b) {{ return (a {cmp} b || {c.fn('isnan')}(a)) ? a : b; }}\n"

    return text


def _fdim(c: _Ctx) -> str:
    return f"{c.head}({c.T} a, {c.T} b) {{ return {c.call('max_nan')}(({c.T})(a - b), ({c.T})0); }}\n"


def _round(c: _Ctx) -> str:
    return f"{c.head}({c.T} a) {{ return {c.fn('copysign')}({c.fn('floor')}({c.fn('fabs')}(a) + ({c.T})0.5), a); }}\n"


def _divmod(op: str) -> Callable[[_Ctx], str]:
    def text(c: _Ctx) -> str:  # npy_divmod (numpy/_core/src/npymath/npy_math_internal.h)
        F = c.T
        body = (
            f"    {F} mod = {c.fn('fmod')}(a, b);\n"
            f"    if (b == 0) return {'a / b' if op == 'floordiv' else 'mod'};\n"
            f"    {F} div = (a - mod) / b;\n"
            f"    if (mod != 0) {{\n        if ((b < 0) != (mod < 0)) {{\n            mod += b;\n"
            f"            div -= ({F})1;\n        }}\n    }} else {{\n        mod = {c.fn('copysign')}(({F})0, b);\n    }}\n"
        )
        if op == "mod_py":
            return f"{c.head}({F} a, {F} b) {{\n{body}    return mod;\n}}\n"
        return (
            f"{c.head}({F} a, {F} b) {{\n{body}    {F} fd;\n"
            f"    if (div != 0) {{\n        fd = {c.fn('floor')}(div);\n        if (div - fd > ({F})0.5) fd += ({F})1;\n"
            f"    }} else {{\n        fd = {c.fn('copysign')}(({F})0, a / b);\n    }}\n    return fd;\n}}\n"
        )

    return text


_FLOAT: dict[str, Callable[[_Ctx], str]] = {
    "min_nan": _fminmax("<="),
    "max_nan": _fminmax(">="),
    "fdim": _fdim,
    "round_half_away": _round,
    "floordiv": _divmod("floordiv"),
    "mod_py": _divmod("mod_py"),
}

#: The ops a dialect computes with a helper, by result kind.
HELPER_OPS = frozenset(_INT) | frozenset(_FLOAT)
