"""The StencilFlow builder: one unit per stencil, internal buffers, delay buffers equal to the analysis."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.analysis.buffers import internal_buffers
from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.analysis.windows import access_sets
from stencilmap.design.common import LINK_DEPTH, live_graph, port_name, with_iterate
from stencilmap.design.delay_check import check_delay_lines
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig, build
from stencilmap.program.ir import Program
from tests.conftest import CORPUS, EXAMPLES
from tests.strategies import programs

from .helpers import PROGRAM_FILES, bound, feeder, ident, modules, reads, source


def analysis_delays(program: Program, w: int) -> dict[str, int]:
    shape = tuple(int(n or 0) for n in program.shape)
    return delay_buffers(pipeline_timing(program, shape, w))


def check_delays(program: Program, design: Design, w: int) -> None:
    """No path short of StencilFlow §IV-B's requirement (``check_delay_lines``: at the producer, the
    analysis delay; after a shared line, what its first consumer takes before this one needs it) and no
    line deeper than one of them needs (slack 0). Every edge's lines sum to at least its analysis delay;
    exactly that, in one line or none, unless its producer is a replayed input (lines chained copy to
    copy: each continues the one before)."""
    shape = tuple(int(n or 0) for n in program.shape)
    timing = pipeline_timing(program, shape, w)
    verdict = check_delay_lines(design, timing)
    assert verdict.shortfalls == ()
    assert [d for d, spare in verdict.slack if spare] == []
    expected = delay_buffers(timing)
    fed = {i for i, _ in program.feeds()}
    replayed = {i.name for i in program.inputs if program.iterate > 1 and i.name not in fed}
    for e in live_graph(program).graph.edges:
        held, lines, at = 0, 0, f"{e.consumer}.{e.field}.buf"
        while True:
            (into,) = design.inputs_of(at)
            src = design.module(into.src)
            if src.kind not in ("delay", "broadcast"):
                break
            if src.kind == "delay":
                held, lines = held + int(str(src.param("depth"))), lines + 1
            at = src.name
        if e.producer in replayed:
            assert held >= expected.get(e.key, 0), e.key
        else:
            assert (held, lines) == ((expected[e.key], 1) if expected.get(e.key, 0) else (0, 0)), e.key
    for m in modules(design, "delay"):  # each named for the edge it first serves
        assert str(m.param("edge")).endswith("->" + m.name.removesuffix(f".{m.param('field')}.delay"))


def check_units(program: Program, design: Design, w: int) -> None:
    """Every PE port is fed by its field's internal buffer, of the analysis size, from the producer."""
    shape = tuple(int(n or 0) for n in program.shape)
    for pe in modules(design, "pe"):
        st = program.stencil(str(pe.param("stencil")))
        assert st is not None and pe.param("width") == w
        sizes = {b.field: b.size for b in internal_buffers(program, st, shape, w)}
        for f, offsets in access_sets(st).items():
            for a in offsets:
                c = feeder(design, pe.name, port_name(f, a))
                buf = design.module(c.src)
                assert buf.kind == "internal_buffer" and c.src_port == port_name(f, a) and c.width == w
                assert buf.param("size") == sizes[f] and buf.param("field") == f
            into = feeder(design, f"{pe.name.removesuffix('.pe')}.{f}.buf")
            if design.module(into.src).kind != "delay":
                assert into.depth == LINK_DEPTH  # a delay of 0: a plain link, no delay module


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=ident)
@pytest.mark.parametrize("w", [1, 4])
def test_structure_on_every_program(path: Path, w: int) -> None:
    p = bound(path)
    d = build("stencilflow", p, BuildConfig(vector=w))
    q = p.iterate
    assert d.count("pe") == len(p.stencils) * q
    assert d.count("internal_buffer") == reads(p) * q
    assert d.count("reader") == len(p.inputs) and d.count("writer") == len(p.outputs)
    assert dict(d.parameters) == {"W": w, "delay_buffers": "computed", "shape": p.shape}
    check_delays(p, d, w)
    check_units(p, d, w)


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=ident)
def test_min_mode_keeps_the_delay_modules_at_depth_1(path: Path) -> None:
    p = bound(path)
    computed = build("stencilflow", p, BuildConfig())
    small = build("stencilflow", p, BuildConfig(delay_buffers="min"))
    assert [m.name for m in modules(small, "delay")] == [m.name for m in modules(computed, "delay")]
    assert all(m.param("depth") == 1 for m in modules(small, "delay"))
    assert dict(small.parameters)["delay_buffers"] == "min"


