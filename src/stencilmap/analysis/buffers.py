"""StencilFlow internal buffers (StencilFlow §IV-A): intra-stencil reuse, one buffer per field read.

A stencil has 0 or 1 internal buffers per field: none when it reads the field at a single offset, else
one holding the distance in memory order between the lowest and the highest access plus the vector
width W: B = (max a − min a) + W = D_r − 1 + W elements (§IV-A: "the largest distance between any two
offsets in memory order, plus one (or plus the vector width …)"; e.g. a[0,1,0], a[0,−1,0] over
{K, J, I} need 2I + W). With W = 1 that is D_r, SODA's single-PE minimum; it equals SODA's
D_r + k − 1 with k = W. The initialization phase of a stencil is max_i B_i elements (§IV-B),
⌈max_i B_i / W⌉ cycles.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.windows import access_sets, linear_offsets
from stencilmap.program.ir import Program, Stencil


@dataclass(frozen=True, slots=True)
class InternalBuffer:
    """The internal buffer of ``field`` in ``stencil``: ``span`` = max − min linear offset (D_r − 1)."""

    stencil: str
    field: str
    span: int
    accesses: int  # distinct offsets
    vector: int

    @property
    def size(self) -> int:
        """Elements: 0 for a single access, else span + W (StencilFlow §IV-A)."""
        return 0 if self.accesses < 2 else self.span + self.vector


def internal_buffers(
    program: Program, stencil: Stencil, shape: tuple[int, ...], vector: int = 1
) -> tuple[InternalBuffer, ...]:
    """The internal buffer of every field ``stencil`` reads, sorted by field name."""
    if vector < 1:
        raise ValueError(f"vector width must be at least 1, got {vector}")
    out = []
    for f in access_sets(stencil, program):
        lin = linear_offsets(program, stencil, f, shape)
        out.append(InternalBuffer(stencil.name, f, lin[-1] - lin[0], len(lin), vector))
    return tuple(out)


def init_phase(buffers: tuple[InternalBuffer, ...]) -> int:
    """A stencil's initialization phase in elements: max_i B_i (StencilFlow §IV-A/B), 0 without buffers."""
    return max((b.size for b in buffers), default=0)


def init_cycles(buffers: tuple[InternalBuffer, ...], vector: int = 1) -> int:
    """The initialization phase in cycles: ⌈max_i B_i / W⌉ (§IV-C: W elements per iteration)."""
    return -(-init_phase(buffers) // vector)
