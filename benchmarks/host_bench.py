"""Host execution speed: stencilmap's backends against the peers, every row measured in the same run.

Usage: .venv/bin/python benchmarks/host_bench.py [--threads 2] [--repeat 3] [--quick]

Problems (issue 12): 2-D 5-point Jacobi 4096² × 50 steps, 3-D 7-point Jacobi 256³ × 20 steps, one step of the
3-D 7-point stencil on 256³ (``--quick`` divides the sizes and steps for a smoke run). Rows: the NumPy
reference (fewer steps, rate extrapolated: it is the oracle, not a contender), a Numba ``prange`` loop as
users write it, pystencils, Devito and Halide when installed (``pip install -e '.[bench]'``), and stencilmap's
cpu backend. Columns: GCell/s (wall clock, best of N), % of STREAM (8 bytes moved per cell per step over the copy
bandwidth measured now, with the same threads: above 100 % only by fusing steps), GCell/s by CPU time (cells ×
threads over the processor seconds of every thread, best of N: the rate had each thread a core to itself, the
figure to compare on a loaded machine; a peer whose idle threads spin is charged for it), first-call seconds
(compile + one run), and the max |difference| to the reference over the whole output. Timed runs of the executors are
interleaved round by round (a shared machine's load then falls on all alike); compare rows of one run only.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from stencilmap.backends import cost
from stencilmap.backends.cpu import _Runner, build, checked_inputs, compile_program, run_cpu
from stencilmap.backends.plan import Plan
from stencilmap.backends.reference import run_reference
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.ir import Program
from stencilmap.program.soda import parse_soda

J2D = """kernel: jacobi2d
input float: v(4096, *)
output float: w(0, 0) = (v(0, -1) + v(-1, 0) + v(0, 0) + v(1, 0) + v(0, 1)) * 0.2f
iterate: 2
border: preserve
"""
J3D = """kernel: jacobi3d
input float: v(256, 256, *)
output float: w(0, 0, 0) = (v(0, 0, -1) + v(0, -1, 0) + v(-1, 0, 0) + v(0, 0, 0) + v(1, 0, 0)
  + v(0, 1, 0) + v(0, 0, 1)) * 0.142857f
