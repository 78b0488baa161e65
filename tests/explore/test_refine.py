"""SODA tiles off the grid (SODA §4.2, §4.5): the winner's tile grows to the largest that fits."""

from __future__ import annotations

from dataclasses import replace

from stencilmap.explore import design_space
from stencilmap.explore.refine import _utilization, axis_halo, balanced, refine_tile
from stencilmap.explore.resources import ResourceTable
from stencilmap.explore.search import explore
from stencilmap.explore.tables import tile_counts
from tests.explore.helpers import config

# a row far wider than any tile the ku060's BRAM holds at q = 8: the on-chip storage bounds the tile
WIDE = config("jacobi2d.soda", "ku060", (4096, 1 << 20), 64, archs=("soda",), top=3)


def test_the_winners_tile_is_the_largest_that_fits_and_off_the_grid() -> None:
    result = explore(WIDE)
    space = design_space(WIDE)
    best = result.best
    assert best is not None and best.tile is not None
    (t,) = best.tile
    assert (t,) not in space.tiles and t & (t - 1)  # not a grid candidate, not a power of two
    assert best.fits
    table = ResourceTable("soda", space.program, space.device, space.q_max)
    assert _utilization(table, best.lanes, best.iterate, best.tile) is not None
    # the bisection's tile before balancing is at most a few points below the storage bound: a tile a
    # tenth wider does not fit
    assert _utilization(table, best.lanes, best.iterate, (t + t // 10,)) is None
    # every grid tile of the same (k, q) is no faster
    plain = explore(replace(WIDE, top=50))
    for c in plain.top:
        if (c.lanes, c.iterate) == (best.lanes, best.iterate) and c.tile != best.tile:
            assert c.predicted_seconds >= best.predicted_seconds * (1 - 1e-6)


def test_refine_keeps_k_and_q_and_never_slows_a_candidate() -> None:
    space = design_space(WIDE)
    search = explore(replace(WIDE, top=5))
    table = ResourceTable("soda", space.program, space.device, space.q_max)
    for c in search.top:
        r = refine_tile(space, c, table)
        assert (r.lanes, r.iterate) == (c.lanes, c.iterate)
        assert r.predicted_seconds <= c.predicted_seconds * (1 + 1e-6)
        assert refine_tile(space, r, table).tile == r.tile  # a refined tile is a fixed point


def test_balanced_tiles_keep_the_count_and_end_at_the_edge() -> None:
    space = design_space(WIDE)
    n = space.shape[1]
    for q in (1, 3, 8):
        halo = axis_halo(space, 1, q)
        for t in (1000, 4097, 40_000, 300_001):
            (b,) = balanced(space, (t,), q)
            assert b <= t
            count, _ = tile_counts(space.program, space.shape, ((t,), (b,)), q)
            assert count[q - 1, 0] == count[q - 1, 1]
            c = int(count[q - 1, 1])
            # c tiles of b overlapping by the halo cover the axis, c tiles of b − 1 do not
            assert b + (c - 1) * (b - halo) >= n > (b - 1) + (c - 1) * (b - 1 - halo)


def test_an_untiled_winner_and_other_builders_are_left_alone() -> None:
    small = config("jacobi2d.soda", "ku060", (64, 256), 4, top=5)
    result = explore(small)
    space = design_space(small)
    for c in result.top:
        if c.arch != "soda" or c.tile is None:
            table = ResourceTable(c.arch, space.program, space.device, space.q_max)
            assert refine_tile(space, c, table) == c