def test_horidiff_delays() -> None:
    path = CORPUS / "stencilflow" / "horidiff_min.json"
    if not path.is_file():
        pytest.skip("corpus absent")
    d = build("stencilflow", bound(path), BuildConfig())
    depths = {m.param("edge"): m.param("depth") for m in modules(d, "delay")}
    # analysis.delays: k2 reads k0 at +J·K and k1 at 0, so k1 -> k2 must hold a J·K slice
    assert depths["k1->k2"] == analysis_delays(bound(path), 1)["k1->k2"] >= 10 * 10


def test_lower_dimensional_inputs_are_read_once_and_replayed() -> None:
    path = CORPUS / "stencilflow" / "various_dim_input.json"
    if not path.is_file():
        pytest.skip("corpus absent")
    d = build("stencilflow", bound(path), BuildConfig())  # shape (8, 16, 32)
    readers = {str(m.param("field")): m for m in modules(d, "reader")}
    assert {k: m.param("points") for k, m in readers.items()} == {
        "in0d": 1,
        "in1d": 32,
        "in2d": 8 * 32,
        "in3d": 8 * 16 * 32,
    }
    assert {k: m.param("replay") for k, m in readers.items()} == {
        "in0d": (0, 1, 2),
        "in1d": (0, 1),
        "in2d": (1,),
        "in3d": None,
    }


def test_broadcasts_for_shared_inputs_and_outputs() -> None:
    d = build("stencilflow", bound(EXAMPLES / "fdtd2d.json"), BuildConfig())
    fanout = {m.name: m.param("fanout") for m in modules(d, "broadcast")}
    assert fanout == {"read.Ez.bcast": 3, "hx.pe.bcast": 2, "hy.pe.bcast": 2}
    assert source(d, "write.hx") == ("hx.pe", "out")
    assert source(d, "ez.hx.buf")[0] in ("hx.pe", "ez.hx.delay")


def test_iterate_chains_copies() -> None:
    d = build("stencilflow", bound(EXAMPLES / "jacobi2d.soda"), BuildConfig(iterate=2))
    assert [m.name for m in modules(d, "pe")] == ["w@1.pe", "w@2.pe"]
    assert source(d, "w@2.v.buf") == ("w@1.pe", "out")
    assert [m.param("stage") for m in modules(d, "pe")] == [1, 2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(1, 8), st.sampled_from(["computed", "min"]))
def test_random_programs(p: Program, w: int, mode: str) -> None:
    d = build("stencilflow", p, BuildConfig(vector=w, delay_buffers="min" if mode == "min" else "computed"))
    live = live_graph(p)
    assert d.count("pe") == len(live.stencils) and d.count("reader") == len(live.inputs)
    if mode == "computed":
        check_delays(p, d, w)
    else:
        assert all(m.param("depth") == 1 for m in modules(d, "delay"))
    check_units(p, d, w)


def test_replayed_inputs_chain_their_delay_lines() -> None:
    """FDTD iterated 8 times reads C1–C4 in every copy: each input's delay lines are chained copy to copy,
    so they hold its deepest edge's delay (linear in q), not the sum over copies (quadratic); the design
    still simulates bit-exact (tests/sim)."""
    p = bound(EXAMPLES / "fdtd2d_iterate.json")
    d = build("stencilflow", p, BuildConfig(iterate=8))
    chained = with_iterate(p, 8)
    delays = analysis_delays(chained, 1)
    for c in ("C1", "C2", "C3", "C4"):
        held = sum(int(str(m.param("depth"))) for m in modules(d, "delay") if m.param("field") == c)
        deepest = max(v for k, v in delays.items() if k.startswith(c + "->"))
        assert held == deepest
        assert sum(v for k, v in delays.items() if k.startswith(c + "->")) > 3 * deepest  # what it was
