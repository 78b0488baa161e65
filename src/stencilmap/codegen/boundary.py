"""What a PE needs to know about each read: where it points and what replaces it outside the grid.

As in the simulator (``sim/model.py``), a PE knows its point from its address and the stream shape; a read
whose point lies outside takes the stencil's boundary for that field: ``constant`` its value, ``copy`` the
centre read, ``shrink`` nothing defined (0 is computed and never compared). ``border: preserve`` keeps, for
an output paired with input i, that input's value outside the box the pass's accumulated halo leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.halos import defined_halo
from stencilmap.design.common import port_name
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program, Stencil


@dataclass(frozen=True, slots=True)
class PortRead:
    """One PE port: its field, dtype, offset over every axis, and its boundary."""

    port: str
    field: str
    dtype: str
    offset: tuple[int, ...]
    kind: str  # constant / copy / shrink
    value: float
    centre: str  # the centre port of the field (what a copy boundary reads)


def port_reads(program: Program, stencil: Stencil, ports: tuple[str, ...]) -> list[PortRead]:
    out = []
    for port in ports:
        field, _, text = port.partition("@")
        offset = tuple(int(t) for t in text.strip("()").split(",") if t)
        full = [0] * program.rank
        for a, o in zip(program.field_axes(field), offset, strict=True):
            full[a] = o
        b = stencil.boundary_of(field)
        centre = port_name(field, (0,) * len(offset))
        if b.kind == "copy" and centre not in ports:
            raise StencilmapError(
                f"stencil '{stencil.name}' has a copy boundary on '{field}' but no centre read"
            )
        out.append(PortRead(port, field, program.field_dtype(field), tuple(full), b.kind, b.value, centre))
    return out


def inside(read: PortRead, shape: tuple[str, ...]) -> str:
    """The C condition that ``read`` stays in the grid (``c{a}``: the point; ``shape``: sizes as C text)."""
    terms = [
        f"c{a} + ({o}) >= 0 && c{a} + ({o}) < {n}"
        for a, (o, n) in enumerate(zip(read.offset, shape, strict=True))
        if o
    ]
    return " && ".join(terms) or "1"


def preserve_box(
    program: Program, stencil: str, ports: tuple[str, ...]
) -> tuple[str, tuple[int, ...], tuple[int, ...]] | None:
    """For ``border: preserve``: the centre port kept and the halo (low, high) per axis; None without it."""
    paired_name = next((inp for inp, out in program.feeds() if out == stencil), None)
    if program.border != "preserve" or paired_name is None:
        return None
    halo = defined_halo(program, stencil)
    if halo is None:
        raise StencilmapError(
            "border: preserve where a constant or copy boundary reads, away from the point, a field not "
            "defined everywhere has no code generation (the kept region is not a box)"
        )
    paired = program.input(paired_name)
    assert paired is not None  # verify: a feedback pair names an input
    centre = port_name(paired.name, (0,) * len(paired.axes))
    if centre not in ports:
        raise StencilmapError(  # the design taps the centre of a kept input it reads (``access_sets``)
            f"border: preserve needs output '{stencil}' to read input '{paired.name}'"
        )
    return centre, tuple(halo.low), tuple(halo.high)
