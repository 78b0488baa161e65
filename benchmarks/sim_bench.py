"""Simulator speed: every target of the simulator-speed issue, measured in one run, printed as one table.

Usage: .venv/bin/python benchmarks/sim_bench.py [--corpus ../shared/corpus] [--quick]

Rows:
- cycles/s of the cycle loop (``SimResult.sim_seconds``, best of 3 after a warm-up; in the detail also by its
  processor time, ``SimResult.sim_cpu_seconds``, the steadier figure on a shared machine) on the benchmark designs:
  the 8-stencil StencilFlow chain at 32³ and 64³, and the 2048² SODA design (k = 4, q = 4); each validated
  bit for bit against the NumPy reference; the SODA design also with its reuse chains run module by module
  (``SimConfig.fuse_chains=False``, the engine before the ring buffers), alternating with the fused runs, and
  both must agree on every cycle count, statistic and output;
- ``explore``'s winner simulation for jacobi 4096² × 1,000 steps on ku060 (its ``wall_seconds``);
- the first ``stencilmap simulate examples/jacobi2d.soda`` with an empty STENCILMAP_CACHE_DIR (whole command);
- compiling the evaluators of a design never simulated before;
- ``stencilmap --help`` and ``stencilmap simulate --help`` (best of 3);
- a design of ~10,000 modules: seconds and peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from stencilmap.backends.reference import Result, run_reference
from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig, build
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.ir import Program
from stencilmap.program.soda import parse_soda
from stencilmap.sim import SimConfig, SimResult, simulate

ROOT = Path(__file__).resolve().parents[1]
STENCILMAP = str(Path(sys.executable).parent / "stencilmap")


def jacobi2d(rows: int, cols: int, k: int, q: int) -> Program:
    text = f"""kernel: jacobi2d_{cols}
burst width: 512
unroll factor: {k}
input dram 0 float: v({cols}, *)
output dram 1 float: w(0, 0) = (v(0, -1) + v(-1, 0) + v(0, 0) + v(1, 0) + v(0, 1)) * 0.2f
iterate: {q}
border: ignore
"""
    return with_iterate(bind_shape(parse_soda(text), {}, (rows, cols)), q)


def _row(name: str, program: Program, design: Design, runs: list[SimResult], reference: Result) -> list[str]:
    best = min(runs, key=lambda r: r.sim_seconds)
    exact = all(
        np.array_equal(best.outputs[o][reference.defined[o]], reference.outputs[o][reference.defined[o]])
        for o in program.outputs
    )
    rates = sorted(r.cycles / r.sim_seconds for r in runs)
    cpu = sorted(r.cycles / max(r.sim_cpu_seconds, 1e-9) for r in runs)
    return [
        f"{name} ({len(design.modules)} modules)",
        f"{rates[-1]:,.0f} cycles/s",
        "≥ 1,000,000 cycles/s",
        f"{best.cycles:,} cycles in {best.sim_seconds:.3f} s (median {rates[len(rates) // 2]:,.0f} cycles/s; "
        f"by processor time best {cpu[-1]:,.0f}, median {cpu[len(cpu) // 2]:,.0f}); "
        f"whole call {best.seconds:.3f} s; " + ("bit-exact" if exact else "MISMATCH"),
    ]


def cycle_rate(name: str, program: Program, arch: str, apart: bool = False) -> list[list[str]]:
    """The row of ``program``'s design; with ``apart``, a second row for its reuse chains run module by
    module, the runs of the two alternating (and agreeing on everything)."""
    design = build(arch, program, BuildConfig())
    values = make_inputs(program, {}, 0)
    reference = run_reference(program, values)
    configs = [SimConfig(evaluators="compile")] + (
        [SimConfig(evaluators="compile", fuse_chains=False)] * apart
    )
    simulate(program, design, values, configs[0])  # warm-up: compiles, cached after
    runs: list[list[SimResult]] = [[] for _ in configs]
    for _ in range(3):
        for config, done in zip(configs, runs, strict=True):
            done.append(simulate(program, design, values, config))
    rows = [_row(name, program, design, runs[0], reference)]
    if apart:
        fused, alone = runs[0][0], runs[1][0]
        same = (fused.cycles, fused.modules, fused.channel_peaks, fused.firings) == (
            alone.cycles,
            alone.modules,
            alone.channel_peaks,
            alone.firings,
        ) and all(np.array_equal(fused.outputs[o], alone.outputs[o], equal_nan=True) for o in fused.outputs)
        row = _row(f"{name}, chains module by module", program, design, runs[1], reference)
        row[3] += "; same as fused" if same else "; DIFFERS from fused"
        rows.append(row)
    return rows


def _stencilmap(args: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([STENCILMAP, *args], capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"stencilmap {' '.join(args)} failed: {done.stderr.strip()}")
    return seconds, done.stdout


def explore_winner(archs: list[str]) -> list[str]:
    extra = [a for arch in archs for a in ("--arch", arch)]
    args = ["explore", "examples/jacobi2d.soda", "--device", "ku060", "--shape", "4096,4096", "--iterations",
            "1000", *extra, "--json"]  # fmt: skip
    _stencilmap(args)  # warm-up: the winner's evaluators compiled and cached
    _, out = _stencilmap(args)
    best = json.loads(out)["best"]
    sim = best["simulation"]
    design = f"{best['arch']} P={best['lanes']} q={best['iterate']}"
    return [
        f"explore winner, jacobi 4096² × 1,000 on ku060 ({'/'.join(archs) or 'all archs'})",
        f"{sim['wall_seconds']:.2f} s",
        "≤ 5 s",
        f"{design}; {sim['simulated_cycles']:,} cycles on {sim['shape']} (predicted {sim['predicted_cycles']:,.0f})",
    ]


def cold_start() -> list[str]:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "STENCILMAP_CACHE_DIR": cache}
        seconds, stdout = _stencilmap(["simulate", "examples/jacobi2d.soda", "--json", "--out", out], env)
        report = json.loads(stdout)
    return [
        "first simulate, empty cache (examples/jacobi2d.soda)",
        f"{seconds:.2f} s",
        "≤ 5 s",
        f"compiling {report['compile_seconds']:.2f} s, cycle loop {report['sim_seconds']:.3f} s",
    ]


def new_design_compile() -> list[str]:
    text = f"""kernel: fresh
