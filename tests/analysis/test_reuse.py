"""SODA reuse buffers: the paper's worked example (§3.2, Figure 2) and a brute-force enumeration."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stencilmap.analysis.reuse import reuse_buffer, stencil_reuse_buffers
from stencilmap.analysis.windows import reuse_distance

from .helpers import jacobi, program


def test_soda_figure_2_five_point_jacobi_k3() -> None:
    m = 9
    buf = reuse_buffer([-m, -1, 0, 1, m], 3)
    # SODA §3.2: {a_{u,3}} has g_3 = 11 elements
    assert buf.needed == (-m, -m + 1, -m + 2, -1, 0, 1, 2, 3, m, m + 1, m + 2)
    chains = [c.offsets for c in buf.chains]
    assert chains == [(-m, 0, 3, m), (-m + 1, 1, m + 1), (-m + 2, -1, 2, m + 2)]
    # chain 0: FIFO [-M, 0] of M/3, FF [0, 3], FIFO [3, M] of M/3 - 1
    assert buf.chains[0].fifo_depths == (m // 3, m // 3 - 1) and buf.chains[0].registers == 1
    # chain 1: two FIFOs of M/3
    assert buf.chains[1].fifo_depths == (m // 3, m // 3) and buf.chains[1].registers == 0
    # chain 2: FIFO [-M+2, -1] of M/3 - 1, FF [-1, 2], FIFO [2, M+2] of M/3
    assert buf.chains[2].fifo_depths == (m // 3 - 1, m // 3) and buf.chains[2].registers == 1
    assert buf.fifo_depths == (3, 2, 3, 3, 2, 3)
    assert buf.size == 2 * m + 3 == reuse_distance((-m, m)) + 3 - 1


def test_stencil_reuse_buffers_linearize_the_program() -> None:
    p = program((5, 9), ["a"], [jacobi("b", "a")])
    bufs = stencil_reuse_buffers(p, p.stencils[0], (5, 9), 3)
    assert [c.offsets for c in bufs["a"].chains] == [(-9, 0, 3, 9), (-8, 1, 10), (-7, -1, 2, 11)]


def test_k1_is_a_line_buffer_of_size_dr() -> None:
    buf = reuse_buffer([-9, -1, 0, 1, 9], 1)
    assert buf.size == 19 and buf.fifo_depths == (8, 8) and buf.registers == 2


def test_single_offset_and_errors() -> None:
    assert reuse_buffer([4], 5).size == 5
    with pytest.raises(ValueError):
        reuse_buffer([0], 0)
    with pytest.raises(ValueError):
        reuse_buffer([], 2)


@given(st.sets(st.integers(-60, 60), min_size=1, max_size=12), st.integers(1, 16))
def test_chains_match_brute_force(offsets: set[int], k: int) -> None:
    buf = reuse_buffer(sorted(offsets), k)
    # brute force: every offset the k PEs need this cycle, grouped by residue mod k
    needed = {a + j for a in offsets for j in range(k)}
    by_residue = {r: sorted(x for x in needed if x % k == r) for r in range(k)}
    assert [list(c.offsets) for c in buf.chains] == [by_residue[r] for r in range(k)]
    assert all(c.offsets for c in buf.chains)  # every residue has a chain
    assert buf.size == max(needed) - min(needed) + 1 == reuse_distance(tuple(offsets)) + k - 1
    for c in buf.chains:
        for s in c.segments:
            assert (s.hi - s.lo) % k == 0 and s.depth == (s.hi - s.lo) // k >= 1
        assert c.size == (c.offsets[-1] - c.offsets[0]) // k + 1
    assert sum(buf.fifo_depths) + buf.registers + k == buf.size
