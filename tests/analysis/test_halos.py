"""Halos: own reach, accumulation along every DAG path, over iterate copies."""

from __future__ import annotations

import pytest

from stencilmap.analysis.halos import Halo, accumulated_halos, program_halo, stencil_halo
from stencilmap.program import load_program
from stencilmap.program.expr import Binary, Ref

from .helpers import CORPUS, jacobi, program, refs_sum, stencil


def test_chain_of_stages_sums_halos() -> None:
    # SODA §2.2: the halo of a complex kernel is the sum over its stages
    p = program((9, 9), ["a"], [jacobi("b", "a"), jacobi("c", "b"), jacobi("d", "c")])
    acc = accumulated_halos(p)
    assert acc["a"] == Halo((0, 0), (0, 0))
    assert acc["b"] == Halo((1, 1), (1, 1))
    assert acc["d"] == Halo((3, 3), (3, 3))
    assert program_halo(p).size == (6, 6)


def test_diamond_takes_the_max_over_paths_per_side() -> None:
    # b reaches +2 along axis 1, c reaches -3 along axis 0; d reads b at +1 and c at 0
    b = stencil("b", refs_sum("a", [(0, 0), (0, 2)]))
    c = stencil("c", refs_sum("a", [(-3, 0), (0, 0)]))
    d = stencil("d", Binary("+", Ref("b", (0, 1)), Ref("c", (0, 0))))
    p = program((9, 9), ["a"], [b, c, d])
    assert stencil_halo(p, d) == Halo((0, 0), (0, 1))
    assert accumulated_halos(p)["d"] == Halo((3, 0), (0, 3))


def test_iterate_repeats_the_halo_q_times() -> None:
    p = program((9, 9), ["a"], [jacobi("b", "a")], iterate=3)
    acc = accumulated_halos(p)
    assert acc["b@1"] == Halo((1, 1), (1, 1))
    assert acc["b@3"] == Halo((3, 3), (3, 3))
    assert program_halo(p) == Halo((3, 3), (3, 3))


def test_soda_jacobi2d_halo() -> None:
    path = CORPUS / "soda" / "jacobi2d.soda"
    if not path.is_file():
        pytest.skip("../shared/corpus absent")
    p = load_program(path)
    assert p.iterate == 2
    assert program_halo(p) == Halo((2, 2), (2, 2))


@pytest.mark.parametrize("shape", [(2, 1, 2), (5, 4, 6)])
def test_defined_halo_of_reads_that_cancel_along_a_chain(shape: tuple[int, int, int]) -> None:
    """``border: preserve`` (seed 31, case 55 of ``benchmarks/difffuzz.py``): s4 = s3(−1, 0, −1) is defined
    from 1 up, s5 = s4(1, 0, 1) then from 0 to n − 1; adding the two halos gave [1, n − 1), so the simulators
    (and the generated code's kept ring) kept the input at s5's first row and column where the reference
    computes s5. The halo is the reference's defined box."""
    import numpy as np

    from stencilmap.analysis.halos import defined_halo
    from stencilmap.backends.reference import run_reference
    from stencilmap.program.data import bind_shape, make_inputs
    from stencilmap.program.soda import parse_soda

    text = (
        "kernel: k\ninput double: in0(2, 1, *)\nlocal double:\n  s3(0, 0, 0) = in0(0, 0, 0) * 2.0\n"
        "local double:\n  s4(0, 0, 0) = s3(-1, 0, -1)\noutput double:\n  t = in0(0, 0, 0)\n"
        "  s5(0, 0, 0) = s4(1, 0, 1)\niterate: 1\nfeedback: s5 -> in0\nborder: preserve\ncluster: none\n"
    )
    p = bind_shape(parse_soda(text), {}, shape)
    halo = defined_halo(p, "s5")
    assert halo == Halo((0, 0, 0), (1, 0, 1))  # was low (1, 0, 1): the −1 and +1 cancel
    ignore = bind_shape(parse_soda(text.replace("border: preserve", "border: ignore")), {}, shape)
    mask = run_reference(ignore, make_inputs(ignore, {}, 0)).defined["s5"]
    box = np.zeros(shape, bool)
    box[tuple(slice(lo, n - hi) for lo, hi, n in zip(halo.low, halo.high, shape, strict=True))] = True
    assert np.array_equal(mask, box)
