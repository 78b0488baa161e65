"""One C printer for lowered kernels, with dialects (``ctypes_.Dialect``): ``c99`` (the cpu backend's
OpenMP C), ``cuda`` (the gpu backend), ``hls`` (HLS C++) and ``opencl`` (OpenCL C).

The printer writes each value inline into its single user (the kernel is a tree apart from temporaries,
which the caller binds to variables), in SSA order so any depth renders without recursion. Operations C
defines the way ``ops.OPS`` does are written as operators; the others call a helper (``helpers``), and
``Printer.helpers`` collects the (op, type) pairs used so that only those are defined. ``c99`` relies on
``-fwrapv`` for wrapping integer ``+ - *`` (``backends/ccompile.FLAGS``); ``float16`` (``c99`` only) is
computed in float and rounded after every operation.
"""

from __future__ import annotations

from collections.abc import Callable

from stencilmap.program import dtypes as dt
from stencilmap.scalar.ctypes_ import Dialect, c_family, ctype, literal
from stencilmap.scalar.helpers import helper_name
from stencilmap.scalar.kernel import Inside, Lit, Op, Param, Read, ScalarKernel, Unsupported
from stencilmap.scalar.ops import COMPARE, DOUBLE_ONLY

_SYM = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "add_wrap": "+",
    "sub_wrap": "-",
    "mul_wrap": "*",
    "band": "&",
    "bor": "|",
    "bxor": "^",
}
#: Ops every dialect computes with a helper.
_HELPED = frozenset(
    {
        "f2i_wrap",
        "abs_wrap",
        "div_trunc",
        "mod_c",
        "mod_py",
        "floordiv",
        "ipow",
        "min_nan",
        "max_nan",
        "fdim",
        "round_half_away",
    }
)


def _no_param(p: Param) -> str:
    raise Unsupported(f"param '{p.name}' has no value here")


def _no_inside(v: Inside) -> str:
    raise Unsupported("a fusion guard (in_bounds) needs the point")


def inside_condition(v: Inside, point: Callable[[int], str], size: Callable[[int], str]) -> str:
    """The C text of ``Inside``: ``0 <= p_a + o_a < n_a`` on every axis it moves along (``point(a)`` and
    ``size(a)`` give the C text of the point's coordinate and of the grid's size along axis a), as ``1``
    or ``0`` (the kernel's ``bool``)."""
    terms = [
        f"({point(a)} + ({o}) >= 0 && {point(a)} + ({o}) < {size(a)})" for a, o in enumerate(v.offset) if o
    ]
    return f"(({' && '.join(terms)}) ? 1 : 0)" if terms else "1"


