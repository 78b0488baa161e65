"""The SODA builder: the paper's worked example, storage D_r + k − 1 per reuse buffer, lane wiring."""

from __future__ import annotations

from itertools import pairwise
from math import prod
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.analysis.windows import access_sets, linear_offsets, linearize, reuse_distance
from stencilmap.design.common import LINK_DEPTH, live_graph, port_name
from stencilmap.design.ir import Design, Module
from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from tests.strategies import programs

from .helpers import JACOBI_M9, PROGRAM_FILES, bound, feeder, ident, modules, soda, source


def stored(design: Design, **where: object) -> int:
    """Elements the reuse buffer of ``where`` (producer stage, field) stores: taps + FIFO depths."""
    taps = modules(design, "forward", **where)
    return len(taps) + sum(int(str(m.param("depth"))) for m in modules(design, "fifo", **where))


def stream_shape(design: Design) -> tuple[int, ...]:
    value = dict(design.parameters)["stream_shape"]
    assert isinstance(value, tuple)
    return tuple(int(n) for n in value)


def integer(m: Module, key: str) -> int:
    value = m.param(key)
    assert isinstance(value, int)
    return value


def check_lanes(program: Program, design: Design, k: int) -> None:
    """Every PE port reads the tap of its offset + lane, all of one reader's taps at one lag (z = x − lag·k);
    every chain is a delay line from its lane, segments sized by the positions of their taps."""
    shape = stream_shape(design)
    for pe in modules(design, "pe"):
        st = program.stencil(str(pe.param("stencil")))
        assert st is not None
        j = integer(pe, "lane")
        lags: dict[str, set[int]] = {}
        for f, offsets in access_sets(st).items():
            for a in offsets:
                tap = design.module(feeder(design, pe.name, port_name(f, a)).src)
                x = linearize(a, program.field_axes(f), shape) + j
                assert tap.kind == "forward" and tap.param("offset") == x
                assert integer(tap, "position") == x - integer(tap, "lag") * k
                assert tap.param("chain") == integer(tap, "position") % k
                lags.setdefault(f"{tap.param('stage')}.{tap.param('field')}", set()).add(integer(tap, "lag"))
        assert all(len(v) == 1 for v in lags.values())  # one frame per reader and producer
    vectors = -(-prod(shape) // k)  # a chain carries V elements of its lane: segments hold at most V
    for tap in modules(design, "forward"):
        z, r = integer(tap, "position"), integer(tap, "chain")
        up = feeder(design, tap.name)
        above = design.module(up.src)
        if above.kind == "fifo":  # the segment [z, hi] delays by (hi − z)/k = FIFO depth + this tap
            assert above.param("lo") == z
            hi, depth = integer(above, "hi"), integer(above, "depth")
            assert min((hi - z) // k, vectors) == depth + 1 > 1
            assert design.module(feeder(design, above.name).src).param("position") == hi
        elif above.kind == "forward":  # an FF (distance k), or a second tap at the same position
            gap = integer(above, "position") - z
            assert up.src_port == "next" and (gap in (k, 0) or (gap > k and vectors == 1))
        else:  # the chain's entry: lane r of the producer's stream
            assert up.depth >= LINK_DEPTH
            src, port = source(design, tap.name)
            lane = design.module(src).param("lane") if port == "out" else int(port.removeprefix("lane"))
            assert lane == r


def check_storage(program: Program, design: Design, k: int) -> None:
    """SODA §3.2–3.3: one reuse buffer per producer, storing D_r + k − 1 over the union of its readers'
    shifted accesses (tap positions), one more element per second tap at a position."""
    live = live_graph(program)
    producers = {(n.copy, n.field) for n in live.graph.nodes if live.consumers(n.name)}
    buffers = {(m.param("stage"), m.param("field")) for m in modules(design, "forward")}
    assert buffers == producers
    vectors = -(-prod(stream_shape(design)) // k)  # a chain carries V elements: no segment holds more
    for stage, f in producers:
        expected = 0
        for r in range(k):
            positions = sorted(
                integer(t, "position") for t in modules(design, "forward", stage=stage, field=f, chain=r)
            )
            gaps = [min((hi - lo) // k, vectors) for lo, hi in pairwise(positions)]
            expected += len(positions) + sum(max(0, g - 1) for g in gaps)
        stored_now = stored(design, stage=stage, field=f)
        assert stored_now == expected
        taps = [integer(t, "position") for t in modules(design, "forward", stage=stage, field=f)]
        twins = len(taps) - len(set(taps))  # D_r + k − 1 over the union, less on tiny grids
        assert stored_now <= max(taps) - min(taps) + 1 + twins


def old_storage(program: Program, k: int) -> int:
    """Reuse + delay elements of one buffer per (reader, field), as the builder made them before."""
    shape = tuple(int(n or 0) for n in program.shape)
    live = live_graph(program)
    delays = delay_buffers(pipeline_timing(program, shape, k))
    total = 0
    for e in live.graph.edges:
        st = live.graph.node(e.consumer).stencil
        assert st is not None
        total += reuse_distance(linear_offsets(program, st, e.field, shape)) + k - 1 + delays.get(e.key, 0)
    return total


def new_storage(design: Design, k: int) -> int:
    """Reuse elements (taps, FIFOs) plus the delay the channels into the chains add to a plain link."""
    skew = 1 if k > 1 else 0
    entries = [c for c in design.channels if design.module(c.dst).kind == "forward" and c.dst_port == ""]
    delay = sum(c.depth - LINK_DEPTH - skew for c in entries if design.module(c.src).kind != "forward"
                and design.module(c.src).kind != "fifo")  # fmt: skip
    return stored(design) + delay


def test_paper_example_jacobi_m9_k3() -> None:
    m = 9
    p = soda(JACOBI_M9, (20, m))
    d = build("soda", p, BuildConfig())
    chains = [sorted(int(str(t.param("offset"))) for t in modules(d, "forward", chain=r)) for r in range(3)]
    # SODA §3.2: {−M, 0, 3, M}, {−M+1, 1, M+1}, {−M+2, −1, 2, M+2}
    assert chains == [[-m, 0, 3, m], [-m + 1, 1, m + 1], [-m + 2, -1, 2, m + 2]]
    assert stored(d, stage=0, field="a") == 2 * m + 3
    # chain 0: FIFO [−M, 0] of M/3 (2 + the tap), FF [0, 3], FIFO [3, M] of M/3 − 1 (1 + the tap)
    fifos = {(f.param("lo"), f.param("hi")): f.param("depth") for f in modules(d, "fifo", chain=0)}
    assert fifos == {(-m, 0): m // 3 - 1, (3, m): m // 3 - 2}
    assert feeder(d, "stage0.a.c0.tap[0]").src == "stage0.a.c0.tap[3]"
    # PE lane 2 reads a(0, 1) (linear +1) from chain 0's tap 3, a(-1, 0) (−M) from chain 2's tap −M + 2
    assert feeder(d, "stage1.b.pe2", "a@(0,1)").src == "stage0.a.c0.tap[3]"
    assert feeder(d, "stage1.b.pe2", "a@(-1,0)").src == "stage0.a.c2.tap[-7]"
    assert source(d, "stage0.a.c1.tap[10]") == ("read.a", "lane1")
    assert d.kinds() == {"fifo": 6, "forward": 11, "pe": 3, "reader": 1, "writer": 1}
    check_lanes(p, d, 3)


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=ident)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_structure_on_every_program(path: Path, k: int) -> None:
    p = bound(path)
    d = build("soda", p, BuildConfig(unroll=k))
    q = p.iterate
    assert d.count("pe") == k * len(p.stencils) * q
    assert d.count("reader") == len(p.inputs) and d.count("writer") == len(p.outputs)
    assert all(m.param("width") == k for m in d.modules if m.kind in ("reader", "writer"))
    assert dict(d.parameters)["k"] == k and dict(d.parameters)["q"] == q
    check_storage(p, d, k)
    check_lanes(p, d, k)


def test_stages_chain_output_lanes_into_the_next_stage() -> None:
    p = bound(Path(__file__).parents[2] / "examples" / "jacobi2d.soda")  # iterate 4
    d = build("soda", p, BuildConfig(unroll=2, iterate=3))
    assert d.count("pe") == 2 * 3 and dict(d.parameters)["q"] == 3
    assert source(d, "stage1.w.c1.tap[65]") == ("stage1.w.pe1", "out")
    assert source(d, "write.w", "lane0") == ("stage3.w.pe0", "out")
    assert [m.name for m in modules(d, "reader")] == ["read.v"]


def test_a_field_read_by_two_stencils_has_one_buffer() -> None:
    p = soda(
        "kernel: s\ninput float: a(8, *)\nlocal float: t(0, 0) = a(0, 0) + a(1, 0)\n"
        "output float: b(0, 0) = t(0, 1) + a(0, -1)\nunroll factor: 2\n",
        (6, 8),
    )
    d = build("soda", p, BuildConfig())
    assert modules(d, "broadcast") == []  # one chain per lane of a, not one per reader
    # t is read 8 elements behind a's reach by b: b's window of a sits one row deeper (lag 4 beats)
    readers = {t.param("readers") for t in modules(d, "forward", stage=0, field="a")}
    assert readers == {("t",), ("b",)}
    lags = {integer(t, "lag") for t in modules(d, "forward", stage=0, field="a", readers=("b",))}
    timing = pipeline_timing(p, (6, 8), 2)  # b starts when t(0, 1) arrives: t's start + λ_t + 1 beat
    assert lags == {timing.start["b"] - timing.start["t"]} and timing.start["b"] > timing.start["t"] + 4
    check_storage(p, d, 2)
    check_lanes(p, d, 2)


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=ident)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_one_buffer_per_producer_never_stores_more(path: Path, k: int) -> None:
    """Reuse + delay of the shared buffers ≤ one buffer per reader plus its delay line — where the grid
    is longer than the pipeline's skews (on a tinier one the per-reader delays were capped at the stream)."""
    p = bound(path)
    timing = pipeline_timing(p, tuple(int(n or 0) for n in p.shape), k)
    if any(timing.start[e.consumer] - e.arrival > timing.vectors - 1 - e.reach_cycles for e in timing.edges):
        pytest.skip("a grid shorter than the pipeline's skews")
    assert new_storage(build("soda", p, BuildConfig(unroll=k)), k) <= old_storage(p, k)


@pytest.mark.parametrize(("name", "factor"), [("sobel2d", 1.9), ("denoise3d", 2.0), ("denoise2d", 1.5)])
def test_fields_read_by_several_stencils_store_much_less(name: str, factor: float) -> None:
    (path,) = [f for f in PROGRAM_FILES if f.stem == name]
    p = bound(path)
    assert old_storage(p, 2) >= factor * new_storage(build("soda", p, BuildConfig(unroll=2)), 2)


def test_channels_into_a_chain_absorb_the_skew_between_inputs() -> None:
    p = bound(Path(__file__).parents[2] / "examples" / "dag_listing1.json")
    d = build("soda", p, BuildConfig(unroll=2))
    # some unit waits for a slower input: its other inputs' chain entries hold the difference
    assert max(c.depth for c in d.channels) > LINK_DEPTH


def test_errors() -> None:
    p = soda(JACOBI_M9, (20, 9))
    with pytest.raises(StencilmapError, match="unroll factor must be at least 1"):
        build("soda", p, BuildConfig(unroll=-1))
    two = soda(JACOBI_M9.replace("output float: b", "output double: b"), (20, 9))
    with pytest.raises(StencilmapError, match="cannot chain 2 iterations"):
        build("soda", two, BuildConfig(iterate=2))
    from stencilmap.program.soda import parse_soda

    with pytest.raises(StencilmapError, match="bind a shape"):
        build("soda", parse_soda(JACOBI_M9), BuildConfig())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(1, 4))
def test_random_programs(p: Program, k: int) -> None:
    d = build("soda", p, BuildConfig(unroll=k))
    live = live_graph(p)
    assert d.count("pe") == k * len(live.stencils)
    assert d.count("reader") == len(live.inputs) and d.count("writer") == len(p.outputs)
    check_storage(p, d, k)
    check_lanes(p, d, k)
