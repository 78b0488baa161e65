"""The optimum as the OpenCL paper's §4.3 search picks it (``explore.opencl``): eq. 1 with I_total / d
kernel executions at the board's lower clock, over ``explore``'s fitting PCM candidates."""

from __future__ import annotations

import pytest

from stencilmap.explore.opencl import eq1_seconds, opencl_optimum, paper_ranking
from stencilmap.explore.report import Candidate
from tests.explore.test_opencl_table4 import PAPER, T, unpinned


def candidate(lanes: int, iterate: int, cycles: float, *, fits: bool = True) -> Candidate:
    return Candidate(
        arch="pcm",
        lanes=lanes,
        iterate=iterate,
        tile=None,
        tiles=1,
        cycles_per_launch=cycles,
        launches=-(-T // iterate),
        predicted_seconds=0.0,
        scenario="compute",
        utilization=(("alm", 0.5 if fits else 0.95),),
        limits=(("alm", 0.9),),
        clock_mhz=250.0,
    )


def test_eq1_counts_i_over_d_executions_not_whole_launches() -> None:
    """15,360 / 28 = 548.57 executions of (t_ctrl + t_comp), not ⌈15,360 / 28⌉ = 549 (OpenCL eq. 1)."""
    c = candidate(1, 28, 2.5e6)
    expected = 15360 / 28 * (100e-6 + 2.5e6 / 250e6)
    assert eq1_seconds(c, T, 100.0) == pytest.approx(expected, rel=1e-12)
    assert eq1_seconds(c, T, 100.0) < c.launches * (100e-6 + 2.5e6 / 250e6)


def test_ranking_drops_what_does_not_fit_and_weighs_t_ctrl() -> None:
    """Equal cycles per time step: a longer chain (fewer executions) wins once t_ctrl counts."""
    short, long_, over = candidate(4, 7, 7e6), candidate(1, 28, 28e6), candidate(1, 56, 1e6, fits=False)
    result = type("R", (), {"top": (short, long_, over)})()
    assert paper_ranking(result, T, 0.0) == (short, long_)  # a tie: explore's order
    assert paper_ranking(result, T, 250.0) == (long_, short)


@pytest.mark.parametrize(("name", "board"), sorted(PAPER))
def test_the_papers_jacobi_and_laplace_optima(name: str, board: str) -> None:
    """Table 4's nine Laplace and Jacobi cells: the §4.3 pick is the paper's except where the 395-D8's
    ALM cost of a PE is the DE5's (5- and 9-point Jacobi: rows.csv notes)."""
    found = opencl_optimum(unpinned(name), board, T)
    assert found is not None and found.fits
    if board == "395-d8" and name != "laplace2d.soda":
        assert (found.lanes, found.iterate) != PAPER[(name, board)]
    else:
        assert (found.lanes, found.iterate) == PAPER[(name, board)]


def test_fdtd_on_the_395_ab_is_the_papers_now_that_fields_share_a_register() -> None:
    """Table 4: (2, 34) on the 395-AB; with one shift register per (stencil, field read) it was (2, 33)."""
    found = opencl_optimum(unpinned("fdtd2d_iterate.json", (16384, 1024)), "395-ab", T)
    assert found is not None and (found.lanes, found.iterate) == (2, 34)


@pytest.mark.parametrize(
    ("shape", "d", "mhz"),
    [((8192, 128, 128), 9, 230.3), ((4096, 128, 256), 9, 196.2), ((2024, 256, 256), 6, 180.1)],
)
def test_395_d8_clock_falls_with_memory_use_as_table_7(shape: tuple[int, ...], d: int, mhz: float) -> None:
    """The 395-D8's clock model runs through Table 7's 128 × 128 and 256 × 256 designs (fitted) and puts
    the 256 × 128 one (held out) within 3% of its 196.2 MHz; P_cell barely changes the memory it uses."""
    import stencilmap as sm

    program = unpinned("jacobi3d.soda", shape)
    clocks = {
        sm.estimate(program, "395-d8", "pcm", unroll=p, iterate=d, iterations=T).clock_mhz for p in (1, 8)
    }
    assert max(clocks) - min(clocks) < 0.1
    assert max(clocks) == pytest.approx(mhz, rel=0.03)