iterate: 2
border: preserve
"""

STREAM_C = r"""
#include <stdint.h>
#include <omp.h>
void copy(const float *restrict a, float *restrict b, int64_t n, int threads) {
  #pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) b[i] = a[i];
}
"""


@dataclass(frozen=True)
class Problem:
    name: str
    text: str
    shape: tuple[int, ...]
    steps: int

    def program(self) -> Program:
        return replace(bind_shape(parse_soda(self.text, "bench.soda"), {}, self.shape), iterate=self.steps)

    @property
    def cells(self) -> int:
        return int(np.prod(self.shape)) * self.steps


@dataclass
class Row:
    problem: str
    who: str
    gcells: float
    cpu_gcells: float  # by processor time: cells × threads / CPU seconds of every thread
    first: float | None
    diff: float | None
    note: str = ""


def stream_gbs(threads: int, repeat: int) -> float:
    """Copy bandwidth (read + write bytes per second) of a 256 MiB array, the best of ``repeat``."""
    import ctypes

    lib, _ = build(STREAM_C)
    n = 64 * 1024 * 1024
    a, b = np.ones(n, np.float32), np.zeros(n, np.float32)
    fn = lib.copy
    args = (
        a.ctypes.data_as(ctypes.c_void_p),
        b.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_int64(n),
        ctypes.c_int(threads),
    )
    fn(*args)

    def once() -> float:
        t = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t

    return 8 * n / min(once() for _ in range(repeat)) / 1e9


# ---------------------------------------------------------------------------------------------- peers


def numba_kernel(rank: int) -> Callable[..., Any]:
    """The Numba loop a user writes: interior points in parallel, boundary kept, two buffers."""
    import numba

    if rank == 2:

        @numba.njit(parallel=True, cache=False)
        def steps2(a: Any, b: Any, t: int) -> Any:
            n0, n1 = a.shape
            b[:, :] = a
            c = np.float32(0.2)
            for _ in range(t):
                for i in numba.prange(1, n0 - 1):
                    for j in range(1, n1 - 1):
                        b[i, j] = (a[i - 1, j] + a[i, j - 1] + a[i, j] + a[i, j + 1] + a[i + 1, j]) * c
                a, b = b, a
            return a

        return steps2

    @numba.njit(parallel=True, cache=False)
    def steps3(a: Any, b: Any, t: int) -> Any:
        n0, n1, n2 = a.shape
        b[:, :, :] = a
        c = np.float32(0.142857)
        for _ in range(t):
            for i in numba.prange(1, n0 - 1):
                for j in range(1, n1 - 1):
                    for k in range(1, n2 - 1):
                        b[i, j, k] = (
                            a[i - 1, j, k] + a[i, j - 1, k] + a[i, j, k - 1] + a[i, j, k]
                            + a[i, j, k + 1] + a[i, j + 1, k] + a[i + 1, j, k]
                        ) * c  # fmt: skip
            a, b = b, a
        return a

    return steps3


Runner = Callable[[], tuple[float, float]]  # one timed run: wall-clock and processor seconds


def clock() -> Callable[[], tuple[float, float]]:
    """Started now; called: the wall-clock and processor seconds (every thread of this process) since."""
    wall, cpu = time.perf_counter(), time.process_time()
    return lambda: (time.perf_counter() - wall, time.process_time() - cpu)


def numba_runner(p: Problem, v: Any, threads: int) -> tuple[Runner, float, Any] | None:
    try:
        import numba
    except ImportError:
        return None

    numba.set_num_threads(threads)
    fn = numba_kernel(len(p.shape))
    t0 = time.perf_counter()
    out = fn(v.copy(), np.empty_like(v), p.steps)
    first = time.perf_counter() - t0
    a, b = v.copy(), np.empty_like(v)

    def once() -> tuple[float, float]:
        a[...] = v
        t = clock()
        fn(a, b, p.steps)
        return t()

    return once, first, out


def pystencils_runner(p: Problem, v: Any, threads: int) -> tuple[Runner, float, Any] | None:
    try:
        import pystencils as ps
    except ImportError:
        return None
    x, y = v.copy(), v.copy()
    rank = len(p.shape)
    src, dst = ps.fields(f"src, dst: float32[{rank}D]", src=x, dst=y)
    nbrs = [tuple(o if k == ax else 0 for k in range(rank)) for ax in range(rank) for o in (-1, 1)]
    coeff = np.float32(0.2 if rank == 2 else 0.142857)
    expr = (sum((src[n] for n in nbrs), src[(0,) * rank])) * coeff
    t0 = time.perf_counter()
    config = ps.CreateKernelConfig()
    config.cpu.openmp.enable = True
    config.cpu.openmp.num_threads = threads
    kernel = ps.create_kernel([ps.Assignment(dst.center, expr)], config=config).compile()
    first = time.perf_counter() - t0

    def steps() -> Any:
        a, b = x, y
        a[...] = v
        b[...] = v
        for _ in range(p.steps):
            kernel(src=a, dst=b)
            a, b = b, a
        return a

    def once() -> tuple[float, float]:
        x[...] = v
        y[...] = v
        t = clock()
        a, b = x, y
        for _ in range(p.steps):
            kernel(src=a, dst=b)
            a, b = b, a
        return t()

    return once, first, steps().copy()


def devito_runner(p: Problem, v: Any, threads: int) -> tuple[Runner, float, Any] | None:
    """The same Jacobi as a Devito Operator: a two-slot TimeFunction updated on ``grid.interior`` (the
    boundary keeps the input, as ``border: preserve`` does), OpenMP with ``threads`` (set in ``main``)."""
    try:
        import devito  # type: ignore[import-untyped]
    except ImportError:
        return None
    rank = len(p.shape)
    grid = devito.Grid(shape=p.shape, dtype=np.float32)
    u = devito.TimeFunction(name="u", grid=grid, space_order=1, time_order=1)
    t, dims = grid.stepping_dim, grid.dimensions
    nbrs = [
        u[(t, *(d + (o if k == ax else 0) for k, d in enumerate(dims)))]
        for ax in range(rank)
        for o in (-1, 1)
    ]
    coeff = np.float32(0.2 if rank == 2 else 0.142857)
    eq = devito.Eq(u.forward, (sum(nbrs, u[(t, *dims)])) * coeff, subdomain=grid.interior)
    op = devito.Operator([eq])

    def once_() -> tuple[tuple[float, float], Any]:
        u.data[0] = v
        u.data[1] = v
        start = clock()
        op.apply(time_M=p.steps - 1)
        return start(), u.data[p.steps % 2]

    t0 = time.perf_counter()
    _, out = once_()  # the first apply generates and compiles the C code
    first = time.perf_counter() - t0
    return (lambda: once_()[0]), first, np.array(out)


def halide_runner(p: Problem, v: Any, threads: int) -> tuple[Runner, float, Any] | None:
    """The same Jacobi as a Halide pipeline (JIT), one step per ``realize`` into the interior of the other
    of two buffers (the boundary keeps the input, as ``border: preserve`` does), with the schedule of
    Halide's own blur app for CPUs (Ragan-Kelley et al., PLDI 2013, Fig. 1: rows in strips of 32 in
    parallel, the inner axis vectorised; 16 float lanes for AVX-512). Threads: ``HL_NUM_THREADS`` (``main``)."""
    try:
        import halide as hl  # type: ignore[import-not-found]
    except ImportError:
        return None
    rank = len(p.shape)
    src = hl.ImageParam(hl.Float(32), rank, "src")
    xs = [hl.Var(f"x{a}") for a in range(rank)]  # xs[0] is Halide's x: NumPy's last axis
    out = hl.Func("out")
    coeff = np.float32(0.2 if rank == 2 else 0.142857)

    def at(axis: int, o: int) -> Any:  # v at the point moved by o along NumPy axis ``axis``
        return src[[x + (o if a == rank - 1 - axis else 0) for a, x in enumerate(xs)]]

    # the program's order of the sum (strict_float below keeps Halide from reordering it: bit-exact)
    if rank == 2:
        terms = [at(0, -1), at(1, -1), at(0, 0), at(1, 1), at(0, 1)]
    else:
        terms = [at(0, -1), at(1, -1), at(2, -1), at(0, 0), at(2, 1), at(1, 1), at(0, 1)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    out[xs] = hl.strict_float(total * hl.f32(float(coeff)))  # no reordering of the sum
    outer, inner = hl.Var("yo"), hl.Var("yi")
    if rank == 2:
        out.split(xs[1], outer, inner, 32).parallel(outer).vectorize(xs[0], 16)
    else:
        out.parallel(xs[2]).vectorize(xs[0], 16)
    t0 = time.perf_counter()
    out.compile_jit()
    first = time.perf_counter() - t0
    x, y = v.copy(), v.copy()
    bufs = [hl.Buffer(x), hl.Buffer(y)]
    interiors = []
    for b in bufs:
        inner_b = b
        for d in range(rank):
            inner_b = inner_b.cropped(d, 1, inner_b.dim(d).extent() - 2)
        interiors.append(inner_b)

    def run() -> Any:
        for k in range(p.steps):
            src.set(bufs[k % 2])
            out.realize(interiors[(k + 1) % 2])
        return (x, y)[p.steps % 2]

    def once() -> tuple[float, float]:
        x[...] = v
        y[...] = v
        t = clock()
        run()
        return t()

    x[...] = v
    y[...] = v
    return once, first, run().copy()


def stencilmap_runner(prog: Program, values: dict[str, Any], threads: int) -> Runner:
    """``run_cpu``'s steps (its cost model's choice, its runner), timed alone: the runner's arrays are
    allocated and their pages touched before the clock starts, as ``run_cpu``'s ``compute_seconds`` does,
    so that processor time too counts only the kernel."""
    cp = compile_program(prog)
    plan = Plan(prog, cp.plan.order, cp.plan.fields, cp.plan.pairs, cp.plan.feeds, cp.plan.masked)
    shape = tuple(int(n or 0) for n in prog.shape)
    choice = cost.choose(plan, shape, prog.iterate, threads)
    nt = cost.use_nt(plan, shape)
    ins = checked_inputs(prog, values)

    def once() -> tuple[float, float]:
        runner = _Runner(cp, plan, shape, dict(ins), blocks=-(-prog.iterate // choice.block))
        t = clock()
        done = 0
        while done < prog.iterate:
            now = min(choice.block, prog.iterate - done)
            runner.step(now, choice.tile, threads, choice.scheme == "wave", nt, choice.planes)
            done += now
        return t()

    return once


# ----------------------------------------------------------------------------------------------- main


def measure(p: Problem, threads: int, repeat: int, ref_steps: int) -> list[Row]:
    """Every executor of one problem; timed runs interleaved round by round so that load from elsewhere
    on a shared machine falls on all of them alike; best of ``repeat`` per executor."""
    prog = p.program()
    values = make_inputs(prog, {}, 0)
    v = values["v"]
    short = replace(prog, iterate=min(ref_steps, p.steps))
    t = time.perf_counter()
    run_reference(short, values)
    ref_rate = int(np.prod(p.shape)) * short.iterate / (time.perf_counter() - t) / 1e9
    ref = run_reference(prog, values).outputs["w"]

    def diff(out: Any) -> float:
        return float(np.max(np.abs(np.asarray(out, np.float64) - ref)))

    t0 = time.perf_counter()
    res, timing = run_cpu(prog, values, threads=threads)
    ours_first = time.perf_counter() - t0
    runners: dict[str, tuple[Runner, float | None, float | None, str]] = {}
    found_numba = numba_runner(p, v, threads)
    if found_numba is not None:
        runners["Numba prange loop"] = (found_numba[0], found_numba[1], diff(found_numba[2]), "")
    found = pystencils_runner(p, v, threads)
    if found is not None:
        runners["pystencils"] = (found[0], found[1], diff(found[2]), "")
    found_devito = devito_runner(p, v, threads)
    if found_devito is not None:
        runners["Devito"] = (found_devito[0], found_devito[1], diff(found_devito[2]), "")
    found_halide = halide_runner(p, v, threads)
    if found_halide is not None:
        runners["Halide"] = (found_halide[0], found_halide[1], diff(found_halide[2]), "")
    note = "compiled" if timing.compiled else "from cache"
    runners["stencilmap cpu"] = (
        stencilmap_runner(prog, values, threads),
        ours_first,
        diff(res.outputs["w"]),
        note,
    )
    best = dict.fromkeys(runners, float("inf"))
    best_cpu = dict.fromkeys(runners, float("inf"))
    for _ in range(repeat):
        for name, (fn, *_rest) in runners.items():
            wall, cpu = fn()
            best[name], best_cpu[name] = min(best[name], wall), min(best_cpu[name], cpu)
    rows = [Row(p.name, "NumPy reference", ref_rate, 0.0, None, 0.0, f"{short.iterate} steps timed")]
    for name, (_, first_s, d, note) in runners.items():
        rate, by_cpu = p.cells / best[name] / 1e9, p.cells * threads / best_cpu[name] / 1e9
        rows.append(Row(p.name, name, rate, by_cpu, first_s, d, note))
    if found_numba is None:
        rows.append(Row(p.name, "Numba prange loop", 0.0, 0.0, None, None, "not installed"))
    if found is None:
        rows.append(Row(p.name, "pystencils", 0.0, 0.0, None, None, "not installed"))
    if found_devito is None:
        rows.append(Row(p.name, "Devito", 0.0, 0.0, None, None, "not installed"))
    if found_halide is None:
        rows.append(Row(p.name, "Halide", 0.0, 0.0, None, None, "not installed"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not a measurement")
    args = ap.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    # Devito reads these when imported: OpenMP code, our thread count, no per-call log lines.
    os.environ.setdefault("DEVITO_LANGUAGE", "openmp")
    os.environ.setdefault("DEVITO_LOGGING", "WARNING")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["HL_NUM_THREADS"] = str(args.threads)  # Halide's thread pool, read at its first use
    div = 4 if args.quick else 1
    problems = [
        Problem(f"2-D 5-pt {4096 // div}² × {50 // div}", J2D, (4096 // div, 4096 // div), 50 // div),
        Problem(f"3-D 7-pt {256 // div}³ × {20 // div}", J3D, (256 // div,) * 3, 20 // div),
        Problem(f"3-D 7-pt {256 // div}³ × 1", J3D, (256 // div,) * 3, 1),
    ]
    load_start = os.getloadavg()[0]
    bw = stream_gbs(args.threads, args.repeat)
    console = Console(width=160)
    table = Table(
        title=f"host backends, {args.threads} threads, best of {args.repeat}; STREAM copy {bw:.1f} GB/s"
    )
    for col in (
        "problem",
        "executor",
        "GCell/s",
        "% STREAM",
        "by CPU time",
        "first call s",
        "max |diff|",
        "note",
    ):
        table.add_column(col)
    for p in problems:
        rows = measure(p, args.threads, args.repeat, ref_steps=2)
        others = [r for r in rows if r.who not in ("NumPy reference", "stencilmap cpu")]
        peer = max((r.gcells for r in others), default=0.0)
        peer_cpu = max((r.cpu_gcells for r in others), default=0.0)
        for r in rows:
            ratio = ""
            if r.who == "stencilmap cpu" and peer:
                ratio = f" ({r.gcells / peer:.2f}× best peer; by CPU time {r.cpu_gcells / peer_cpu:.2f}×)"
            table.add_row(
                r.problem, r.who, f"{r.gcells:.2f}" if r.gcells else "-",
                f"{100 * r.gcells * 8 / bw:.0f}" if r.gcells else "-",
                f"{r.cpu_gcells:.2f}" if r.cpu_gcells else "-",
                f"{r.first:.2f}" if r.first is not None else "-",
                f"{r.diff:.2e}" if r.diff is not None else "-", r.note + ratio,
            )  # fmt: skip
    console.print(table)
    console.print(f"load average (1 min): {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
