"""StencilFlow internal buffers (§IV-A) and initialization phases."""

from __future__ import annotations

from stencilmap.analysis.buffers import init_cycles, init_phase, internal_buffers
from stencilmap.program.expr import Binary, Ref

from .helpers import program, refs_sum, stencil

SHAPE = (6, 7, 8)  # (K, J, I) in the paper's naming: a row (I) has 8 elements, a slice 7 rows
ROW, SLICE_ROWS = 8, 7


def test_two_rows_apart_buffer_two_rows_plus_w() -> None:
    # §IV-A: a[0,1,0] and a[0,-1,0] require buffering two 1D rows (2I + W elements)
    p = program(SHAPE, ["a"], [stencil("o", refs_sum("a", [(0, 1, 0), (0, -1, 0)]))])
    for w in (1, 4):
        (buf,) = internal_buffers(p, p.stencils[0], SHAPE, w)
        assert buf.span == 2 * ROW and buf.size == 2 * ROW + w


def test_slice_apart_buffer_one_slice_plus_w() -> None:
    # b[0,0,0] and b[1,0,0] are one 2-D slice apart: IJ + W
    p = program(SHAPE, ["b"], [stencil("o", refs_sum("b", [(0, 0, 0), (1, 0, 0)]))])
    (buf,) = internal_buffers(p, p.stencils[0], SHAPE, 2)
    assert buf.size == ROW * SLICE_ROWS + 2


def test_single_access_needs_no_buffer_and_init_is_the_max() -> None:
    e = Binary("+", refs_sum("a", [(0, 0, -1), (0, 0, 1)]), Ref("c", (0, 0, 3)))
    p = program(SHAPE, ["a", "c"], [stencil("o", e)])
    bufs = internal_buffers(p, p.stencils[0], SHAPE, 4)
    assert {b.field: b.size for b in bufs} == {"a": 2 + 4, "c": 0}
    assert init_phase(bufs) == 6 and init_cycles(bufs, 4) == 2
    assert init_phase(()) == 0