class Printer:
    """Renders the values of one kernel; ``read`` and ``param`` give the C text of the leaves."""

    def __init__(
        self,
        kernel: ScalarKernel,
        dialect: Dialect,
        read: Callable[[Read], str],
        param: Callable[[Param], str] = _no_param,
        inside: Callable[[Inside], str] = _no_inside,
    ) -> None:
        self.kernel = kernel
        self.dialect = dialect
        self.read = read
        self.param = param
        self.inside = inside
        self.helpers: set[tuple[str, str]] = set()
        self.names: dict[int, str] = {}
        self._text: dict[int, str] = {}
        self._next = 0

    def bind(self, value: int, name: str) -> None:
        """Later uses of ``value`` read the variable ``name``."""
        self.names[value] = name

    def expr(self, value: int) -> str:
        """The C expression of ``value`` (each value is rendered once, into its one user)."""
        if value in self.names:
            return self.names[value]
        for i in range(self._next, value + 1):
            self._text[i] = self._render(i)
        self._next = max(self._next, value + 1)
        return self._text.pop(value)

    def _arg(self, i: int) -> str:
        return self.names[i] if i in self.names else self._text.pop(i)

    def ctype(self, t: str) -> str:
        return ctype(t, self.dialect)

    def helper(self, op: str, t: str, *args: str) -> str:
        self.helpers.add((op, t))
        return f"{helper_name(op, t)}({', '.join(args)})"

    def _render(self, i: int) -> str:
        v = self.kernel.values[i]
        if isinstance(v, Read):
            return self.read(v)
        if isinstance(v, Param):
            return self.param(v)
        if isinstance(v, Inside):
            return self.inside(v)
        if isinstance(v, Lit):
            return literal(v.value, v.dtype, self.dialect)
        xs = [self._arg(a) for a in v.args]
        if dt.is_float(v.dtype) and v.op not in ("convert", "select", *COMPARE, "land", "lor", "lnot"):
            return self._float(v, xs)
        return self._general(v, xs)

    def _general(self, v: Op, xs: list[str]) -> str:
        op, t = v.op, v.dtype
        T = self.ctype(t)
        c = c_family(self.dialect)
        if op == "convert":
            return f"(({T})({xs[0]}))"
        if op == "to_bool":
            return f"((uint8_t)(({xs[0]}) != 0))" if c else f"(({xs[0]}) != 0)"
        if op == "f2i_wrap":
            return self.helper(op, t, f"(double)({xs[0]})")
        if op in COMPARE:
            return f"(({T})({xs[0]} {COMPARE[op]} {xs[1]}))"
        if op in ("land", "lor"):
            return f"(({T})((({xs[0]}) != 0) {'&&' if op == 'land' else '||'} (({xs[1]}) != 0)))"
        if op == "lnot":
            return f"(({T})(({xs[0]}) == 0))" if c else f"(({T})!(({xs[0]}) != 0))"
        if op == "select":
            return f"((({xs[0]}) != 0) ? {xs[1]} : {xs[2]})"
        if op in ("band", "bor", "bxor") or (c and op in ("add_wrap", "sub_wrap", "mul_wrap")):
            return f"(({T})(({xs[0]}) {_SYM[op]} ({xs[1]})))" if c else f"(({T})({xs[0]} {_SYM[op]} {xs[1]}))"
        if c and op == "neg_wrap":
            return f"(({T})(-({xs[0]})))"
        if c and op == "inv":
            return f"(({T})(~({xs[0]})))"
        if t == "bool" and op in ("min_nan", "max_nan"):
            return f"(({T})(({xs[0]}) {'&' if op == 'min_nan' else '|'} ({xs[1]})))"
        if op in _HELPED or op in ("add_wrap", "sub_wrap", "mul_wrap", "neg_wrap", "inv"):
            return self.helper(op, t, *xs)
        raise Unsupported(f"operation '{op}' on {t}")

    def _float(self, v: Op, xs: list[str]) -> str:
        op, t = v.op, v.dtype
        if t == "float16" and op == "fma_unfused":  # NumPy rounds the product to half before adding
            a, b, z = xs
            return f"((_Float16)((float)((_Float16)((float)({a}) * (float)({b}))) + (float)({z})))"
        if t == "float16":
            self.ctype(t)  # refuses float16 outside c99
            inner = Op(op, v.args, "float32", v.attr)
            return f"((_Float16)({self._float(inner, [f'((float)({x}))' for x in xs])}))"
        c = c_family(self.dialect)
        W = self.ctype(t)
        if op in ("add", "sub", "mul", "div"):
            return f"(({W})(({xs[0]}) {_SYM[op]} ({xs[1]})))" if c else f"({xs[0]} {_SYM[op]} {xs[1]})"
        if op == "neg":
            return f"(({W})(-({xs[0]})))" if c else f"(-({xs[0]}))"
        if op == "fma_unfused":
            a, b, z = xs
            return f"(({W})(({W})(({a}) * ({b})) + ({z})))" if c else f"(({a} * {b}) + {z})"
        if op == "libm":
            return self._libm(v.attr, xs, t)
        if op in _HELPED:
            return self.helper(op, t, *xs)
        raise Unsupported(f"operator '{op}' on {t}")

    def _libm(self, f: str, xs: list[str], t: str) -> str:
        std = "std::" if self.dialect == "hls" else ""
        if f in DOUBLE_ONLY:  # the reference evaluates these in double precision
            return f"(({self.ctype(t)}){std}{f}((double)({xs[0]})))"
        suffix = "f" if c_family(self.dialect) and t == "float32" else ""
        return f"{std}{f}{suffix}({', '.join(xs)})"


def render(
    kernel: ScalarKernel,
    dialect: Dialect,
    name: str = "kernel",
    param: Callable[[Param], str] = _no_param,
    inside: Callable[[Inside], str] = _no_inside,
) -> tuple[str, set[tuple[str, str]]]:
    """``static inline T name(reads…) { temps…; return value; }`` and the helpers it calls. The
    arguments are the kernel's distinct reads in ``kernel.reads()`` order, named ``in0, in1, …``."""
    reads = {r: f"in{j}" for j, r in enumerate(kernel.reads())}
    p = Printer(kernel, dialect, reads.__getitem__, param, inside)
    args = ", ".join(f"{p.ctype(r.dtype)} {n}" for r, n in reads.items())
    qualifier = "static __device__ inline" if dialect == "cuda" else "static inline"
    lines = [f"{qualifier} {p.ctype(kernel.dtype)} {name}({args or 'void'}) {{"]
    for j, tmp in enumerate(kernel.temps):
        lines.append(f"    const {p.ctype(tmp.dtype)} t{j} = {p.expr(tmp.value)};")
        p.bind(tmp.value, f"t{j}")
    lines.append(f"    return {p.expr(kernel.result)};")
    lines.append("}")
    return "\n".join(lines) + "\n", p.helpers