input float: v(64, *)
output float: w(0, 0) = v(0, -1) * {time.time_ns() % 1000}.5f + v(1, 0) * v(-1, 0) - v(0, 1)
"""
    program = bind_shape(parse_soda(text), {}, (64, 64))
    design = build("soda", program, BuildConfig())
    result = simulate(program, design, make_inputs(program, {}, 0), SimConfig(evaluators="compile"))
    return ["a design never simulated before: compiling", f"{result.compile_seconds:.2f} s", "≤ 2 s",
            "its stencil expressions (the engine is shared and cached)"]  # fmt: skip


def help_time(args: list[str]) -> list[str]:
    best = min(_stencilmap([*args, "--help"])[0] for _ in range(3))
    return [f"stencilmap {' '.join(args)} --help".replace("  ", " "), f"{best:.2f} s", "≤ 0.5 s", "best of 3"]


def big_design() -> list[str]:
    program = jacobi2d(416, 256, 16, 100)
    design = build("soda", program, BuildConfig())
    start = time.perf_counter()
    result = simulate(program, design, make_inputs(program, {}, 0))
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return [
        f"a design of {len(design.modules):,} modules, {len(design.channels):,} channels",
        f"{seconds:.1f} s",
        "simulates",
        f"{result.status}, {result.cycles:,} cycles; peak memory of this process {rss:,.0f} MB",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--quick", action="store_true", help="Only the cycles/s rows.")
    args = parser.parse_args()
    table = Table(title="stencilmap cycle-level simulator (this machine, one run)")
    for col in ("measure", "result", "target", "detail"):
        table.add_column(col)
    chain = args.corpus / "stencilflow" / "jacobi3d_32x32x32_8itr.json"
    if chain.is_file():
        for n in (32, 64):
            program = bind_shape(load_program(chain), {}, (n, n, n))
            for row in cycle_rate(f"StencilFlow chain, 8 Jacobi stencils, {n}³", program, "stencilflow"):
                table.add_row(*row)
    for row in cycle_rate("SODA jacobi2d 2048² (k=4, q=4)", jacobi2d(2048, 2048, 4, 4), "soda", apart=True):
        table.add_row(*row)
    if not args.quick:
        table.add_row(*explore_winner([]))
        table.add_row(*explore_winner(["soda"]))
        table.add_row(*cold_start())
        table.add_row(*new_design_compile())
        table.add_row(*help_time([]))
        table.add_row(*help_time(["simulate"]))
        table.add_row(*big_design())
    Console(width=200).print(table)


if __name__ == "__main__":
    main()
