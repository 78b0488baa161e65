"""GPU execution speed (issue 26 item 6): stencilmap's ``gpu`` backend against CuPy and Numba-CUDA.

Usage: python benchmarks/gpu_bench.py [--repeat 5] [--quick] [--json results.json] [--chunks 1,8,32]
       [--unroll 1,2] [--rotate] [--program FILE --shape 2048,2048 [--steps 10]]

Rows, every one measured in the same run on the same device:

* device copy bandwidth (``cupy.copyto`` of a 1 GiB float32 array: read + write bytes over the time);
* one step of the 3-D 7-point Jacobi on 512³ (``border: preserve``): GCell/s and % of the copy bandwidth
  (8 bytes per cell: one read, one write; goal ≥ 85 %);
* the iterative 2-D 5-point Jacobi 8192² × 100 and 3-D 7-point 512³ × 20: GCell/s;
* with ``--program``, that program on ``--shape`` for ``--steps`` (stencilmap's rows alone: GCell/s, and the
  bytes its fields move a step — each input read, each stencil written — over the time as % of copy).

Executors: stencilmap's ``gpu.GpuRun`` (its ``launch``: compilation and transfers excluded; its default launch and
one point a thread, ``chunk=1``; ``--unroll``: the interior loop unrolled otherwise; ``--rotate``: columns along
the marched axis passed on in registers, ``gpu.Tuning``), a CuPy array
expression (slices, as users write it), a hand-written CuPy ``RawKernel`` and a Numba-CUDA ``@cuda.jit``
kernel, all in float32 with the same operation order. Correctness: every executor's output on a small grid
(64² × 3, 32³ × 3) against the NumPy reference (max |difference|; stencilmap's must be 0). Without CuPy or a
CUDA device it prints why and exits 0 (``--json`` then records ``"skipped"``). It ends with one verdict a
problem: stencilmap's fastest row against its default and against the fastest peer. Every executor is timed
alike (``timed``): after a quarter second of calls (the GPU's clocks up), the best of ``--repeat`` samples, each
enough calls back to back between two CUDA events for 20 ms; the first call alone is kept too (the table's
``cold/warm``: what an idle GPU's first launch costs). About a minute on an H100/H200.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

J2D = """kernel: jacobi2d
input float: v(64, *)
output float: w(0, 0) = (v(0, -1) + v(-1, 0) + v(0, 0) + v(1, 0) + v(0, 1)) * 0.2f
iterate: 2
border: preserve
"""
J3D = """kernel: jacobi3d
input float: v(32, 32, *)
output float: w(0, 0, 0) = (v(0, 0, -1) + v(0, -1, 0) + v(-1, 0, 0) + v(0, 0, 0) + v(1, 0, 0)
  + v(0, 1, 0) + v(0, 0, 1)) * 0.142857f
