"""``explore`` on the OpenCL paper's four applications and three boards (Table 4), as facts that hold
whatever the exact numbers: what binds, that the paper's choices fit our resource model, that the search
is never beaten by them under its own model. ``benchmarks/opencl_table4.py`` prints the cells."""

from __future__ import annotations

from dataclasses import replace

import pytest

import stencilmap as sm
from stencilmap.explore.report import Candidate
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from tests.conftest import EXAMPLES

T = 15_360  # Table 2's time steps
GRID = (32768, 4096)  # Table 1: 4,096 × 32,768, N (the row) the fast axis
#: Table 4: the paper's (P_cell, d) for the three Jacobi-like applications.
PAPER = {
    ("laplace2d.soda", "de5"): (8, 21),
    ("laplace2d.soda", "395-d8"): (4, 44),
    ("laplace2d.soda", "395-ab"): (8, 32),
    ("jacobi2d_5pt.soda", "de5"): (2, 25),
    ("jacobi2d_5pt.soda", "395-d8"): (4, 27),
    ("jacobi2d_5pt.soda", "395-ab"): (4, 17),
    ("jacobi2d_9pt.soda", "de5"): (1, 28),
    ("jacobi2d_9pt.soda", "395-d8"): (4, 14),
    ("jacobi2d_9pt.soda", "395-ab"): (2, 19),
}


def unpinned(name: str, shape: tuple[int, ...] = GRID) -> Program:
    """The example on the paper's grid with global memory interleaved (the paper's kernels pin no bank)."""
    p = bind_shape(load_program(EXAMPLES / name), {}, shape)
    inputs = tuple(replace(i, banks=()) for i in p.inputs)
    return replace(p, inputs=inputs, stencils=tuple(replace(s, banks=()) for s in p.stencils))


def best(program: Program, board: str) -> Candidate:
    found = sm.explore(program, board, archs=("pcm",), iterations=T, top=1, simulate=False).best
    assert found is not None
    return found


@pytest.mark.parametrize("name", ["jacobi2d_5pt.soda", "jacobi2d_9pt.soda"])
def test_de5_jacobi_picks_are_dsp_bound(name: str) -> None:
    """Table 4: both Jacobis are DSP-constrained on the DE5 (256 DSPs): our pick too, and one more PCM
    at the same P_cell would not fit."""
    program = unpinned(name)
    b = best(program, "de5")
    assert b.binding == "dsp" and b.fits
    pick = sm.estimate(program, "de5", "pcm", unroll=b.lanes, iterate=b.iterate, iterations=T)
    assert pick.resources is not None and pick.resources.used["dsp"] <= 256
    more = sm.estimate(program, "de5", "pcm", unroll=b.lanes, iterate=b.iterate + 1, iterations=T)
    assert more.resources is not None and more.resources.used["dsp"] > 256


@pytest.mark.parametrize("board", ["de5", "395-d8", "395-ab"])
def test_laplace_picks_are_alm_bound(board: str) -> None:
    """Table 4: Laplace (no DSP: 0.25 × is an exponent shift) is ALM-constrained on every board."""
    assert best(unpinned("laplace2d.soda"), board).binding == "alm"


@pytest.mark.parametrize(("name", "board"), sorted(PAPER))
def test_papers_choice_fits_and_never_beats_the_search(name: str, board: str) -> None:
    program = unpinned(name)
    p, d = PAPER[(name, board)]
    paper = sm.estimate(program, board, "pcm", unroll=p, iterate=d, iterations=T)
    assert paper.resources is not None and paper.resources.fits
    assert best(program, board).predicted_seconds <= paper.predicted_seconds * (1 + 1e-9)


def test_fdtd_iterates_by_name_in_the_search() -> None:
    """2-D FDTD chains PCMs now that its outputs feed its inputs by name (``feedback``)."""
    b = best(unpinned("fdtd2d_iterate.json", (16384, 1024)), "de5")
    assert b.iterate > 1 and b.fits
