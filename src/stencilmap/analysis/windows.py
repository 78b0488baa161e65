"""Access windows: which offsets each stencil reads of each field, and what they span.

Offsets are C order over the axes the field spans (``Ref.offset``). Linearized offsets follow the
memory order of the *full* iteration space: a lower-dimensional field is linearized with the strides of
the full grid restricted to its own axes, so that a linear distance is also a distance in the stream of
grid points (the order in which every stencil unit visits the iteration space).
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.program.expr import Ref, refs
from stencilmap.program.ir import Program, Stencil

Offset = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FieldWindow:
    """What one stencil reads of one field.

    ``offsets``: the access set, distinct and sorted (lexicographic order, which for offsets of one field
    is also the order of their linearized values). ``window``: S_d per axis the field spans.
    ``halo_low`` / ``halo_high``: per axis of the *iteration space* (rank entries), how far the reads reach
    below / above the centre (0 on axes the field does not span, never negative).
    """

    stencil: str
    field: str
    axes: tuple[int, ...]
    offsets: tuple[Offset, ...]
    window: tuple[int, ...]
    halo_low: tuple[int, ...]
    halo_high: tuple[int, ...]


def stencil_refs(stencil: Stencil) -> tuple[Ref, ...]:
    """Every field access of a stencil: its expression and its temporaries', with repetitions."""
    out = list(refs(stencil.expr))
    for t in stencil.temps:
        out.extend(refs(t.expr))
    return tuple(out)


def preserved_input(program: Program, stencil: Stencil) -> str | None:
    """Under ``border: preserve``, the input whose values ``stencil`` keeps where its pass leaves points
    undefined (the input its output feeds), when the stencil reads it; else None."""
    if program.border != "preserve":
        return None
    paired = next((i for i, o in program.feeds() if o == stencil.name), None)
    if paired is None or paired not in {r.field for r in stencil_refs(stencil)}:
        return None
    return paired


def access_sets(stencil: Stencil, program: Program | None = None) -> dict[str, tuple[Offset, ...]]:
    """The access set of every field a stencil reads (temporaries included): distinct offsets, sorted.

    A field with a ``copy`` boundary also needs its centre value (it replaces reads outside the grid),
    so the hardware must deliver offset 0 even when the expression does not read it; so does the input
    ``border: preserve`` keeps (``preserved_input``, given ``program``): a stencil that does not read its
    centre (a Laplace stencil) still taps it from its window to keep the boundary values. A window
    entirely behind the point in memory order (every offset lexicographically negative, e.g.
    ``a[i-1, j]`` alone) is extended to the point too: a streaming consumer keeps pace with its stream, so
    its buffer runs from the oldest element it reads to the one arriving now.
    """
    sets: dict[str, set[Offset]] = {}
    for r in stencil_refs(stencil):
        sets.setdefault(r.field, set()).add(r.offset)
    kept = preserved_input(program, stencil) if program is not None else None
    for name, offs in sets.items():
        rank = len(next(iter(offs)))
        zero = (0,) * rank
        if rank and (stencil.boundary_of(name).kind == "copy" or max(offs) < zero or name == kept):
            offs.add(zero)
    return {name: tuple(sorted(offs)) for name, offs in sorted(sets.items())}


def window_size(offsets: tuple[Offset, ...]) -> tuple[int, ...]:
    """S_d = max_s a_d − min_s a_d + 1 per dimension d (SODA §2.2)."""
    if not offsets:
        return ()
    return tuple(max(col) - min(col) + 1 for col in zip(*offsets, strict=True))


def strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order strides in elements: the last axis is fastest (SODA §2.2, eq. 1, with axes reversed)."""
    out = [1] * len(shape)
    for a in range(len(shape) - 2, -1, -1):
        out[a] = out[a + 1] * shape[a + 1]
    return tuple(out)


def linearize(offset: Offset, axes: tuple[int, ...], shape: tuple[int, ...]) -> int:
    """The linear offset of ``offset`` (over ``axes``) in the memory order of the full grid ``shape``."""
    st = strides(shape)
    return sum(o * st[a] for o, a in zip(offset, axes, strict=True))


def linear_offsets(program: Program, stencil: Stencil, field: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The linearized access set {a^(s)} of ``field`` in ``stencil``, distinct and ascending."""
    axes = program.field_axes(field)
    offsets = access_sets(stencil, program).get(field, ())
    return tuple(sorted({linearize(o, axes, shape) for o in offsets}))


def reuse_distance(linear: tuple[int, ...]) -> int:
    """D_r = max_s a^(s) − min_s a^(s) + 1 (SODA §2.2); 0 for an empty access set."""
    return max(linear) - min(linear) + 1 if linear else 0


def max_forward_offset(program: Program, stencil: Stencil, field: str, shape: tuple[int, ...]) -> int:
    """The largest linearized offset at which ``stencil`` reads ``field`` (may be negative)."""
    return max(linear_offsets(program, stencil, field, shape))


def field_window(program: Program, stencil: Stencil, field: str) -> FieldWindow:
    """The window of one field read by one stencil."""
    axes = program.field_axes(field)
    offsets = access_sets(stencil, program).get(field, ())
    low = [0] * program.rank
    high = [0] * program.rank
    for i, a in enumerate(axes):
        low[a] = max(0, -min(o[i] for o in offsets))
        high[a] = max(0, max(o[i] for o in offsets))
    return FieldWindow(stencil.name, field, axes, offsets, window_size(offsets), tuple(low), tuple(high))


def stencil_windows(program: Program, stencil: Stencil) -> tuple[FieldWindow, ...]:
    """The windows of every field a stencil reads, sorted by field name."""
    return tuple(field_window(program, stencil, f) for f in access_sets(stencil, program))
