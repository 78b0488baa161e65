"""The design space: lanes within the burst width, q bounded by T, SODA tile candidates."""

from __future__ import annotations

import pytest

from stencilmap.errors import StencilmapError
from stencilmap.explore import design_space
from stencilmap.explore.space import axis_candidates
from tests.explore.helpers import config


def test_lanes_fill_the_burst_width() -> None:
    assert design_space(config("jacobi2d.soda", "ku060", (64, 256))).lanes == (1, 2, 4, 8, 16)  # 512 / 32
    assert design_space(config("stencil1d_r8.json", "ku060", (4096,))).lanes == (1, 2, 4, 8)  # float64


def test_iterate_is_bounded_by_the_time_steps_and_the_cap() -> None:
    assert design_space(config("jacobi2d.soda", "ku060", (64, 256), iterations=5)).q_max == 5
    assert design_space(config("jacobi2d.soda", "ku060", (64, 256), iterations=500)).q_max == 8
    # the program's own iterate is T when none is given
    assert design_space(config("jacobi2d.soda", "ku060", (64, 256), iterations=None)).iterations == 4  # type: ignore[arg-type]
    # outputs that cannot feed the inputs: one stage only (SODA §4.5: q = 1 for non-iterative kernels)
    assert design_space(config("fdtd2d.json", "ku060", (32, 64), iterations=100)).q_max == 1


def test_tiles_untiled_first_then_multiples_of_a_step() -> None:
    space = design_space(config("jacobi2d.soda", "ku060", (64, 256)))
    # multiples of the step 64, then the powers of two below it down to the smallest (4)
    assert space.tiles == ((256,), (192,), (128,), (64,), (32,), (16,), (8,), (4,))
    assert space.tiles_of("pcm") == ((256,),) and space.tiles_of("soda") == space.tiles
    assert space.size == (8 + 1 + 1) * 5 * 1
    three = design_space(config("heat3d.json", "ku060", (16, 64, 64)))
    assert three.tiles[0] == (64, 64) and len(three.tiles) == 6 * 6
    assert all(t >= 4 for tile in three.tiles for t in tile)


def test_lower_dimensional_inputs_are_not_tiled() -> None:
    assert design_space(config("dag_listing1.json", "ku060", (16, 32, 32))).tiles == ((32, 32),)


def test_axis_candidates() -> None:
    assert axis_candidates(4096, 10, 16) == (4096, *range(3840, 0, -256), 128, 64, 32, 16)
    # a wide axis: the step's multiples alone start at 2^20; the powers of two reach the smallest tile
    wide = axis_candidates(2**24, 4, 24)
    assert wide[:3] == (2**24, 2**24 - 2**20, 2**24 - 2**21) and wide[-5:] == (64, 32, 16, 8, 4)
    assert axis_candidates(10, 12, 8) == (10,)
    assert axis_candidates(100, 8, 1) == (100,)


def test_needs_an_fpga_and_sane_values() -> None:
    with pytest.raises(StencilmapError, match="explore needs an FPGA"):
        design_space(config("jacobi2d.soda", "v100", (64, 64)))
    with pytest.raises(StencilmapError, match="--iterations"):
        design_space(config("jacobi2d.soda", "ku060", (64, 64), iterations=0))
    with pytest.raises(StencilmapError, match="--clock-mhz"):
        design_space(config("jacobi2d.soda", "ku060", (64, 64), clock_mhz=-1.0))
