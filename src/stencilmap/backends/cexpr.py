"""Program IR stencils as C (and CUDA) with exactly the reference's semantics (``ops``): the ``c99``
dialect of ``scalar.render`` over ``scalar.lower``.

Every emitted sub-expression has the C type of its inferred (concrete) type, and every operation converts
its operands to the result type first, as ``ops`` does; the helpers of ``prelude`` (``scalar.helpers``,
only those the program calls) implement the operations C leaves undefined the way ``ops`` defines them
(integer ``/`` and ``%`` by zero or of the minimum by −1, float → narrow integer wrap-around, NumPy's
``%``/``//``/``minimum``). The generated code must be compiled with ``-fwrapv -ffp-contract=off
-fexcess-precision=standard`` so that signed arithmetic wraps, no multiply-add is fused, and every
``_Float16`` cast rounds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stencilmap.backends import ops
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Ref
from stencilmap.program.ir import Program, Stencil
from stencilmap.scalar import Inside, Param, Unsupported, lower
from stencilmap.scalar import ctypes_ as sc
from stencilmap.scalar.ctypes_ import Dialect
from stencilmap.scalar.helpers import helpers_text
from stencilmap.scalar.ops import EXACT_FUNCTIONS
from stencilmap.scalar.render import Printer, inside_condition, render

__all__ = ["CTYPES", "EXACT_FUNCTIONS", "Unsupported", "boundary_literal", "prelude", "stencil_lines"]

CTYPES = sc.TYPES["c99"]


def ctype(t: str) -> str:
    return CTYPES[dt.concrete(t)]


def scalar_literal(x: object, t: str, dialect: Dialect = "c99") -> str:
    v = float(x) if dt.is_float(t) else int(x)  # type: ignore[call-overload, arg-type]
    return sc.literal(v, t, dialect)


def prelude(program: Program, dialect: Dialect = "c99") -> str:
    """The helpers the program's stencils call (``scalar.helpers``), for the head of the generated file."""
    used: set[tuple[str, str]] = set()
    for st in program.stencils:
        used |= render(lower(program, st), dialect, param=lambda p: "0", inside=lambda v: "1")[1]  # helpers
    return helpers_text(used, dialect)


def stencil_lines(
    program: Program,
    st: Stencil,
    read: Callable[[Ref], str],
    params: dict[str, str],
    point: Callable[[int], tuple[str, str]] | None = None,
    dialect: Dialect = "c99",
) -> tuple[list[str], str]:
    """The declarations of ``st``'s temporaries (``t0``, ``t1``, …) and the C expression of its value
    (of ``ctype(st.dtype)``) in ``dialect``; ``read`` gives the C expression of a field access, ``params``
    the pointer of each ``param`` array, ``point(a)`` the point's coordinate and the grid's size along axis
    a (two C expressions) for fusion guards (``InBounds``)."""

    def param(p: Param) -> str:
        par = program.param(p.name)
        assert par is not None
        flat = int(np.ravel_multi_index(p.index, par.shape)) if par.shape else 0
        return f"{params[p.name]}[{flat}]"

    kernel = lower(program, st)

    def inside(v: Inside) -> str:
        if point is None:
            raise Unsupported("a fusion guard (in_bounds) without the point")
        return inside_condition(v, lambda a: point(a)[0], lambda a: point(a)[1])

    printer = Printer(kernel, dialect, lambda r: read(Ref(r.field, r.offset)), param, inside)
    lines: list[str] = []
    for j, tmp in enumerate(kernel.temps):
        lines.append(f"const {ctype(tmp.dtype)} t{j} = {printer.expr(tmp.value)};")
        printer.bind(tmp.value, f"t{j}")
    return lines, printer.expr(kernel.result)


def boundary_literal(value: float, t: str, dialect: Dialect = "c99") -> str:
    """The constant a ``constant`` boundary yields for a field of type ``t`` (``ops.as_type`` of it)."""
    v = ops.as_type(np.asarray(value), t)
    return scalar_literal(v[()], t, dialect)


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
