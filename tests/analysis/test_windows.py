"""Access sets, window sizes, linearization, reuse distance and per-field halos."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stencilmap.analysis.windows import (
    access_sets,
    field_window,
    linear_offsets,
    linearize,
    reuse_distance,
    stencil_windows,
    strides,
    window_size,
)
from stencilmap.program.expr import Binary, Ref, Var
from stencilmap.program.ir import Input, Temp

from .helpers import FIVE_POINT, jacobi, program, refs_sum, stencil


def test_jacobi_window_matches_soda_section_2_2() -> None:
    # SODA §2.2: {a} = {−M, −1, 0, 1, M}, D_r = 2M + 1, S_0 = S_1 = 3
    m = 9
    p = program((7, m), ["a"], [jacobi("b", "a")])
    st_ = p.stencils[0]
    assert access_sets(st_) == {"a": tuple(sorted(FIVE_POINT))}
    assert window_size(tuple(FIVE_POINT)) == (3, 3)
    lin = linear_offsets(p, st_, "a", (7, m))
    assert lin == (-m, -1, 0, 1, m)
    assert reuse_distance(lin) == 2 * m + 1
    w = field_window(p, st_, "a")
    assert (w.halo_low, w.halo_high) == ((1, 1), (1, 1))


def test_strides_are_c_order() -> None:
    assert strides((4, 5, 6)) == (30, 6, 1)
    assert strides((7,)) == (1,)
    assert linearize((1, -1, 2), (0, 1, 2), (4, 5, 6)) == 30 - 6 + 2


def test_lower_dimensional_field_uses_full_grid_strides() -> None:
    # in2d spans (i, k) of an (I, J, K) grid: in2d[i+1, k] is J*K positions ahead in the stream
    shape = (8, 16, 32)
    in2d = Input("in2d", "float64", (0, 2))
    p = program(shape, [in2d], [stencil("o", refs_sum("in2d", [(0, 0), (1, 0), (0, -3)]))])
    assert linear_offsets(p, p.stencils[0], "in2d", shape) == (-3, 0, 16 * 32)
    w = field_window(p, p.stencils[0], "in2d")
    assert w.window == (2, 4)
    assert (w.halo_low, w.halo_high) == ((0, 0, 3), (1, 0, 0))


def test_scalar_field_has_empty_window() -> None:
    p = program(
        (4, 4),
        [Input("s", "float32", ()), Input("a", "float32", (0, 1))],
        [stencil("o", Binary("+", Ref("s", ()), Ref("a", (0, 1))))],
    )
    w = field_window(p, p.stencils[0], "s")
    assert w.offsets == ((),) and w.window == () and w.halo_low == (0, 0)
    assert linear_offsets(p, p.stencils[0], "s", (4, 4)) == (0,)


def test_temporaries_reads_are_included() -> None:
    t = Temp("t", None, Ref("a", (0, 2)))
    s = stencil("o", Binary("+", Var("t"), Ref("a", (-1, 0))), temps=(t,))
    p = program((5, 5), ["a"], [s])
    assert access_sets(s) == {"a": ((-1, 0), (0, 2))}
    (w,) = stencil_windows(p, s)
    assert w.window == (2, 3) and w.halo_high == (0, 2) and w.halo_low == (1, 0)


offsets_2d = st.lists(st.tuples(st.integers(-4, 4), st.integers(-4, 4)), min_size=1, max_size=8)


@given(offsets_2d, st.integers(9, 20))
def test_reuse_distance_is_linearized_span(offs: list[tuple[int, int]], width: int) -> None:
    p = program((6, width), ["a"], [stencil("o", refs_sum("a", offs))])
    lin = linear_offsets(p, p.stencils[0], "a", (6, width))
    # offsets are within a row width, so lexicographic order = linear order (SODA §3.3.3); a window
    # wholly behind the point is extended to it (a streaming consumer keeps pace with its stream)
    eff = [*offs, (0, 0)] if max(offs) < (0, 0) else list(offs)
    first, last = min(eff), max(eff)
    assert reuse_distance(lin) == (last[0] - first[0]) * width + last[1] - first[1] + 1
    w = field_window(p, p.stencils[0], "a")
    for d, col in enumerate(zip(*eff, strict=True)):
        assert w.window[d] == max(col) - min(col) + 1
        assert (w.halo_low[d], w.halo_high[d]) == (max(0, -min(col)), max(0, max(col)))
