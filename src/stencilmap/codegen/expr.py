"""A stencil's expression as one C function of its input ports (C++ and OpenCL C alike).

Every node is computed in its static type (``program.typecheck``) exactly as the reference computes it
(``backends/ops.py``): operands are converted to the node's type (to the common type for comparisons),
the operation is applied in that type, and the value converted on assignment. Where C is undefined or
differs from the defined semantics the code calls a helper (``helpers``): wrapping integer arithmetic,
division and modulo by zero, float → integer conversion, NumPy floor division, modulo and NaN-propagating
``min``/``max``. Library functions (``sin``, ``exp``, …) are the C library's, ≤ 1 ulp from NumPy's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from stencilmap.codegen.ctypes_ import Dialect, concrete, ctype, literal
from stencilmap.codegen.helpers import helper_name
from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import TypeEnv, infer, stencil_types

_FUNCS_1 = {
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "rint",
}  # fmt: skip
_FUNCS_2 = {"pow", "atan2", "hypot", "fmod", "fmin", "fmax", "copysign"}


def port_variable(port: str) -> str:
    """``v@(0,-1)`` → ``v_0_m1``: a C identifier for a PE port."""
    name, _, off = port.partition("@")
    parts = [p.strip().replace("-", "m") for p in off.strip("()").split(",") if p.strip()]
    return re.sub(r"\W", "_", "_".join([name, *parts]) if parts else f"{name}_")


@dataclass
class ExprEmitter:
    """Emits C for expressions of one program; ``helpers`` collects the (op, type) helpers used."""

    program: Program
    params: Mapping[str, npt.NDArray[Any]]
    dialect: Dialect = "cpp"
    helpers: set[tuple[str, str]] = field(default_factory=set)

    @property
    def std(self) -> str:
        return "std::" if self.dialect == "cpp" else ""

    def call(self, op: str, t: str, *args: str) -> str:
        t = concrete(t)
        self.helpers.add((op, t))
        return f"{helper_name(op, t)}({', '.join(args)})"

    def conv(self, x: str, src: str, dst: str) -> str:
        """``x`` of type ``src`` converted to ``dst`` as ``ops.as_type`` converts it."""
        s, d = concrete(src), concrete(dst)
        if s == d:
            return x
        if d == "bool":
            return f"(({x}) != 0)"
        if dt.is_float(s) and dt.is_integer(d) and dt.bits(d) < 64:
            return self.call("f2i", d, f"(double)({x})")
        return f"(({ctype(d, self.dialect)})({x}))"

    def truthy(self, x: str) -> str:
        return f"(({x}) != 0)"

    # ------------------------------------------------------------------------------------- nodes

    def emit(self, e: Expr, env: TypeEnv, ports: Mapping[str, str], temps: Mapping[str, str]) -> str:
        t = infer(e, env)
        T = ctype(t, self.dialect)
        if isinstance(e, Const):
            return literal(e.value, t, self.dialect)
        if isinstance(e, Ref):
            from stencilmap.design.common import port_name

            return ports[port_name(e.field, e.offset)]
        if isinstance(e, Var):
            return self._var(e, t, temps)
        if isinstance(e, Cast):
            return self.conv(self.emit(e.operand, env, ports, temps), infer(e.operand, env), t)
        if isinstance(e, Unary):
            a, ta = self.emit(e.operand, env, ports, temps), infer(e.operand, env)
            if e.op == "!":
                return f"(({T})!{self.truthy(a)})"
            x = self.conv(a, ta, t)
            if e.op == "+":
                return x
            if e.op == "~":
                return self.call("inv", t, x)
            return self.call("neg", t, x) if dt.is_integer(t) else f"(-({x}))"
        if isinstance(e, Binary):
            return self._binary(e, t, env, ports, temps)
        if isinstance(e, Select):
            c = self.truthy(self.emit(e.cond, env, ports, temps))
            a = self.conv(self.emit(e.then, env, ports, temps), infer(e.then, env), t)
            b = self.conv(self.emit(e.else_, env, ports, temps), infer(e.else_, env), t)
            return f"({c} ? {a} : {b})"
        if isinstance(e, Call):
            xs = [self.conv(self.emit(a, env, ports, temps), infer(a, env), t) for a in e.args]
            return self._func(e.func, xs, t)
        raise TypeError(f"unknown expression {e!r}")

    def _var(self, e: Var, t: str, temps: Mapping[str, str]) -> str:
        if e.name in temps:
            return temps[e.name]
        const = self.program.constant(e.name)
        if const is not None:
            return literal(const.value, const.dtype, self.dialect)
        values = self.params[e.name]
        return literal(values[e.index].item(), t, self.dialect)

    def _binary(
        self, e: Binary, t: str, env: TypeEnv, ports: Mapping[str, str], temps: Mapping[str, str]
    ) -> str:
        T = ctype(t, self.dialect)
        ta, tb = infer(e.lhs, env), infer(e.rhs, env)
        a, b = self.emit(e.lhs, env, ports, temps), self.emit(e.rhs, env, ports, temps)
        c = self.program.semantics == "c"
        if e.op in ("&&", "||"):
            return f"(({T})({self.truthy(a)} {e.op} {self.truthy(b)}))"
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            common = dt.c_common(ta, tb) if c else dt.np_common(ta, tb)
            return f"(({T})({self.conv(a, ta, common)} {e.op} {self.conv(b, tb, common)}))"
        x, y = self.conv(a, ta, t), self.conv(b, tb, t)
        integer = dt.is_integer(concrete(t))
        if e.op in ("&", "|", "^"):
            return f"(({T})({x} {e.op} {y}))"
        if e.op in ("+", "-", "*"):
            if integer:
                if concrete(t) == "bool" and e.op == "-":
                    raise StencilmapError("boolean subtraction is not defined (NumPy refuses it)")
                return self.call({"+": "add", "-": "sub", "*": "mul"}[e.op], t, x, y)
            return f"({x} {e.op} {y})"
        if e.op == "/":
            return self.call("div_c", t, x, y) if integer else f"({x} / {y})"
        if e.op == "%":
            if c:
                return self.call("mod_c", t, x, y) if integer else f"{self.std}fmod({x}, {y})"
            return self.call("mod_py", t, x, y)
        if e.op == "//":
            return self.call("floordiv", t, x, y)  # NumPy floor division, integer or float
        if e.op == "**":
            return self.call("pow", t, x, y) if integer else f"{self.std}pow({x}, {y})"
        raise StencilmapError(f"operator '{e.op}' has no code generation")

    def _func(self, func: str, xs: list[str], t: str) -> str:
        std = self.std
        T = ctype(t, self.dialect)
        integer = dt.is_integer(concrete(t))
        if func in ("min", "max"):
            out = xs[0]
            for x in xs[1:]:
                out = self.call(func, t, out, x)
            return out
        if func in ("abs", "fabs"):
            return self.call("abs", t, xs[0]) if integer else f"{std}fabs({xs[0]})"
        if integer:
            raise StencilmapError(f"function '{func}' on integers has no code generation")
        if func == "round":
            return f"{std}round({xs[0]})" if self.program.semantics == "c" else f"{std}rint({xs[0]})"
        if func in ("erf", "erfc"):  # the reference evaluates these in double precision
            return f"(({T}){std}{func}((double)({xs[0]})))"
        if func == "fma":  # the reference rounds the product: a * b + c, never fused
            return f"(({xs[0]} * {xs[1]}) + {xs[2]})"
        if func == "fdim":
            return self.call("fdim", t, xs[0], xs[1])
        if func == "fmin" or func == "fmax":
            return f"{std}{func}({xs[0]}, {xs[1]})"
        if func in _FUNCS_1:
            return f"{std}{func}({xs[0]})"
        if func in _FUNCS_2:
            return f"{std}{func}({xs[0]}, {xs[1]})"
        raise StencilmapError(f"function '{func}' has no code generation")

    # --------------------------------------------------------------------------------- stencils

    def stencil_function(self, stencil: Stencil, ports: tuple[str, ...], fname: str) -> str:
        """``static inline T fname(ports…) { temps…; return value; }`` for ``stencil``."""
        env, temp_types = stencil_types(self.program, stencil)
        names = {p: port_variable(p) for p in ports}
        if len(set(names.values())) != len(names):
            names = {p: f"in{n}" for n, p in enumerate(ports)}
        args = ", ".join(
            f"{ctype(self.program.field_dtype(p.partition('@')[0]), self.dialect)} {names[p]}" for p in ports
        )
        lines = [f"static inline {ctype(stencil.dtype, self.dialect)} {fname}({args or 'void'}) {{"]
        temps: dict[str, str] = {}
        for tmp in stencil.temps:
            value = self.emit(tmp.expr, env, names, temps)
            ty = temp_types[tmp.name]
            var = "t_" + re.sub(r"\W", "_", tmp.name)
            lines.append(
                f"    const {ctype(ty, self.dialect)} {var} = {self.conv(value, infer(tmp.expr, env), ty)};"
            )
            temps[tmp.name] = var
        value = self.emit(stencil.expr, env, names, temps)
        lines.append(f"    return {self.conv(value, infer(stencil.expr, env), stencil.dtype)};")
        lines.append("}")
        return "\n".join(lines) + "\n"
