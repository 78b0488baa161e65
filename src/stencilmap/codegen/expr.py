"""A stencil's expression as one C function of its input ports (C++ and OpenCL C alike).

The expression is lowered once (``scalar.lower``: every node computed in its static type exactly as the
reference computes it, every C-undefined case a named operation) and printed in the ``hls`` or ``opencl``
dialect (``scalar.render``); ``helpers`` collects the (op, type) helpers the printed code calls. Library
functions (``sin``, ``exp``, …) are the C library's, ≤ 1 ulp from NumPy's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from stencilmap.codegen.ctypes_ import Dialect, ctype, scalar_dialect
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program, Stencil
from stencilmap.scalar import Inside, Param, Undefined, Unsupported, lower
from stencilmap.scalar.ctypes_ import literal
from stencilmap.scalar.lower import literal_value
from stencilmap.scalar.render import Printer, inside_condition


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

    def _param(self, p: Param) -> str:
        value = literal_value(self.params[p.name][p.index].item(), p.dtype)
        return literal(value, p.dtype, scalar_dialect(self.dialect))

    def guards(self, stencil: Stencil) -> tuple[tuple[int, ...], ...]:
        """The offsets of the fusion guards (``InBounds``) of ``stencil``: the stencil function takes one
        more argument per guard, after its ports, that the point plus the offset is inside the grid."""
        try:
            kernel = lower(self.program, stencil)
        except Unsupported:
            return ()
        return tuple(dict.fromkeys(v.offset for v in kernel.values if isinstance(v, Inside)))

    def guard_values(self, stencil: Stencil, shape: tuple[str, ...], point: str = "c") -> list[str]:
        """The guard arguments of a call: ``point{a}`` the coordinates, ``shape`` the sizes as C text."""
        return [
            inside_condition(Inside(o), lambda a: f"{point}{a}", lambda a: shape[a])
            for o in self.guards(stencil)
        ]

    def stencil_function(self, stencil: Stencil, ports: tuple[str, ...], fname: str) -> str:
        """``static inline T fname(ports…, guards…) { temps…; return value; }`` for ``stencil``."""
        from stencilmap.design.common import port_name

        names = {p: port_variable(p) for p in ports}
        if len(set(names.values())) != len(names):
            names = {p: f"in{n}" for n, p in enumerate(ports)}
        guard = {o: f"inb{k}" for k, o in enumerate(self.guards(stencil))}
        args = ", ".join(
            [
                f"{ctype(self.program.field_dtype(p.partition('@')[0]), self.dialect)} {names[p]}"
                for p in ports
            ]
            + [f"const int {g}" for g in guard.values()]
        )
        try:
            kernel = lower(self.program, stencil)
            printer = Printer(
                kernel,
                scalar_dialect(self.dialect),
                lambda r: names[port_name(r.field, r.offset)],
                self._param,
                lambda v: guard[v.offset],
            )
            lines = [f"static inline {ctype(stencil.dtype, self.dialect)} {fname}({args or 'void'}) {{"]
            for tmp in kernel.temps:
                var = "t_" + re.sub(r"\W", "_", tmp.name)
                lines.append(f"    const {ctype(tmp.dtype, self.dialect)} {var} = {printer.expr(tmp.value)};")
                printer.bind(tmp.value, var)
            lines.append(f"    return {printer.expr(kernel.result)};")
        except Undefined as exc:
            raise StencilmapError(str(exc)) from None
        except Unsupported as exc:
            raise StencilmapError(f"{exc} has no code generation") from None
        self.helpers |= printer.helpers
        lines.append("}")
        return "\n".join(lines) + "\n"
