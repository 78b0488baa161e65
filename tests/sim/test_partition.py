"""Partitioned StencilFlow designs (design.partition) simulate as one: network modules carry the cut
streams with the link's latency and rate, and the outputs equal the NumPy reference."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from stencilmap.design.common import or_hint, with_iterate
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import Device, Network, load_device
from stencilmap.jobs.partition import partition
from stencilmap.model.timing import predicted_cycles
from stencilmap.program.ir import Program
from tests.conftest import CORPUS_STENCILFLOW, EXAMPLES, corpus_or_skip
from tests.sim.helpers import Run, explain, load_small, run_design

NAMED = ("simulator5.json", "simple_input_delay_buf.json", "jacobi3d_32x32x32_8itr.json", "horidiff_min.json")
PROGRAMS = [p for p in corpus_or_skip(CORPUS_STENCILFLOW) if p is not None and p.name in NAMED] + [
    EXAMPLES / "dag_listing1.json",
    EXAMPLES / "fdtd2d.json",
]


def _device(latency_ns: float = 800.0, gbs: float = 5.0) -> Device:
    dev = load_device("stratix10")
    return replace(dev, network=Network(link_bandwidth_gbs=gbs, link_latency_ns=latency_ns, links=2))


def _split_run(program: Program, devices: int, dev: Device, vector: int | None = None) -> Run:
    config = BuildConfig(vector=vector)
    chained = with_iterate(program, or_hint(config.iterate, program.iterate))
    split = partition(chained, config, dev, devices=devices)
    return run_design(chained, split.design)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("devices", [2, 3])
def test_partitioned_designs_match_the_reference(path: Path, devices: int) -> None:
    program = load_small(path)
    if sum(1 for _ in program.stencils) * max(1, program.iterate) < devices:
        pytest.skip("fewer stencils than devices")
    run = _split_run(program, devices, _device())
    assert run.result.status == "done" and run.validation.valid, explain(run)
    assert run.validation.bit_exact
    assert run.design.count("network") >= 1


def test_link_latency_shows_in_the_cycles() -> None:
    """A chain cut once: the run is longer by (latency + 1) per cut on the critical path, exactly."""
    program = load_small(EXAMPLES / "heat3d.json")
    program = with_iterate(program, 4)
    cycles = {}
    for ns in (100.0, 1000.0):
        dev = _device(latency_ns=ns)
        split = partition(program, BuildConfig(), dev, devices=2)
        run = run_design(program, split.design)
        assert run.validation.valid, explain(run)
        cycles[ns] = (run.result.cycles, next(m.latency for m in split.design.modules if m.kind == "network"))
    (c1, l1), (c2, l2) = cycles[100.0], cycles[1000.0]
    assert l2 > l1 and c2 - c1 == l2 - l1


def test_link_bandwidth_limits_the_rate() -> None:
    """Links slower than the stream: the run takes at least V / rate cycles; the model follows it (within
    5%: the README's table shows where it is off)."""
    program = load_small(EXAMPLES / "heat3d.json")
    program = with_iterate(program, 2)
    dev = _device(gbs=0.6)  # 2 × 0.6 GB/s at 300 MHz: 4 B/cycle for 4 × 4 B beats
    run = _split_run(program, 2, dev, vector=4)
    assert run.validation.valid, explain(run)
    net = next(m for m in run.design.modules if m.kind == "network")
    rate = float(str(net.param("rate")))
    assert rate < 1
    vectors = -(-run.result.output_points // 4)
    assert run.result.cycles >= vectors / rate
    predicted = predicted_cycles(run.design, program, None, lanes="W")
    assert abs(run.result.cycles - predicted) <= 0.05 * run.result.cycles
