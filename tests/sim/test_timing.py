"""Cycle counts: a stall-free pipeline takes exactly C = L + ⌈N/P⌉ cycles, and a bandwidth-bound design
runs B_req / B_prac times slower (OpenCL paper, eq. 6).

The latency L of a stall-free pipeline, read off the design (found by experiment, then explained by the
engine's rules):

    L = 1 + max over reader → writer paths of  Σ_channels 1 + Σ_PEs max(1, λ) + Σ_window buffers 1

* a channel is a register: a beat pushed in cycle t is visible to its consumer in cycle t + 1;
* a PE consumes its inputs in cycle t and pushes the result in cycle t + max(1, λ) (λ = the module's
  latency; a pipelined PE takes at least one cycle);
* a window buffer (StencilFlow ``internal_buffer``, PCM ``shift_register``) stores a beat in one cycle and
  presents it the next;
* readers, taps (``forward``), broadcasts, delay buffers and writers pass a beat on in the cycle they take it.

So the writer stores its first beat in cycle D = L − 1 (the reader fires in cycle 0), its last in cycle
D + v − 1 (v = ⌈N/P⌉ beats, P = k·W lanes), and the simulator counts one more cycle, in which it finds every
module finished: C = D + v + 1 = L + v. Stall-free means no reach (a pointwise program: no window waits
for data ahead of its point) and II = 1 everywhere: StencilFlow at any W, SODA and the PCM at any k (the
k lanes run side by side, so they do not lengthen the path).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import networkx as nx
import pytest

from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.jobs.simulate import SimulateConfig, simulate
from stencilmap.point import DesignPoint
from stencilmap.sim import SimConfig
from tests.sim.helpers import built, int_param, lanes_config, points, run_design, soda

#: Cycles a module adds beyond its input hop (see the module docstring).
HOLD = {"pe": None, "internal_buffer": 1, "shift_register": 1, "reader": 0, "forward": 0, "broadcast": 0,
        "delay": 0, "writer": 0}  # fmt: skip

POINTWISE = {
    "copy": "output float: b(0, 0) = a(0, 0)",
    "scale": "output float: b(0, 0) = a(0, 0) * 2.0f",
    "chain": "local float: t(0, 0) = a(0, 0) * 2.0f\nlocal float: u(0, 0) = t(0, 0) * t(0, 0)\n"
    "output float: b(0, 0) = u(0, 0) + 1.0f",
    "diamond": "local float: t(0, 0) = a(0, 0) * 2.0f\nlocal float: u(0, 0) = a(0, 0) + 3.0f\n"
    "output float: b(0, 0) = u(0, 0) + t(0, 0)",
}


def pointwise(body: str, shape: tuple[int, int]) -> str:
    return f"kernel: p\ninput float: a({shape[1]}, *)\n{body}\n"


def latency(design: Design) -> int:
    """L = 1 + the longest reader → writer path (module docstring)."""
    g = nx.DiGraph((c.src, c.dst) for c in design.channels)
    kinds = {m.name: m for m in design.modules}
    assert {m.kind for m in design.modules} <= set(HOLD), "a module kind the formula does not cover"

    def hold(name: str) -> int:
        m = kinds[name]
        return max(1, m.latency) if m.kind == "pe" else int(HOLD[m.kind] or 0)

    ready: dict[str, int] = {}
    for n in nx.topological_sort(g):
        ready[n] = hold(n) + max((ready[p] + 1 for p in g.predecessors(n)), default=0)
    return 1 + max(ready[m.name] for m in design.modules if m.kind == "writer")


STALL_FREE = [(arch, k) for arch in ("stencilflow", "soda", "pcm") for k in (1, 2, 4)]


@pytest.mark.parametrize(("arch", "lanes"), STALL_FREE, ids=[f"{a}-{k}" for a, k in STALL_FREE])
@pytest.mark.parametrize("name", sorted(POINTWISE))
@pytest.mark.parametrize("iterate", [1, 3])
@pytest.mark.parametrize("shape", [(16, 32), (5, 7)])
def test_stall_free_pipeline_takes_l_plus_n_over_p(
    name: str, arch: str, lanes: int, iterate: int, shape: tuple[int, int]
) -> None:
    program = soda(pointwise(POINTWISE[name], shape), shape)
    program, design = built(program, arch, lanes_config(arch, lanes, iterate=iterate))
    run = run_design(program, design)
    assert run.validation.valid
    beats = -(-points(program) // lanes)
    assert run.result.cycles == latency(design) + beats
    writer = next(m for m in run.result.modules if m.kind == "writer")
    assert (writer.starved, writer.busy) == (latency(design) - 1, beats), "waits for the first beat only"


def test_latency_of_the_copy_pipeline_by_hand() -> None:
    """SODA copy, k = 1: reader → tap → PE (λ = 0, holds 1) → writer: 3 hops + 1 = D = 4, L = 5."""
    program, design = built(soda(pointwise(POINTWISE["copy"], (4, 8)), (4, 8)), "soda", BuildConfig(unroll=1))
    assert [m.kind for m in design.modules].count("pe") == 1 and len(design.channels) == 3
    assert latency(design) == 5
    assert run_design(program, design).result.cycles == 5 + 32


# ------------------------------------------------------------------------------------------ bandwidth

TWO_STEP = pointwise(POINTWISE["chain"], (64, 512))
BOUND = [("stencilflow", 8), ("stencilflow", 1), ("soda", 1), ("soda", 8), ("pcm", 1), ("pcm", 4)]


def required_per_bank(design: Design) -> dict[int, float]:
    """B_req per bank (OpenCL eq. 2): bytes its ports move per beat, float32, full beats."""
    out: dict[int, float] = {}
    for m in design.modules:
        if m.kind in ("reader", "writer"):
            bank = int_param(m, "bank", 0)
            out[bank] = out.get(bank, 0.0) + 4 * int_param(m, "width", 1)
    return out


@pytest.mark.parametrize(("arch", "lanes"), BOUND, ids=[f"{a}-{k}" for a, k in BOUND])
@pytest.mark.parametrize("slowdown", [1.5, 2.0, 3.0])
def test_bandwidth_bound_design_slows_by_b_req_over_b_prac(arch: str, lanes: int, slowdown: float) -> None:
    program, design = built(soda(TWO_STEP, (64, 512)), arch, lanes_config(arch, lanes))
    b_req = max(required_per_bank(design).values())
    free = run_design(program, design).result
    bound = run_design(program, design, SimConfig(bytes_per_cycle_per_bank=b_req / slowdown))
    assert bound.validation.valid
    assert bound.result.cycles / free.cycles == pytest.approx(slowdown, rel=0.01)


def test_device_bandwidth_through_the_job(tmp_path: Path) -> None:
    """ku060: 43.0 B/cycle per bank at 250 MHz. StencilFlow W = 8 moves 2 × 32 B per beat on bank 0."""
    path = tmp_path / "p.soda"
    path.write_text(TWO_STEP)
    config = SimulateConfig(
        program=path,
        point=DesignPoint(arch="stencilflow", vector=8),
        shape=(64, 512),
        out_dir=tmp_path / "out",
    )
    free = simulate(config)
    bound = simulate(replace(config, point=replace(config.point, device="ku060")))
    b = bound.bandwidth
    assert b.bytes_per_cycle_per_bank == pytest.approx(43.008) and b.banks == (0,)
    assert b.required_bytes_per_cycle == 64 and b.slowdown == pytest.approx(64 / 43.008)
    assert bound.valid and bound.result.cycles / free.result.cycles == pytest.approx(b.slowdown, rel=0.01)
    assert bound.predicted_cycles == pytest.approx(bound.result.cycles, rel=0.01)
    assert b.achieved_bytes_per_cycle <= b.available_bytes_per_cycle  # type: ignore[operator]
    assert free.bandwidth.slowdown == 1 and free.bandwidth.available_bytes_per_cycle is None


def test_below_practical_bandwidth_nothing_slows(tmp_path: Path) -> None:
    """SODA k = 4 on two banks (dram 0 and 1): 16 B per beat per bank < 43 B — OpenCL scenario 1."""
    path = tmp_path / "p.soda"
    path.write_text(
        "kernel: p\ninput dram 0 float: a(64, *)\noutput dram 1 float: b(0, 0) = a(0, 0) + 1.0f\n"
    )
    free = simulate(
        SimulateConfig(
            program=path, point=DesignPoint(arch="soda", unroll=1), shape=(64, 64), out_dir=tmp_path / "o"
        )
    )
    bound = simulate(
        SimulateConfig(
            program=path,
            point=DesignPoint(arch="soda", unroll=1, device="ku060"),
            shape=(64, 64),
            out_dir=tmp_path / "o",
        )
    )
    assert bound.bandwidth.banks == (0, 1) and bound.bandwidth.slowdown == 1
    assert bound.result.cycles == free.result.cycles


LAPLACE = """kernel: laplace2d
input{bank} float: v(256, *)
output{bank} float:
  w(0, 0) = 0.25f * (v(0, -1) + v(-1, 0) + v(1, 0) + v(0, 1))
