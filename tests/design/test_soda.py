"""The SODA builder: the paper's worked example, storage D_r + k − 1 per reuse buffer, lane wiring."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.analysis.windows import access_sets, linear_offsets, linearize, reuse_distance
from stencilmap.design.common import LINK_DEPTH, live_graph, port_name
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from tests.strategies import programs

from .helpers import JACOBI_M9, PROGRAM_FILES, bound, feeder, ident, modules, soda, source


def stored(design: Design, **where: object) -> int:
    """Elements the reuse buffer of ``where`` (stage, stencil, field) stores: taps + FIFO depths."""
    taps = modules(design, "forward", **where)
    return len(taps) + sum(int(str(m.param("depth"))) for m in modules(design, "fifo", **where))


def stream_shape(design: Design) -> tuple[int, ...]:
    value = dict(design.parameters)["stream_shape"]
    assert isinstance(value, tuple)
    return tuple(int(n) for n in value)


def check_lanes(program: Program, design: Design, k: int) -> None:
    """Every PE port reads the tap of its offset + lane; every chain is a delay line from its lane."""
    shape = stream_shape(design)
    for pe in modules(design, "pe"):
        st = program.stencil(str(pe.param("stencil")))
        assert st is not None
        j = pe.param("lane")
        assert isinstance(j, int)
        for f, offsets in access_sets(st).items():
            for a in offsets:
                tap = design.module(feeder(design, pe.name, port_name(f, a)).src)
                x = linearize(a, program.field_axes(f), shape) + j
                assert tap.kind == "forward" and tap.param("offset") == x and tap.param("chain") == x % k
                assert tap.param("field") == f and tap.param("stage") == pe.param("stage")
    for tap in modules(design, "forward"):
        x, r = tap.param("offset"), tap.param("chain")
        assert isinstance(x, int) and isinstance(r, int)
        up = feeder(design, tap.name)
        above = design.module(up.src)
        if above.kind == "fifo":  # the segment [x, hi] delays by (hi − x)/k = FIFO depth + this tap
            assert above.param("lo") == x
            hi, depth = above.param("hi"), above.param("depth")
            assert isinstance(hi, int) and isinstance(depth, int) and (hi - x) // k == depth + 1 > 1
            assert design.module(feeder(design, above.name).src).param("offset") == hi
        elif above.kind == "forward":  # an FF: distance exactly k
            assert up.src_port == "next" and above.param("offset") == x + k
        else:  # the chain's entry: lane r of the producer's stream
            assert up.depth >= LINK_DEPTH
            src, port = source(design, tap.name)
            lane = design.module(src).param("lane") if port == "out" else int(port.removeprefix("lane"))
            assert lane == r


def check_storage(program: Program, design: Design, k: int) -> None:
    """SODA §3.2: each (stage, stencil, field) reuse buffer stores exactly D_r + k − 1 elements."""
    shape = stream_shape(design)
    live = live_graph(program)
    buffers = 0
    for node in live.stencils:
        assert node.stencil is not None
        for f in access_sets(node.stencil):
            d_r = reuse_distance(linear_offsets(program, node.stencil, f, shape))
            where = dict(stage=node.copy, stencil=node.stencil.name, field=f)
            assert stored(design, **where) == d_r + k - 1
            buffers += 1
    assert (
        len({(m.param("stage"), m.param("stencil"), m.param("field")) for m in modules(design, "forward")})
        == buffers
    )


def test_paper_example_jacobi_m9_k3() -> None:
    m = 9
    p = soda(JACOBI_M9, (20, m))
    d = build("soda", p, BuildConfig())
    chains = [sorted(int(str(t.param("offset"))) for t in modules(d, "forward", chain=r)) for r in range(3)]
    # SODA §3.2: {−M, 0, 3, M}, {−M+1, 1, M+1}, {−M+2, −1, 2, M+2}
    assert chains == [[-m, 0, 3, m], [-m + 1, 1, m + 1], [-m + 2, -1, 2, m + 2]]
    assert stored(d, stage=1, stencil="b", field="a") == 2 * m + 3
    # chain 0: FIFO [−M, 0] of M/3 (2 + the tap), FF [0, 3], FIFO [3, M] of M/3 − 1 (1 + the tap)
    fifos = {(f.param("lo"), f.param("hi")): f.param("depth") for f in modules(d, "fifo", chain=0)}
    assert fifos == {(-m, 0): m // 3 - 1, (3, m): m // 3 - 2}
    assert feeder(d, "stage1.b.a.c0.tap[0]").src == "stage1.b.a.c0.tap[3]"
    # PE lane 2 reads a(0, 1) (linear +1) from chain 0's tap 3, a(-1, 0) (−M) from chain 2's tap −M + 2
    assert feeder(d, "stage1.b.pe2", "a@(0,1)").src == "stage1.b.a.c0.tap[3]"
    assert feeder(d, "stage1.b.pe2", "a@(-1,0)").src == "stage1.b.a.c2.tap[-7]"
    assert source(d, "stage1.b.a.c1.tap[10]") == ("read.a", "lane1")
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
    assert source(d, "stage2.w.v.c1.tap[65]") == ("stage1.w.pe1", "out")
    assert source(d, "write.w", "lane0") == ("stage3.w.pe0", "out")
    assert [m.name for m in modules(d, "reader")] == ["read.v"]


def test_shared_streams_are_broadcast_per_lane() -> None:
    p = soda(
        "kernel: s\ninput float: a(8, *)\nlocal float: t(0, 0) = a(0, 0) + a(1, 0)\n"
        "output float: b(0, 0) = t(0, 1) + a(0, -1)\nunroll factor: 2\n",
        (6, 8),
    )
    d = build("soda", p, BuildConfig())
    hubs = modules(d, "broadcast")
    assert [h.name for h in hubs] == ["read.a.lane0.bcast", "read.a.lane1.bcast"]
    assert all(h.param("fanout") == 2 for h in hubs)
    check_storage(p, d, 2)
    check_lanes(p, d, 2)


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
