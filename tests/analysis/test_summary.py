"""analyze_program on the worked examples and on every corpus program."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from stencilmap.analysis import OperatorLatencies, analyze_program
from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from tests.strategies import programs

from .helpers import coefficient_stencil, corpus_files, jacobi, program

KEYS = {
    "reuse_buffers",
    "delay_buffers",
    "latency_cycles",
    "runtime_cycles",
    "operational_intensity",
    "ops",
    "total_buffer_elements",
}


def test_jacobi_k3_summary() -> None:
    shape = (20, 9)
    p = program(shape, ["a"], [jacobi("b", "a")])
    a = analyze_program(p, shape, unroll=3, vector=1, latencies=OperatorLatencies(add=7, mul=4))
    j = a.to_json()
    assert set(j) >= KEYS
    rb = j["reuse_buffers"]
    assert isinstance(rb, dict)
    assert rb["b"] == {
        "a": {
            "size": 21,
            "reuse_distance": 19,
            "chains": [[-9, 0, 3, 9], [-8, 1, 10], [-7, -1, 2, 11]],
            "fifo_depths": [3, 2, 3, 3, 2, 3],
            "registers": 2,
        }
    }
    assert j["delay_buffers"] == {"a->b": 0}
    assert j["latency_cycles"] == 3 + 32 + 3  # ⌈M / k⌉ cycles of reach, the expression, 3 handshake stages
    assert j["runtime_cycles"] == 38 + 60
    assert j["ops"] == {"add": 4, "mul": 1}
    assert j["total_buffer_elements"] == 21
    assert j["operational_intensity"] == 5 / 8


def test_intensity_figure() -> None:
    p = program((64, 64), ["a"], [coefficient_stencil("b", "a")])
    assert analyze_program(p).operational_intensity == 9 / 8


def test_runtime_dimension_needs_a_shape() -> None:
    p = program((8, 8), ["a"], [jacobi("b", "a")]).with_shape((None, 8))  # type: ignore[arg-type]
    with pytest.raises(StencilmapError):
        analyze_program(p)
    with pytest.raises(StencilmapError):
        analyze_program(p, (8,))
    assert analyze_program(p, (4, 8)).points == 32


@pytest.mark.parametrize("path", corpus_files() or [None], ids=lambda p: p.name if p else "absent")
def test_corpus_programs_analyse(path: Path | None) -> None:
    if path is None:
        pytest.skip("../shared/corpus absent")
    p = bind_shape(load_program(path), {})
    shape = tuple(int(n or 0) for n in p.shape)
    a = analyze_program(p, shape)
    j = json.loads(json.dumps(a.to_json()))
    assert set(j) >= KEYS
    assert a.runtime_cycles >= a.latency_cycles + a.points // a.lanes
    assert all(d >= 0 for d in a.delay_buffers.values())
    for s in p.stencils:
        for field, buf in a.reuse_buffers[s.name].items():
            assert buf.size == buf.reuse_distance + a.unroll - 1, (s.name, field)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_analyse(p: Program) -> None:
    shape = tuple(int(n or 1) for n in p.shape)
    a = analyze_program(p, shape, unroll=2, vector=2)
    json.dumps(a.to_json())
    assert a.total_buffer_elements == a.reuse_buffer_elements + a.delay_buffer_elements
