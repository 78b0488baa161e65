"""Pipeline latency L and runtime C = L + N/W (StencilFlow §VIII-A, eq. 1)."""

from __future__ import annotations

from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.timing import grid_points, pipeline_timing, runtime_cycles

from .helpers import jacobi, program

LAT = OperatorLatencies(add=7, mul=4, unit=0)  # no handshake stages: the reach rules alone


def test_chain_latency_is_reach_plus_compute_per_stage() -> None:
    # jacobi: reach one row (+M) ahead, compute 4 adds + 1 mul = 32 cycles; three stages chained
    shape = (16, 9)
    p = program(shape, ["a"], [jacobi("b", "a"), jacobi("c", "b"), jacobi("d", "c")])
    t = pipeline_timing(p, shape, 1, LAT)
    assert t.compute["b"] == 4 * 7 + 4
    assert t.done == {"a": 0, "b": 9 + 32, "c": 2 * (9 + 32), "d": 3 * (9 + 32)}
    assert t.latency == 3 * 41
    assert runtime_cycles(t.latency, grid_points(shape), 1) == 123 + 144


def test_vector_lanes_divide_reach_and_stream() -> None:
    shape = (16, 9)
    p = program(shape, ["a"], [jacobi("b", "a")], iterate=2)
    t = pipeline_timing(p, shape, 4, LAT)
    assert t.start["b@1"] == 3 and t.done["b@2"] == 2 * (3 + 32)  # ⌈9 / 4⌉ = 3 cycles of reach
    assert runtime_cycles(t.latency, 144, 4) == 70 + 36
    assert runtime_cycles(10, 145, 4) == 10 + 37
