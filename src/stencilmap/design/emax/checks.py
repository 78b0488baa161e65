"""What the EMAX library can serve (EMAX §2.1, §4.1, §4.2): one stage over one input field, a symmetric star
window, and an expression linear in its reads with constant coefficients. Each refusal is one line."""

from __future__ import annotations

from stencilmap.analysis.linear import NotLinear
from stencilmap.analysis.linear import linear_form as program_linear_form
from stencilmap.design.emax.mapping import Offset
from stencilmap.errors import StencilmapError
from stencilmap.program.dtypes import is_float
from stencilmap.program.expr import Ref, refs
from stencilmap.program.ir import Program, Stencil


def fail(reason: str) -> StencilmapError:
    return StencilmapError(f"the EMAX mapping cannot serve this program: {reason}")


def stage_of(program: Program) -> tuple[Stencil, str]:
    """The one stencil of a one-stage program and the one field it reads."""
    if len(program.stencils) != 1 or len(program.outputs) != 1:
        raise fail(f"it has {len(program.stencils)} stencils; the library maps one stage (EMAX §4.1)")
    if program.iterate != 1:
        raise fail(f"iterate {program.iterate}: the library computes one time step per call (EMAX §4.2)")
    if program.rank not in (2, 3):
        raise fail(f"it is {program.rank}-D; the library maps 3-D stencils (2-D as one Z plane)")
    if program.params:
        raise fail("it reads param arrays; the coefficients must be constants (EMAX §4.2: array C)")
    st = program.stencils[0]
    fields = sorted({r.field for r in stencil_refs(st)})
    if len(fields) != 1 or program.input(fields[0]) is None:
        raise fail(f"it reads {len(fields)} fields; the library streams one input array A (EMAX §4.2)")
    if st.boundary_of(fields[0]).kind != "shrink" or program.border != "ignore":
        raise fail("its border is not left undefined (shrink / border: ignore)")
    if not is_float(st.dtype) or program.field_dtype(fields[0]) != st.dtype:
        raise fail(
            f"it computes {st.dtype} from {program.field_dtype(fields[0])}; EMAX streams one float type"
        )
    return st, fields[0]


def stencil_refs(st: Stencil) -> list[Ref]:
    out = list(refs(st.expr))
    for t in st.temps:
        out.extend(refs(t.expr))
    return out


def lift(offset: tuple[int, ...]) -> Offset:
    """A 2-D offset (dy, dx) as (0, dy, dx)."""
    return (0, offset[0], offset[1]) if len(offset) == 2 else (offset[0], offset[1], offset[2])


def star_degree(offsets: set[Offset]) -> int:
    """The degree of a symmetric star window; raises for anything the pattern cannot serve."""
    for o in offsets:
        if sum(1 for v in o if v) > 1:
            raise fail(f"offset {o} is off the axes: only star windows map (EMAX §2.1)")
        if tuple(-v for v in o) not in offsets:
            raise fail(f"the window is asymmetric (reads {o} but not its mirror): the pattern is centred")
    d = max((abs(v) for o in offsets for v in o), default=0)
    if d < 1:
        raise fail("it reads no neighbour (degree 0)")
    return d


def linear_form(program: Program, st: Stencil) -> tuple[float, dict[Offset, float]]:
    """``expr = c + Σ c_o · v(o)``: the constant and the coefficient of each offset (EMAX §4.2: the
    library multiplies A by the constant coefficients C; ``analysis.linear``). Raises for a non-linear
    expression."""
    try:
        const, coeff = program_linear_form(program, st)
    except NotLinear as exc:
        raise fail(
            f"its expression is not a constant-coefficient sum (at {type(exc.node).__name__}); EMAX §4.2"
        ) from None
    return const, {offset: c for (_, offset), c in coeff.items()}
