"""Delay buffers: the closed form against a cycle-by-cycle streaming model, and the horidiff case."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.analysis.delays import absorbs, delay_buffers, published_delay_buffers, relay_delay
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.expr import Binary, Call, Expr, Ref
from stencilmap.program.ir import Input, Program
from tests.strategies import programs

from .helpers import CORPUS, program, stencil, total
from .streaming import simulate

ZERO = OperatorLatencies.uniform(0)


def _load(name: str) -> tuple[Program, tuple[int, ...]]:
    path = CORPUS / "stencilflow" / name
    if not path.is_file():
        pytest.skip("../shared/corpus absent")
    p = bind_shape(load_program(path), {})
    return p, tuple(int(n or 0) for n in p.shape)


def _check(p: Program, shape: tuple[int, ...], lanes: int, lat: OperatorLatencies) -> None:
    timing = pipeline_timing(p, shape, lanes, lat)
    first, depth = simulate(p, shape, lanes, lat)
    assert dict(timing.done) == first
    assert delay_buffers(timing) == depth
    # every stencil node has an incoming edge of depth 0
    for node, start in timing.start.items():
        into = [e for e in timing.edges if e.consumer == node]
        if into:
            assert min(delay_buffers(timing)[e.key] for e in into) == 0
            assert start == max(e.arrival for e in into)


def test_horidiff_min_needs_buffers_the_published_rule_misses() -> None:
    # k2 = k1[i,j,k] + k0[i+1,j,k] + k0[i,j,k];  k3 = k0[i,j,k] + k1[i+1,j+1,k+1] + k1[i,j,k]
    # k0 and k1 complete together, so k1's data must wait J·K = 100 for k2 and k0's 111 for k3.
    p, shape = _load("horidiff_min.json")
    lat = OperatorLatencies.default()
    got = delay_buffers(pipeline_timing(p, shape, 1, lat))
    assert got == {
        "inA->k0": 0,
        "inA->k1": 0,
        "k0->k2": 0,
        "k1->k2": 100,
        "k0->k3": 111,
        "k1->k3": 0,
        "k2->out": 11,  # k3 waits 111 for its reach, k2 only 100: same add latencies
        "k3->out": 0,
    }
    published = published_delay_buffers(p, shape, 1, lat)
    assert published["k1->k2"] == 0 and published["k0->k3"] == 0  # would deadlock
    _check(p, shape, 1, lat)


def test_horidiff_min_ext() -> None:
    p, shape = _load("horidiff_min_ext.json")
    lat = OperatorLatencies(add=7, unit=0)
    got = delay_buffers(pipeline_timing(p, shape, 1, lat))
    # k4 = k1 + k1[+111] completes at 111 + 7; k3 reads k4 at +111 (arrival 229) and k0 at 0
    assert got["k1->k2"] == 100 and got["k0->k3"] == 111 + 7 + 111
    _check(p, shape, 1, lat)


def test_chain_with_different_reach_and_latency() -> None:
    # b = a[+1 row] ; c = a + b: c waits for b (reach W=8 row + latency), a's channel holds the difference
    shape = (6, 8)
    b = stencil("b", Binary("*", Ref("a", (1, 0)), Ref("a", (1, 0))))
    c = stencil("c", Binary("+", Ref("a", (0, 0)), Ref("b", (0, 0))))
    p = program(shape, ["a"], [b, c])
    lat = OperatorLatencies(mul=5, add=3, unit=0)
    timing = pipeline_timing(p, shape, 1, lat)
    assert timing.done == {"a": 0, "b": 8 + 5, "c": 8 + 5 + 3}
    assert delay_buffers(timing) == {"a->b": 0, "a->c": 13, "b->c": 0}
    # with 4 lanes the reach of one row is 2 cycles and the buffer is counted in elements
    t4 = pipeline_timing(p, shape, 4, lat)
    assert t4.done["b"] == 2 + 5 and delay_buffers(t4)["a->c"] == 4 * 7
    _check(p, shape, 1, lat)
    _check(p, shape, 4, lat)


def test_tiny_grid_caps_the_buffer_at_the_stream() -> None:
    # the consumer starts after the producer has streamed everything: the channel holds the stream
    # minus the vector the window took, not the full latency difference
    shape = (4,)
    slow = stencil("slow", Call("sqrt", (Ref("a", (0,)),)))
    p = program(shape, ["a"], [slow, stencil("o", Binary("+", Ref("a", (0,)), Ref("slow", (0,))))])
    lat = OperatorLatencies(sqrt=50, add=1)
    assert delay_buffers(pipeline_timing(p, shape, 1, lat))["a->o"] == 3
    _check(p, shape, 1, lat)


# ------------------------------------------------------------------------------------ random pipelines


@st.composite
def pipelines(draw: st.DrawFn) -> tuple[Program, int, OperatorLatencies]:
    rank = draw(st.integers(1, 2))
    shape = (draw(st.integers(4, 40)),) if rank == 1 else (draw(st.integers(2, 5)), draw(st.integers(3, 8)))
    inputs = [Input("in0", "float32", tuple(range(rank)))]
    if draw(st.booleans()):
        axes = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), max_size=rank))))
        inputs.append(Input("in1", "float32", axes))
    fields = [(i.name, len(i.axes)) for i in inputs]
    stencils = []
    for s in range(draw(st.integers(1, 5))):
        chosen = draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique=True))
        terms: list[Expr] = []
        for name, r in chosen:
            for _ in range(draw(st.integers(1, 3))):
                terms.append(Ref(name, tuple(draw(st.integers(-3, 3)) for _ in range(r))))
        e = total(terms)
        op = draw(st.sampled_from(["none", "mul", "sqrt"]))
        if op == "mul":
            e = Binary("*", e, terms[0])
        elif op == "sqrt":
            e = Call("sqrt", (e,))
        stencils.append(stencil(f"s{s}", e))
        fields.append((f"s{s}", rank))
    iterate = draw(st.integers(1, 2)) if len(inputs) == 1 else 1
    p = program(shape, inputs, stencils, iterate=iterate)
    lat = OperatorLatencies(
        add=draw(st.integers(0, 9)), mul=draw(st.integers(0, 5)), sqrt=draw(st.integers(0, 30))
    )
    return p, draw(st.integers(1, 4)), lat


@settings(max_examples=150, deadline=None)
@given(pipelines())
def test_delay_buffers_match_streaming_model(case: tuple[Program, int, OperatorLatencies]) -> None:
    p, lanes, lat = case
    shape = tuple(int(n or 1) for n in p.shape)
    _check(p, shape, lanes, lat)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(1, 3))
def test_delay_buffers_match_streaming_model_on_shared_random_programs(p: Program, lanes: int) -> None:
    shape = tuple(int(n or 1) for n in p.shape)
    _check(p, shape, lanes, OperatorLatencies.default())


@settings(max_examples=60, deadline=None)
@given(pipelines())
def test_a_continued_line_is_the_uncapped_difference_capped_by_the_stream(
    case: tuple[Program, int, OperatorLatencies],
) -> None:
    """relay_delay between two edges of one producer: the difference of their delays where neither is
    capped, never more than the later edge's own delay, the stream's cap where the lag exceeds it."""
    p, lanes, lat = case
    timing = pipeline_timing(p, tuple(int(n or 1) for n in p.shape), lanes, lat)
    depth = delay_buffers(timing)
    for tap in timing.edges:
        for e in timing.edges:
            if e.producer != tap.producer or absorbs(timing, e) < absorbs(timing, tap):
                continue
            got = relay_delay(timing, tap, e)
            cap = lanes * (timing.vectors - 1 - e.reach_cycles)
            assert 0 <= got <= depth[e.key]
            lag = lanes * (absorbs(timing, e) - absorbs(timing, tap))
            assert got == min(lag, cap)
            if depth[e.key] < cap and depth[tap.key] < lanes * (timing.vectors - 1 - tap.reach_cycles):
                assert got == depth[e.key] - depth[tap.key]
