"""Reuse chains run as ring buffers (``SimConfig.fuse_chains``, the default) give exactly what running every
tap and FIFO by itself gives: status, cycles, firings, outputs, every module's busy / starved / blocked
counts, every channel's peak, traffic, the per-cycle trace and channel occupancy, and deadlock reports.

The corpus under SODA (k = 1, 2, 4), StencilFlow and the PCM; SODA designs that stall (memory bandwidth
limits on the reads or the writes), that are tiled, that run in chunks of a few cycles (the chains leave and
re-enter their steady state at every chunk's end), and that deadlock. Some cases check that the chains did
run as ring buffers for a good share of the run, so the comparison is between two different paths.

While steady chains feed a PE group all its inputs, the group reads their rings and the channels between
them are not materialised (the *bypass*) — except in traced cycles, which show every channel's beats. So
every comparison runs twice: traced throughout (no bypass), and traced for the first ``SHORT`` cycles only
(the bypass takes over after them; traces, counts, peaks and outputs must still agree).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from stencilmap.sim import SimConfig, SimResult, simulate
from stencilmap.sim import memory as K
from stencilmap.sim.engine import load_engine
from stencilmap.sim.layout import pack
from stencilmap.sim.model import lower
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, corpus_or_skip
from tests.sim.helpers import built, inputs_for, lanes_config, load_small, points, soda
from tests.sim.test_properties import iterated, known_defect

PROGRAMS: list[Path] = corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW) + EXAMPLE_FILES
LANES = {"soda": (1, 2, 4), "stencilflow": (1,), "pcm": (2,)}
TRACE = 20_000  # cycles traced (every cycle of most runs here)
SHORT = 12  # cycles traced in the second comparison of each case
BIGGEST = 20_000  # grid points: larger examples are left to the other tests (the corpus is bound smaller)

JACOBI = """kernel: jacobi
burst width: 512
unroll factor: 4
input dram 0 float: v(40, *)
output dram 1 float: w(0, 0) = (v(0, -1) + v(-1, 0) + v(0, 0) + v(1, 0) + v(0, 1)) * 0.2f
iterate: 3
border: ignore
"""


def assert_same(fused: SimResult, apart: SimResult) -> None:
    assert fused.status == apart.status
    assert fused.cycles == apart.cycles
    assert fused.firings == apart.firings
    assert fused.modules == apart.modules
    assert fused.channel_peaks == apart.channel_peaks
    assert fused.bytes_read == apart.bytes_read and fused.bytes_written == apart.bytes_written
    assert fused.deadlock == apart.deadlock
    assert fused.outputs.keys() == apart.outputs.keys()
    for name, values in fused.outputs.items():
        assert np.array_equal(values, apart.outputs[name], equal_nan=True), name
    assert fused.trace is not None and apart.trace is not None
    assert np.array_equal(fused.trace, apart.trace)
    assert fused.occupancy is not None and apart.occupancy is not None
    assert np.array_equal(fused.occupancy, apart.occupancy)


def shares(program: Program, design: Design, config: SimConfig) -> tuple[float, float]:
    """The share of module firings the steady chains made, and of cycles in which a PE group read their rings
    (summed over the groups; the engine called directly, untraced)."""
    values = inputs_for(program)
    packed = pack(lower(design, program, values, config.bytes_per_cycle_per_bank), True)
    engine = load_engine(packed, False)
    trace = np.zeros((0, len(design.modules)), np.int8)
    occupancy = np.zeros((0, len(design.channels)), np.int64)
    status, now, firings, fused, bypassed = K.RUNNING, 0, 0, 0, 0
    while status == K.RUNNING and now < 1_000_000:
        status, now, fired, by_chains, by_rings = engine.run(
            packed, trace, occupancy, 0, now, config.chunk_cycles
        )
        firings, fused, bypassed = firings + fired, fused + by_chains, bypassed + by_rings
    return fused / max(1, firings), bypassed / max(1, now)


def fused_share(program: Program, design: Design, config: SimConfig) -> float:
    return shares(program, design, config)[0]


def compare(program: Program, design: Design, config: SimConfig) -> None:
    values = inputs_for(program)
    for traced in (TRACE, SHORT):
        config = replace(config, trace_cycles=traced)
        fused = simulate(program, design, values, replace(config, fuse_chains=True))
        apart = simulate(program, design, values, replace(config, fuse_chains=False))
        assert_same(fused, apart)


def cases() -> list[object]:
    return [
        pytest.param(path, arch, k, id=f"{path.name}-{arch}-{k}")
        for path in PROGRAMS
        for arch, lanes in LANES.items()
        for k in lanes
    ]


@pytest.mark.parametrize(("path", "arch", "lanes"), cases())
def test_corpus_fused_equals_module_by_module(path: Path, arch: str, lanes: int) -> None:
    try:
        program, design = built(load_small(path), arch, lanes_config(arch, lanes))
    except StencilmapError as exc:
        pytest.skip(f"{arch} does not apply: {exc}")
    if points(program) > BIGGEST:
        pytest.skip(f"{points(program):,} points: a slow case for this comparison")
    compare(program, design, SimConfig())


@pytest.mark.parametrize("name", ["blur.soda", "denoise2d.soda", "jacobi3d.soda"])
@pytest.mark.parametrize("lanes", [1, 4])
def test_corpus_chains_run_as_ring_buffers(name: str, lanes: int) -> None:
    """The comparison above is between two paths: on these, the steady chains make a share of the firings."""
    path = next((p for p in CORPUS_SODA if p.name == name), None)
    if path is None:
        pytest.skip("../shared/corpus absent")
    program, design = built(load_small(path), "soda", lanes_config("soda", lanes))
    fused, bypassed = shares(program, design, SimConfig())
    assert fused > 0.1
    # and the PE groups read the rings (denoise2d's groups also take channels no steady chain feeds)
    assert bypassed > 0.1 or name == "denoise2d.soda"


@pytest.mark.parametrize(
    "config",
    [
        SimConfig(),
        SimConfig(chunk_cycles=7),
        SimConfig(bytes_per_cycle_per_bank=6.0),  # the reader feeds the chains in bursts
        SimConfig(bytes_per_cycle_per_bank=13.0, chunk_cycles=101),  # the writer holds the PEs back
    ],
    ids=["free", "chunks", "slow-memory", "slow-writes"],
)
@pytest.mark.parametrize("lanes", [1, 3, 4])
def test_stalling_jacobi_fused_equals_module_by_module(config: SimConfig, lanes: int) -> None:
    program, design = built(soda(JACOBI, (36, 40)), "soda", BuildConfig(unroll=lanes))
    compare(program, design, config)
    # stalls end a chain's steady state (the rest of such a cycle runs module by module)
    fused, bypassed = shares(program, design, config)
    assert fused > (0.3 if config.bytes_per_cycle_per_bank is None else 0.0)
    # the PE groups read the rings for a good share of the run, leaving the bypass at the writer's stalls and
    # at every chunk's end in "slow-writes" (with k = 4 its stalls keep the chains from staying steady)
    if config.chunk_cycles > 50 and (
        config.bytes_per_cycle_per_bank is None or (config.chunk_cycles == 101 and lanes < 4)
    ):
        assert bypassed > 0.3


def test_tiled_fused_equals_module_by_module() -> None:
    program, design = built(soda(JACOBI, (30, 50)), "soda", BuildConfig(unroll=2, iterate=2, tile=(17,)))
    assert dict(design.parameters)["tiles_total"] == 4
    compare(program, design, SimConfig())
    compare(program, design, SimConfig(bytes_per_cycle_per_bank=5.0, chunk_cycles=50))
    assert fused_share(program, design, SimConfig()) > 0.3


def test_deadlocked_fused_equals_module_by_module() -> None:
    """Reuse FIFOs too shallow for a row: the chains fill before their first taps may send to the PEs, and
    the design deadlocks, reported the same either way."""
    program, design = built(soda(JACOBI, (24, 40)), "soda", BuildConfig(unroll=2))
    modules = tuple(
        replace(m, params=tuple((k, 3 if k == "depth" else v) for k, v in m.params))
        if m.kind == "fifo"
        else m
        for m in design.modules
    )
    shallow = replace(design, modules=modules)
    values = inputs_for(program)
    assert simulate(program, shallow, values).status == "deadlock"
    compare(program, shallow, SimConfig())


def test_stencilflow_chain_without_taps_is_untouched() -> None:
    """A design without reuse chains runs the same modules either way (nothing fused)."""
    program, design = built(soda(JACOBI, (20, 40)), "stencilflow", BuildConfig(vector=2))
    assert fused_share(program, design, SimConfig()) == 0.0
    compare(program, design, SimConfig())


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    iterated(),
    st.integers(1, 4),
    st.sampled_from([None, 3.0, 8.0, 20.0]),
    st.sampled_from([5, 64, 200_000]),
)
def test_random_soda_programs_fused_equal_module_by_module(
    program: Program, k: int, bandwidth: float | None, chunk: int
) -> None:
    """Random programs (``tests.strategies``), chained 1–3 times, under SODA with k = 1–4 PEs, memory
    bandwidth limits and chunk lengths: both paths agree on everything."""
    try:
        program, design = built(program, "soda", lanes_config("soda", k))
    except StencilmapError:
        assume(False)
    assume(not known_defect(program, design))
    try:
        compare(program, design, SimConfig(bytes_per_cycle_per_bank=bandwidth, chunk_cycles=chunk))
    except StencilmapError as exc:
        assume("border: preserve" not in exc.message)  # the simulator's stated limits
        raise
