"""Cycles of a built design on a device — the figure a cycle-level simulation of the design checks.

A design streams P points a cycle (SODA's k, the PCM's P_cell, StencilFlow's W) through q chained
stages; one launch takes C = L + ⌈N_stream / P⌉ cycles (``analysis.timing``: StencilFlow §VIII-A eq. 1,
OpenCL eq. 5), N_stream counting the halos a tiled SODA design re-reads (SODA §4.2, §4.4). When the
memory cannot deliver a cycle's data every cycle — B_req = bytes per point · P · f ≥ B_prac, OpenCL eqs.
2–4 — every cycle stretches by B_req / B_prac (eq. 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from stencilmap.analysis.timing import pipeline_timing, runtime_cycles
from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design, ParamValue
from stencilmap.errors import StencilmapError
from stencilmap.model.devices import Device
from stencilmap.model.performance import Scenario, required_bandwidth, scenario
from stencilmap.model.workload import workload
from stencilmap.program.ir import Program

#: the design parameter holding the lanes P of each builder's designs
LANES = {"soda": "k", "pcm": "P_cell", "stencilflow": "W"}


@dataclass(frozen=True, slots=True)
class DesignTiming:
    """q stages on chip, P lanes, latency L and the points streamed per launch."""

    q: int
    lanes: int
    latency: int
    stream_shape: tuple[int, ...]
    stream_points: int
    bytes_per_point: float

    @property
    def compute_cycles(self) -> int:
        """C = L + ⌈N_stream / P⌉: one launch when memory keeps up."""
        return runtime_cycles(self.latency, self.stream_points, self.lanes)

    def required_bandwidth_gbs(self, clock_mhz: float) -> float:
        """B_req (OpenCL eq. 2) at ``clock_mhz``."""
        return required_bandwidth(self.bytes_per_point, self.lanes, clock_mhz * 1e6) / 1e9

    def scenario(self, device: Device, clock_mhz: float) -> Scenario:
        return scenario(self.required_bandwidth_gbs(clock_mhz), device.practical_bandwidth_gbs)

    def cycles(self, device: Device, clock_mhz: float | None = None) -> float:
        """Cycles of one launch on ``device``: C, stretched by B_req / B_prac when bandwidth-bound."""
        clock = device.clock_mhz if clock_mhz is None else clock_mhz
        b_req, b_prac = self.required_bandwidth_gbs(clock), device.practical_bandwidth_gbs
        return self.compute_cycles * (b_req / b_prac if scenario(b_req, b_prac) == "bandwidth" else 1.0)


def design_timing(design: Design, program: Program, device: Device) -> DesignTiming:
    """The timing of ``design``, built from the shape-bound ``program``, with ``device``'s latencies."""
    if design.arch not in LANES:
        raise StencilmapError(f"no timing model for '{design.arch}' designs")
    params = dict(design.parameters)
    lanes = int_param(params, LANES[design.arch])
    q = max((int_param(dict(m.params), "stage") for m in design.modules if m.kind == "pe"), default=1)
    shape = tuple(int(n or 0) for n in program.shape)
    stream = params.get("stream_shape", shape)
    assert isinstance(stream, tuple)
    stream_shape = tuple(int(n) for n in stream)
    tiles = int_param(params, "tiles_total") if "tiles_total" in params else 1
    timing = pipeline_timing(with_iterate(program, q), stream_shape, lanes, device.operator_latencies())
    work = workload(program, shape)
    return DesignTiming(
        q, lanes, timing.latency, stream_shape, tiles * prod(stream_shape), work.bytes_per_point
    )


def int_param(params: dict[str, ParamValue], key: str) -> int:
    """An integer parameter of a design or module."""
    value = params.get(key)
    if not isinstance(value, int):
        raise StencilmapError(f"the design lacks an integer parameter '{key}'")
    return value