iterate: 2
border: preserve
"""
C2D = np.float32(0.2)
C3D = np.float32(0.142857)


@dataclass(frozen=True)
class Problem:
    """A timed problem: a grid, its steps and inputs, and the program — a Jacobi's text (the peers compute it
    too) or a bound program file (``--program``: stencilmap's rows alone)."""

    name: str
    shape: tuple[int, ...]
    steps: int
    inputs: dict[str, np.ndarray]
    text: str = ""
    bound: Any = None

    @property
    def peers(self) -> bool:
        return self.bound is None

    def program(self) -> Any:
        return self.bound if self.bound is not None else program(self.text, self.shape, self.steps)

    @property
    def cells(self) -> float:
        return float(np.prod(self.shape)) * self.steps

    def bytes_a_step(self) -> float:
        """Each input read once and each stencil's field written once (8 bytes a cell for the Jacobis)."""
        if self.bound is None:
            return 8 * float(np.prod(self.shape))
        p, cells = self.bound, float(np.prod(self.shape))
        writes = sum(cells * np.dtype(p.field_dtype(st.name)).itemsize for st in p.stencils)
        return float(sum(a.nbytes for a in self.inputs.values())) + writes


def problems(quick: bool) -> list[Problem]:
    s = 4 if quick else 1
    rng = np.random.default_rng(1)
    return [
        Problem(name, shape, steps, {"v": rng.random(shape, dtype=np.float32)}, text)
        for name, text, shape, steps in (
            ("3-D 7-pt one step", J3D, (512 // s, 512 // s, 512 // s), 1),
            ("2-D 5-pt iterative", J2D, (8192 // s, 8192 // s), 100 // s),
            ("3-D 7-pt iterative", J3D, (512 // s, 512 // s, 512 // s), 20 // s),
        )
    ]


def file_problem(path: Path, shape: tuple[int, ...], steps: int | None) -> Problem:
    """``--program``: a program file bound to ``shape`` (``steps``: its iterate), random inputs."""
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape, make_inputs

    prog = bind_shape(load_program(path), {}, shape)
    if steps is not None:
        prog = replace(prog, iterate=steps)
    shape = tuple(int(n or 0) for n in prog.shape)
    return Problem(path.name, shape, prog.iterate, make_inputs(prog, {}, 1), bound=prog)


def program(text: str, shape: tuple[int, ...], steps: int) -> Any:
    from stencilmap.program.data import bind_shape
    from stencilmap.program.soda import parse_soda

    return replace(bind_shape(parse_soda(text, "bench.soda"), {}, shape), iterate=steps)


#: stencilmap's rows: its default launch (each thread marching a chunk of axis 0), then one row per
#: ``--chunks`` value (1: one point a thread, the launch's alternative), measured beside it.
DEFAULT = "stencilmap gpu"


def chunk_list(text: str) -> list[int]:
    """``--chunks``, ``--unroll``, ``--shape``: positive integers, comma-separated."""
    try:
        chunks = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        chunks = []
    if not chunks or min(chunks) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return chunks


def ours_rows(chunks: list[int], unrolls: list[int], rotate: bool) -> dict[str, tuple[int | None, Any]]:
    """stencilmap's rows: name → (chunk, ``gpu.Tuning``); None: the backend's default."""
    from stencilmap.backends.gpu import Tuning

    rows: dict[str, tuple[int | None, Any]] = {
        DEFAULT: (None, Tuning()),
        **{f"stencilmap chunk={c}": (c, Tuning()) for c in chunks},
        **{f"stencilmap unroll={u}": (None, Tuning(unroll=u)) for u in unrolls},
    }
    if rotate:
        rows["stencilmap rotate"] = (None, Tuning(rotate=True))
    return rows


# ------------------------------------------------------------------------------------------- the peers


def cupy_slices(cp: Any, a: Any, b: Any, steps: int) -> Any:
    """The array expression users write: interior by slices, the border kept (``border: preserve``).
    Every peer steps from ``a`` into ``b`` and back (both hold the input at first: the border is kept)."""
    v = a
    for _ in range(steps):
        if v.ndim == 2:
            b[1:-1, 1:-1] = (a[1:-1, :-2] + a[:-2, 1:-1] + a[1:-1, 1:-1] + a[2:, 1:-1] + a[1:-1, 2:]) * C2D
        else:
            b[1:-1, 1:-1, 1:-1] = (
                a[1:-1, 1:-1, :-2]
                + a[1:-1, :-2, 1:-1]
                + a[:-2, 1:-1, 1:-1]
                + a[1:-1, 1:-1, 1:-1]
                + a[2:, 1:-1, 1:-1]
                + a[1:-1, 2:, 1:-1]
                + a[1:-1, 1:-1, 2:]
            ) * C3D
        a, b = b, a
    return a


RAW = r"""
extern "C" __global__ void j2d(const float *__restrict__ a, float *__restrict__ b, long long n0, long long n1) {
  long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j >= n1) return;
  long long p = i * n1 + j;
  if (i == 0 || j == 0 || i == n0 - 1 || j == n1 - 1) { b[p] = a[p]; return; }
  b[p] = (a[p - 1] + a[p - n1] + a[p] + a[p + n1] + a[p + 1]) * 0.2f;
}
extern "C" __global__ void j3d(const float *__restrict__ a, float *__restrict__ b, long long n0, long long n1,
                               long long n2) {
  long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x, j = blockIdx.y, i = blockIdx.z;
  if (k >= n2) return;
  long long s = n1 * n2, p = i * s + j * n2 + k;
  if (i == 0 || j == 0 || k == 0 || i == n0 - 1 || j == n1 - 1 || k == n2 - 1) { b[p] = a[p]; return; }
  b[p] = (a[p - 1] + a[p - n2] + a[p - s] + a[p] + a[p + s] + a[p + n2] + a[p + 1]) * 0.142857f;
}
"""


def cupy_raw(cp: Any) -> Callable[[Any, Any, Any, int], Any]:
    module = cp.RawModule(code=RAW)
    k2, k3 = module.get_function("j2d"), module.get_function("j3d")

    def run(cp_: Any, a: Any, b: Any, steps: int) -> Any:
        v = a
        for _ in range(steps):
            if v.ndim == 2:
                n0, n1 = v.shape
                k2(((n1 + 255) // 256, n0), (256,), (a, b, np.int64(n0), np.int64(n1)))
            else:
                n0, n1, n2 = v.shape
                k3(((n2 + 255) // 256, n1, n0), (256,), (a, b, np.int64(n0), np.int64(n1), np.int64(n2)))
            a, b = b, a
        return a

    return run


def numba_cuda() -> Callable[[Any, Any, Any, int], Any] | None:
    try:
        from numba import cuda
    except ImportError:
        return None

    @cuda.jit  # type: ignore[misc]
    def j2d(a: Any, b: Any) -> None:
        i, j = cuda.grid(2)
        n0, n1 = a.shape
        if i < n0 and j < n1:
            if i == 0 or j == 0 or i == n0 - 1 or j == n1 - 1:
                b[i, j] = a[i, j]
            else:
                b[i, j] = (a[i, j - 1] + a[i - 1, j] + a[i, j] + a[i + 1, j] + a[i, j + 1]) * C2D

    @cuda.jit  # type: ignore[misc]
    def j3d(a: Any, b: Any) -> None:
        i, j, k = cuda.grid(3)
        n0, n1, n2 = a.shape
        if i < n0 and j < n1 and k < n2:
            if i == 0 or j == 0 or k == 0 or i == n0 - 1 or j == n1 - 1 or k == n2 - 1:
                b[i, j, k] = a[i, j, k]
            else:
                b[i, j, k] = (
                    a[i, j, k - 1]
                    + a[i, j - 1, k]
                    + a[i - 1, j, k]
                    + a[i, j, k]
                    + a[i + 1, j, k]
                    + a[i, j + 1, k]
                    + a[i, j, k + 1]
                ) * C3D

    def run(cp: Any, a: Any, b: Any, steps: int) -> Any:
        v = a
        for _ in range(steps):
            if v.ndim == 2:
                n0, n1 = v.shape
                j2d[((n0 + 7) // 8, (n1 + 31) // 32), (8, 32)](a, b)
            else:
                n0, n1, n2 = v.shape
                j3d[((n0 + 1) // 2, (n1 + 3) // 4, (n2 + 63) // 64), (2, 4, 64)](a, b)
            a, b = b, a
        return a

    return run


# ------------------------------------------------------------------------------------------- measuring


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """Per problem, stencilmap's fastest row (which launch and tuning to make the default) against its
    default and the fastest peer: what a device session decides from."""
    out = []
    for problem in dict.fromkeys(r["problem"] for r in rows):
        mine = [r for r in rows if r["problem"] == problem and r["executor"].startswith("stencilmap")]
        peers = [r for r in rows if r["problem"] == problem and not r["executor"].startswith("stencilmap")]
        if not mine:
            continue
        best = max(mine, key=lambda r: r["GCell/s"])
        default = next((r for r in mine if r["executor"] == DEFAULT), best)
        line = (
            f"{problem}: best {best['executor']} {best['GCell/s']:.1f} GCell/s ({best['pct_copy']:.1f} % of copy), "
            f"{best['GCell/s'] / default['GCell/s']:.2f}x the default"
        )
        if peers:
            top = max(peers, key=lambda r: r["GCell/s"])
            line += f", {best['GCell/s'] / top['GCell/s']:.2f}x the best peer ({top['executor']})"
        out.append(line)
    return out


def timed(
    cp: Any, fn: Callable[[], Any], repeat: int, warm: float = 0.25, sample: float = 0.02
) -> tuple[float, float]:
    """Seconds a call, warm and cold. Cold: the first call alone (it may compile). Warm: the best of ``repeat``
    samples, each ``k`` calls back to back between CUDA events — ``k`` makes a sample at least ``sample``
    seconds, so a single short launch is timed as a stream of them, not as one event pair's latency — after
    ``warm`` seconds of calls, so that the GPU's clocks are up (the first device run timed a 1 ms step
    between GPU idle gaps: 23 % of copy for the hand-written kernel too)."""

    def run(k: int) -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(k):
            fn()
        end.record()
        end.synchronize()
        return float(cp.cuda.get_elapsed_time(start, end)) / 1e3

    cold = each = run(1)
    spent = 0.0
    while spent < warm:  # each: seconds a call, as the last sample measured them
        k = max(1, math.ceil(sample / max(each, 1e-7)))
        took = run(k)
        spent, each = spent + took, took / k
    k = max(1, math.ceil(sample / max(each, 1e-7)))
    return min(run(k) for _ in range(repeat)) / k, cold


def copy_bandwidth(cp: Any, repeat: int, quick: bool) -> float:
    n = (1 << 28) // (16 if quick else 1)
    a, b = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
    return 2 * 4 * n / timed(cp, lambda: cp.copyto(b, a), repeat)[0]


def stencilmap_gpu(prog: Any, inputs: dict[str, np.ndarray], how: tuple[int | None, Any]) -> Any:
    """The program loaded on the GPU as a row says (``how``: its chunk and ``gpu.Tuning``, ``ours_rows``):
    a ``gpu.GpuRun``, whose ``launch`` is timed as the peers' calls are."""
    from stencilmap.backends.gpu import GpuRun

    chunk, tuning = how
    return GpuRun(prog, inputs, chunk=chunk, tuning=tuning)


def check(
    cp: Any, peers: dict[str, Any], mine: dict[str, tuple[int | None, Any]]
) -> dict[str, dict[str, float]]:
    """Max |difference| to the NumPy reference on small grids, per problem rank and executor (stencilmap's
    launches with a chunk of 3 too: small grids march no more than a point by default)."""
    from stencilmap.backends.gpu import Tuning
    from stencilmap.backends.reference import run_reference

    odd = {"stencilmap chunk=3": (3, Tuning()), "stencilmap chunk=3 rotate": (3, Tuning(rotate=True))}

    out: dict[str, dict[str, float]] = {}
    rng = np.random.default_rng(0)
    for text, shape in ((J2D, (64, 64)), (J3D, (32, 32, 32))):
        prog = program(text, shape, 3)
        v = rng.random(shape, dtype=np.float32)
        ref = run_reference(prog, {"v": v}).outputs["w"]
        row = {}
        for who, how in {**mine, **odd}.items():
            run = stencilmap_gpu(prog, {"v": v}, how)
            run.launch()
            row[who] = float(np.max(np.abs(run.result().outputs["w"] - ref)))
        for who, fn in peers.items():
            got = fn(cp, cp.asarray(v), cp.asarray(v), 3)
            row[who] = float(np.max(np.abs(cp.asnumpy(got) - ref)))
        out[f"{len(shape)}-D"] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="grids and steps divided by 4 (a smoke run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    parser.add_argument(
        "--chunks",
        type=chunk_list,
        default=[1],
        help="comma-separated points a thread to time beside the default launch (1: one point a thread)",
    )
    parser.add_argument(
        "--unroll",
        type=chunk_list,
        default=[],
        help="comma-separated interior unrolls to time beside the default",
    )
    parser.add_argument(
        "--rotate", action="store_true", help="also time columns along the marched axis kept in registers"
    )
    parser.add_argument(
        "--program", type=Path, default=None, help="also time this program file (stencilmap only)"
    )
    parser.add_argument("--shape", type=chunk_list, default=None, help="--program's grid, e.g. 2048,2048")
    parser.add_argument("--steps", type=int, default=None, help="--program's time steps (default: its own)")
    args = parser.parse_args()
    if (args.program is None) != (args.shape is None):
        parser.error("--program and --shape go together")
    results: dict[str, Any] = {"quick": args.quick, "repeat": args.repeat}
    try:
        import cupy as cp

        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no CuPy, or no driver/device: CuPy raises its own errors
        count, why = 0, f"{type(exc).__name__}: {exc}"
    else:
        why = "no CUDA device"
    if count < 1:
        print(f"gpu_bench: skipped ({why})")
        if args.json:
            args.json.write_text(json.dumps({**results, "skipped": why}, indent=2) + "\n", encoding="utf-8")
        return 0
    props = cp.cuda.runtime.getDeviceProperties(0)
    results["device"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    peers: dict[str, Any] = {"CuPy slices": cupy_slices, "CuPy RawKernel": cupy_raw(cp)}
    nb = numba_cuda()
    if nb is not None:
        peers["Numba-CUDA"] = nb
    for who in list(peers):  # a peer that does not run here (numba-cuda against a newer NumPy) is named
        try:
            for shape in ((16, 16), (8, 8, 8)):
                peers[who](cp, cp.zeros(shape, cp.float32), cp.zeros(shape, cp.float32), 1)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            results.setdefault("peer_errors", {})[who] = error
            print(f"gpu_bench: {who} skipped ({error})")
            del peers[who]
    try:  # the peers still run where stencilmap's own dependencies are missing
        import stencilmap.backends.gpu
        import stencilmap.program.soda  # noqa: F401
    except Exception as exc:
        results["stencilmap_unavailable"] = f"{type(exc).__name__}: {exc}"
        print(f"gpu_bench: stencilmap rows skipped ({results['stencilmap_unavailable']})")
    ours = "stencilmap_unavailable" not in results
    mine = ours_rows(args.chunks, args.unroll, args.rotate) if ours else {}
    started = time.perf_counter()
    bw = copy_bandwidth(cp, args.repeat, args.quick)
    results["copy_GBps"] = bw / 1e9
    results["max_abs_diff"] = check(cp, peers, mine) if ours else {}
    rows: list[dict[str, Any]] = []
    timed_problems = problems(args.quick)
    if ours and args.program is not None:
        timed_problems.append(file_problem(args.program, tuple(args.shape), args.steps))
    for pb in timed_problems:
        times: dict[str, tuple[float, float]] = {}
        if ours:
            prog = pb.program()
            for who, how in mine.items():
                run = stencilmap_gpu(prog, pb.inputs, how)
                times[who] = timed(cp, run.launch, args.repeat)
                del run
        for who, fn in peers.items() if pb.peers else ():  # buffers made outside the timing
            a, b = cp.asarray(pb.inputs["v"]), cp.asarray(pb.inputs["v"])
            times[who] = timed(cp, lambda fn=fn, a=a, b=b, n=pb.steps: fn(cp, a, b, n), args.repeat)
            del a, b
        for who, (t, cold) in times.items():
            rows.append(
                {
                    "problem": f"{pb.name} {'×'.join(map(str, pb.shape))} × {pb.steps}",
                    "executor": who,
                    "seconds": t,
                    "cold_seconds": cold,
                    "GCell/s": pb.cells / t / 1e9,
                    "pct_copy": 100 * pb.bytes_a_step() * pb.steps / t / bw,
                }
            )
    results["rows"] = rows
    results["seconds"] = time.perf_counter() - started
    print(f"device: {results['device']}; copy {bw / 1e9:.0f} GB/s (read + write); best of {args.repeat}")
    print(f"{'problem':44s} {'executor':20s} {'GCell/s':>9s} {'% copy':>7s} {'cold/warm':>9s}")
    for r in rows:
        cold = r["cold_seconds"] / r["seconds"]
        print(f"{r['problem']:44s} {r['executor']:20s} {r['GCell/s']:9.2f} {r['pct_copy']:7.1f} {cold:9.2f}")
    print("max |diff| vs NumPy reference:", json.dumps(results["max_abs_diff"]))
    results["verdicts"] = verdicts(rows)
    print("\n".join(results["verdicts"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
