"""SODA's shared reuse buffers: the schedule is optimal (against brute force), the buffers hold the union."""

from __future__ import annotations

from itertools import pairwise, product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stencilmap.analysis.sharing import Read, asap, schedule, shared_buffers, solve_count
from stencilmap.analysis.storage import per_reader_storage, shared_storage, soda_method_storage
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.design.common import live_graph
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import CORPUS_SODA


def storage(reads: tuple[Read, ...], compute: dict[str, int], k: int, s: dict[str, int]) -> int:
    """Σ_u max_v (k·(s_v − t_u) − a_min,uv): the objective, independently of the solver."""
    per: dict[str, int] = {}
    for r in reads:
        lag = s[r.consumer] - s[r.producer] - compute[r.producer]
        per[r.producer] = max(per.get(r.producer, -(10**9)), k * lag - min(r.offsets))
    return sum(per.values())


def feasible(reads: tuple[Read, ...], compute: dict[str, int], s: dict[str, int], latency: int) -> bool:
    deps = all(s[r.consumer] >= s[r.producer] + compute[r.producer] + r.reach for r in reads)
    return deps and all(s[v] >= 0 and s[v] + compute[v] <= latency for v in s)


@st.composite
def dags(draw: st.DrawFn) -> tuple[tuple[Read, ...], dict[str, int], int]:
    """Two inputs and three stencils; each stencil reads 1–3 earlier nodes at small offsets."""
    nodes = ["a", "b", "s0", "s1", "s2"]
    compute = {"a": 0, "b": 0} | {n: draw(st.integers(0, 3)) for n in nodes[2:]}
    reads = []
    for i, v in enumerate(nodes[2:], start=2):
        for u in draw(st.sets(st.sampled_from(nodes[:i]), min_size=1, max_size=3)):
            offsets = tuple(sorted(draw(st.sets(st.integers(-4, 4), min_size=1, max_size=3))))
            reads.append(Read(u, v, u, offsets, draw(st.integers(0, 2))))
    return tuple(reads), compute, draw(st.integers(1, 3))


@settings(max_examples=40, deadline=None)
@given(dags())
def test_schedule_is_optimal(case: tuple[tuple[Read, ...], dict[str, int], int]) -> None:
    reads, compute, k = case
    s = schedule(reads, compute, k)
    early = asap(reads, compute)
    latency = max(early[v] + compute[v] for v in early)
    assert feasible(reads, compute, s, latency)
    names = sorted(early)
    best = min(
        storage(reads, compute, k, dict(zip(names, combo, strict=True)))
        for combo in product(*(range(latency - compute[v] + 1) for v in names))
        if feasible(reads, compute, dict(zip(names, combo, strict=True)), latency)
    )
    assert storage(reads, compute, k, s) == best


def test_one_sharing_problem_is_solved_once() -> None:
    """Explore asks for the same schedule per design point: the second ask is answered without a solve,
    with the same starts (a fresh dict: the caller may change it); another k is another problem."""
    reads = (
        Read("in_once", "mid_once", "in_once", (-3, 0, 2), 1),
        Read("mid_once", "out_once", "mid_once", (-1, 1), 0),
        Read("in_once", "out_once", "in_once", (4,), 2),
    )
    compute = {"in_once": 0, "mid_once": 2, "out_once": 1}
    first = schedule(reads, compute, 2)
    solved = solve_count()
    again = schedule(reads, dict(reversed(compute.items())), 2)
    assert again == first and list(again) == list(first) and again is not first
    assert solve_count() == solved
    again["out_once"] = -1
    assert schedule(reads, compute, 2) == first
    schedule(reads, compute, 3)
    assert solve_count() == solved + 2  # least storage, then earliest


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=4), st.integers(1, 3), st.integers(-9, 9))
def test_a_chain_is_scheduled_as_soon_as_possible_without_a_solve(lam: list[int], k: int, low: int) -> None:
    """Every node reads one producer (iterated stencils, heat3d): ASAP gives every read its least lag, so it
    is the optimum with no solve — checked against every schedule, as ``test_schedule_is_optimal``."""
    nodes = [f"c{i}" for i in range(len(lam))]
    compute = dict(zip(nodes, lam, strict=True)) | {nodes[0]: 0}
    reads = tuple(Read(u, v, u, (low - i, low + 2), i % 3) for i, (u, v) in enumerate(pairwise(nodes)))
    solved = solve_count()
    s = schedule(reads, compute, k)
    assert solve_count() == solved and s == asap(reads, compute)
    latency = max(s[v] + compute[v] for v in s)
    best = min(
        storage(reads, compute, k, dict(zip(nodes, combo, strict=True)))
        for combo in product(*(range(latency - compute[v] + 1) for v in nodes))
        if feasible(reads, compute, dict(zip(nodes, combo, strict=True)), latency)
    )
    assert storage(reads, compute, k, s) == best


def test_a_late_reader_reads_deeper_down_the_chain() -> None:
    """u read by an early stencil and, a row later, by one waiting for the first: one buffer, positions
    of the late reader shifted by its lag."""
    text = (
        "kernel: s\ninput float: u(8, *)\nlocal float: t(0, 0) = u(0, 1) + u(0, -1)\n"
        "output float: o(0, 0) = t(0, 1) * u(0, 0)\nunroll factor: 1\n"
    )
    from stencilmap.program.soda import parse_soda

    p = bind_shape(parse_soda(text), {}, (6, 8))
    live = live_graph(p)
    timing = pipeline_timing(p, (6, 8), 1, graph=live.graph)
    buf = shared_buffers(p, live.graph, timing, (6, 8))["u"]
    lags = {r.consumer: r.lag for r in buf.readers}
    assert lags == {"t": 0, "o": timing.start["o"] - timing.start["t"]}
    assert set(buf.positions) == {-8, 8, -lags["o"]} and lags["o"] > 8  # o waits for t(0, 1): a row on
    assert buf.size == max(buf.positions) - min(buf.positions) + 1  # D_r + k − 1 over the union (k = 1)


def test_corpus_storage() -> None:
    """On every corpus kernel: never more than one buffer per reader; the SODA method's buffers (latency
    free) are never larger than ours, and ours hold exactly them plus the latency FIFOs."""
    if not CORPUS_SODA:
        pytest.skip("../shared/corpus absent")
    for path in CORPUS_SODA:
        p = bind_shape(load_program(path), {}, None)
        shape = tuple(int(n or 0) for n in p.shape)
        graph = live_graph(p).graph
        for k in (1, 2, 4):
            before, now = per_reader_storage(p, graph, shape, k), shared_storage(p, graph, shape, k)
            soda = soda_method_storage(p, graph, shape, k)
            assert now.total <= before.total and now.delay <= before.delay
            assert soda.reuse <= now.reuse and now.total == soda.total
