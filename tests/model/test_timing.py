"""``design_timing``: the cycles of a built design, the figure a simulation of that design checks."""

from __future__ import annotations

import pytest

from stencilmap.design.registry import BuildConfig, build
from stencilmap.model.devices import load_device
from stencilmap.model.estimate import EstimateConfig, estimate
from stencilmap.model.timing import design_timing
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.model.helpers import example


@pytest.mark.parametrize(
    ("name", "arch", "config"),
    [
        ("laplace2d.soda", "pcm", BuildConfig(unroll=16, iterate=10)),  # bandwidth-bound on DE5
        ("jacobi2d.soda", "soda", BuildConfig(unroll=2, iterate=3)),
        ("dag_listing1.json", "stencilflow", BuildConfig(vector=4, iterate=1)),
    ],
)
def test_design_timing_matches_estimate(name: str, arch: str, config: BuildConfig) -> None:
    device = load_device("de5")
    program = bind_shape(load_program(example(name)), {}, None)
    t = design_timing(build(arch, program, config), program, device)
    assert t.q == (config.iterate or 1) and t.lanes == (config.unroll or config.vector)
    r = estimate(EstimateConfig(example(name), "de5", arch, config.unroll, config.iterate, config.vector))
    assert (t.latency, t.compute_cycles) == (r.latency_cycles, r.cycles_per_launch)
    assert t.cycles(device) == pytest.approx(r.compute_seconds * device.clock_mhz * 1e6)
    assert t.scenario(device, device.clock_mhz) == r.scenario


def test_bandwidth_bound_cycles_stretch() -> None:
    device = load_device("de5")
    program = bind_shape(load_program(example("laplace2d.soda")), {}, (256, 4096))
    t = design_timing(build("pcm", program, BuildConfig(unroll=16, iterate=2)), program, device)
    # 8 B × 16 lanes per cycle asked, 20.48 GB/s / 270 MHz = 75.9 B per cycle delivered
    assert t.cycles(device) == pytest.approx(t.compute_cycles * 8 * 16 / (20.48e9 / 270e6))
    assert t.cycles(device, 100.0) == t.compute_cycles  # at 100 MHz memory keeps up
