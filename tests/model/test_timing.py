"""``design_timing``: the cycles of a built design, the figure a simulation of that design checks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.arch import arch as arch_of
from stencilmap.design.registry import BuildConfig, build
from stencilmap.device.catalog import load_device
from stencilmap.jobs.estimate import EstimateConfig, estimate
from stencilmap.model.timing import chain_latencies, design_timing, launch_cycles, segment_rate
from stencilmap.point import DesignPoint
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
    t = design_timing(
        build(arch, program, replace(config, device="de5")), program, device, lanes=arch_of(arch).lanes
    )  # de5's latencies
    assert t.q == (config.iterate or 1) and t.lanes == (config.unroll or config.vector)
    r = estimate(
        EstimateConfig(
            program=example(name),
            point=DesignPoint(
                device="de5", arch=arch, unroll=config.unroll, iterate=config.iterate, vector=config.vector
            ),
        )
    )
    assert (t.latency, t.compute_cycles) == (r.latency_cycles, r.cycles_per_launch)
    # at the estimate's clock (de5's clock model picks it from the design's ALM use)
    assert t.cycles(device, r.clock_mhz) == pytest.approx(r.compute_seconds * r.clock_mhz * 1e6)
    assert t.scenario(device, device.clock_mhz) == r.scenario


def test_bandwidth_bound_cycles_stretch_per_bank() -> None:
    """laplace2d reads bank 0 and writes bank 1: 4 B × 16 lanes a beat on each, against a bank's
    20.48 GB/s / 2 / 270 MHz = 37.9 B a cycle: every beat stretches by 64 / 37.9 (OpenCL eq. 6, per bank)."""
    device = load_device("de5")
    program = bind_shape(load_program(example("laplace2d.soda")), {}, (256, 4096))
    t = design_timing(
        build("pcm", program, BuildConfig(unroll=16, iterate=2)), program, device, lanes="P_cell"
    )
    per_bank = 20.48e9 / 2 / 270e6
    assert device.bytes_per_cycle_per_bank() == pytest.approx(per_bank)
    assert [(b.bank, b.read_bytes, b.write_bytes) for b in t.banks] == [(0, 4 * 2**20, 0), (1, 0, 4 * 2**20)]
    stretched = t.vectors * 64 / per_bank
    assert stretched < t.cycles(device) < stretched + t.latency * 64 / per_bank + t.drain
    assert t.scenario(device, 270.0) == "bandwidth"
    assert t.cycles(device, 100.0) == t.compute_cycles  # at 100 MHz a bank delivers 102 B a cycle
    assert t.scenario(device, 100.0) == "compute"


def test_ports_sharing_a_bank_share_its_bandwidth() -> None:
    """heat3d (JSON: no banks) reads and writes bank 0: 8 B a beat against the one bank's rate."""
    program = bind_shape(load_program(example("heat3d.json")), {}, (16, 32, 32))
    t = design_timing(build("stencilflow", program, BuildConfig(vector=1)), program, lanes="W")
    assert [(b.bank, b.read_bytes, b.write_bytes) for b in t.banks] == [(0, 4 * 16384, 4 * 16384)]
    assert t.cycles_at(4.0) == pytest.approx(16384 * 8 / 4, rel=0.01)  # every cycle the bank is busy


def test_stall_free_is_l_plus_v() -> None:
    program = bind_shape(load_program(example("jacobi2d.soda")), {}, (32, 64))
    t = design_timing(build("stencilflow", program, BuildConfig(vector=2, iterate=2)), program, lanes="W")
    assert t.compute_cycles == t.latency + 1024 and t.cycles_at(None) == t.compute_cycles
    assert t.cycles_at(1e9) == t.compute_cycles


def test_launch_cycles_phases() -> None:
    """Fill at the readers' rate, steady state at the shared rate, drain at the writers' rate."""
    one = np.array(1.0)
    cycles = launch_cycles(
        np.array(100.0),
        np.array(20.0),
        np.array(1000.0),
        one,
        np.array(0.0),
        np.array([4.0]),
        np.array([4.0]),
        4.0,
    )
    # ρ_A = 1: the reach (80 cycles) fills at full speed, X = 100 beats ahead; steady at 1/2; drain at 1
    assert float(cycles) == pytest.approx(100 + 900 / 0.5 + 100)
    free = launch_cycles(np.array(100.0), np.array(20.0), np.array(1000.0), np.array(0.8), np.array(7.0),
                         np.array([4.0]), np.array([4.0]), np.inf)  # fmt: skip
    assert float(free) == pytest.approx(100 + 1000 / 0.8 + 7)


def test_segment_rate() -> None:
    # fall-through FIFOs: every segment keeps up, d/k = 2 beats (a FIFO of depth 1) included
    assert segment_rate(1) == 1.0 and segment_rate(2) == 1.0 and segment_rate(100) == 1.0


def test_chain_latencies_are_the_analysis_recurrence() -> None:
    """With the builders' latencies, L of q chained copies is ``pipeline_timing``'s, for every shape and P."""
    program = bind_shape(load_program(example("jacobi2d_9pt.soda")), {}, (32, 64))
    one = replace(program, iterate=1)
    lat = OperatorLatencies.default()
    pe = {st.name: stencil_latency(st, lat) for st in program.stencils}
    shapes, lanes = [(32, 64), (32, 16)], [1, 4, 16]
    chained = chain_latencies(one, 5, shapes, lanes, pe)
    for q in range(1, 6):
        for i, shape in enumerate(shapes):
            for j, p in enumerate(lanes):
                assert (
                    chained.latency[q - 1, i, j]
                    == pipeline_timing(replace(one, iterate=q), shape, p, lat).latency
                )


def test_design_latencies_are_the_pes_not_the_device_table() -> None:
    """de5 lists mul = 5 cycles; the builders' PEs use the default 4: the timing follows the design."""
    program = bind_shape(load_program(example("jacobi2d_9pt.soda")), {}, (32, 64))
    design = build("pcm", program, BuildConfig(unroll=1))
    default = pipeline_timing(program, (32, 64), 1, OperatorLatencies.default()).latency
    assert (
        design_timing(design, program, load_device("de5"), lanes=arch_of(design.arch).lanes).latency
        == default
    )
    assert pipeline_timing(program, (32, 64), 1, load_device("de5").operator_latencies()).latency != default
