"""The arithmetic helpers generated code calls, one C function per (operation, type) actually used.

They implement the project's defined semantics (``backends/ops.py``) where plain C differs or is
undefined: integer overflow wraps (computed in 64-bit unsigned arithmetic, then narrowed), ``x / 0``
and ``x % 0`` are 0 for integers, ``INT_MIN / -1`` wraps, float → 8/16/32-bit integer truncates toward
zero and wraps (NaN and ±inf give 0), NumPy's floor division and modulo follow ``npy_divmod``, and
``min``/``max`` propagate NaN as NumPy does. The same text compiles as C++ and as OpenCL C.
"""

from __future__ import annotations

from stencilmap.codegen.ctypes_ import SUFFIX, Dialect, ctype
from stencilmap.program import dtypes as dt

#: Helpers another helper calls (emitted first).
_NEEDS = {"div_c": ("neg",), "floordiv": ("neg",), "abs": ("neg",), "fdim": ("max",)}


def helper_name(op: str, t: str) -> str:
    return f"sm_{op}_{SUFFIX[t]}"


def closure(needed: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The helpers ``needed`` and those they call, dependencies first, otherwise sorted."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def add(key: tuple[str, str]) -> None:
        if key in seen:
            return
        seen.add(key)
        for dep in _NEEDS.get(key[0], ()):
            add((dep, key[1]))
        out.append(key)

    for key in sorted(needed):
        add(key)
    return out


def helpers_text(needed: set[tuple[str, str]], dialect: Dialect) -> str:
    """The definitions of every helper in ``needed`` (and their dependencies)."""
    return "\n".join(_define(op, t, dialect) for op, t in closure(needed))


def _define(op: str, t: str, dialect: Dialect) -> str:
    name, T = helper_name(op, t), ctype(t, dialect)
    ul = "uint64_t" if dialect == "cpp" else "ulong"
    sl = "int64_t" if dialect == "cpp" else "long"
    std = "std::" if dialect == "cpp" else ""
    head = f"static inline {T} {name}"
    if dt.is_float(t):
        return _define_float(op, t, head, std)
    signed = not dt.is_unsigned(t) and t != "bool"
    neg = helper_name("neg", t)
    if op in ("add", "sub", "mul"):
        sym = {"add": "+", "sub": "-", "mul": "*"}[op]
        if t == "bool":  # NumPy: bool + is or, bool * is and
            return f"{head}({T} a, {T} b) {{ return {'a || b' if op == 'add' else 'a && b'}; }}\n"
        return f"{head}({T} a, {T} b) {{ return ({T})(({ul})a {sym} ({ul})b); }}\n"
    if op == "neg":
        return f"{head}({T} a) {{ return ({T})(({ul})0 - ({ul})a); }}\n"
    if op == "inv":
        return f"{head}({T} a) {{ return ({T})(~({ul})a); }}\n"
    if op == "div_c":
        if signed:
            return (
                f"{head}({T} a, {T} b) {{\n    if (b == 0) return 0;\n"
                f"    if (b == ({T})-1) return {neg}(a);\n    return ({T})(a / b);\n}}\n"
            )
        return f"{head}({T} a, {T} b) {{ return b == 0 ? ({T})0 : ({T})(a / b); }}\n"
    if op == "mod_c":
        cond = f"b == 0 || b == ({T})-1" if signed else "b == 0"
        return f"{head}({T} a, {T} b) {{ return ({cond}) ? ({T})0 : ({T})(a % b); }}\n"
    if op == "floordiv":
        if not signed:
            return f"{head}({T} a, {T} b) {{ return b == 0 ? ({T})0 : ({T})(a / b); }}\n"
        return (
            f"{head}({T} a, {T} b) {{\n    if (b == 0) return 0;\n    if (b == ({T})-1) return {neg}(a);\n"
            f"    {T} q = ({T})(a / b);\n"
            f"    if (({T})(a % b) != 0 && ((a < 0) != (b < 0))) q = ({T})(q - 1);\n    return q;\n}}\n"
        )
    if op == "mod_py":
        if not signed:
            return f"{head}({T} a, {T} b) {{ return b == 0 ? ({T})0 : ({T})(a % b); }}\n"
        return (
            f"{head}({T} a, {T} b) {{\n    if (b == 0 || b == ({T})-1) return 0;\n    {T} r = ({T})(a % b);\n"
            f"    if (r != 0 && ((r < 0) != (b < 0))) r = ({T})(r + b);\n    return r;\n}}\n"
        )
    if op == "pow":
        return (
            f"{head}({T} a, {T} b) {{\n    {ul} r = 1, x = ({ul})a;\n    {sl} e = ({sl})b;\n"
            f"    if (e < 0) return 0;\n    while (e) {{\n        if (e & 1) r *= x;\n        x *= x;\n"
            f"        e >>= 1;\n    }}\n    return ({T})r;\n}}\n"
        )
    if op == "abs":
        return (
            f"{head}({T} a) {{ return a < 0 ? {neg}(a) : a; }}\n"
            if signed
            else f"{head}({T} a) {{ return a; }}\n"
        )
    if op in ("min", "max"):
        cmp = "<=" if op == "min" else ">="
        return f"{head}({T} a, {T} b) {{ return a {cmp} b ? a : b; }}\n"
    if op == "f2i":
        span = float(2 ** dt.bits(t))
        wrap = f"    if (w >= {span / 2!r}) w -= {span!r};\n" if signed else ""
        return (
            f"{head}(double x) {{\n    double t = {std}trunc(x);\n    if (!{std}isfinite(t)) return 0;\n"
            f"    double w = t - {span!r} * {std}floor(t / {span!r});\n{wrap}    return ({T})({sl})w;\n}}\n"
        )
    raise ValueError(f"no helper {op} for {t}")


def _define_float(op: str, t: str, head: str, std: str) -> str:
    F = "float" if t == "float32" else "double"
    if op in ("min", "max"):  # NumPy: (a <= b || isnan(a)) ? a : b
        cmp = "<=" if op == "min" else ">="
        return f"{head}({F} a, {F} b) {{ return (a {cmp} b || {std}isnan(a)) ? a : b; }}\n"
    if op == "fdim":
        return f"{head}({F} a, {F} b) {{ return {helper_name('max', t)}(({F})(a - b), ({F})0); }}\n"
    if op in ("floordiv", "mod_py"):  # npy_divmod (numpy/_core/src/npymath/npy_math_internal.h)
        body = (
            f"    {F} mod = {std}fmod(a, b);\n"
            f"    if (b == 0) return {'a / b' if op == 'floordiv' else 'mod'};\n"
            f"    {F} div = (a - mod) / b;\n"
            f"    if (mod != 0) {{\n        if ((b < 0) != (mod < 0)) {{\n            mod += b;\n"
            f"            div -= ({F})1;\n        }}\n    }} else {{\n        mod = {std}copysign(({F})0, b);\n    }}\n"
        )
        if op == "mod_py":
            return f"{head}({F} a, {F} b) {{\n{body}    return mod;\n}}\n"
        return (
            f"{head}({F} a, {F} b) {{\n{body}    {F} fd;\n"
            f"    if (div != 0) {{\n        fd = {std}floor(div);\n        if (div - fd > ({F})0.5) fd += ({F})1;\n"
            f"    }} else {{\n        fd = {std}copysign(({F})0, a / b);\n    }}\n    return fd;\n}}\n"
        )
    raise ValueError(f"no helper {op} for {t}")