iterate: 1
"""


@pytest.mark.parametrize("pinned", [False, True])
def test_interleaved_memory_through_the_job(tmp_path: Path, pinned: bool) -> None:
    """de5 interleaves an unpinned program's ports over both banks (``Device.memory_interleaved``): the
    simulator's bank 0 then carries both banks' 37.9 B/cycle (at 270 MHz); pinned to bank 0 it has one
    bank's. PCM P_cell = 16 moves 2 × 64 B a beat: 1.69× slower interleaved, 3.38× pinned to one bank.
    The model predicts the simulated cycles either way."""
    path = tmp_path / "p.soda"
    path.write_text(LAPLACE.format(bank=" dram 0" if pinned else ""))
    config = SimulateConfig(
        program=path, point=DesignPoint(arch="pcm", unroll=16), shape=(128, 1024), out_dir=tmp_path / "out"
    )
    free = simulate(config)
    bound = simulate(replace(config, point=replace(config.point, device="de5")))
    b = bound.bandwidth
    per_bank = 25.6e9 * 0.8 / 2 / 270e6
    assert b.banks == (0,)
    assert b.bytes_per_cycle_per_bank == pytest.approx(per_bank if pinned else 2 * per_bank)
    assert b.slowdown == pytest.approx(128 / b.bytes_per_cycle_per_bank)
    assert bound.valid and bound.result.cycles / free.result.cycles == pytest.approx(b.slowdown, rel=0.03)
    assert bound.predicted_cycles == pytest.approx(bound.result.cycles, rel=0.02)
