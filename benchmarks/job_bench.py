"""The job around the kernel (issue 26 item 5): whole ``stencilmap run`` commands against their kernel time,
and the dask backend against the cpu backend, optionally against another source tree, interleaved.

Usage: .venv/bin/python benchmarks/job_bench.py [--before /work/main/src] [--rounds 3] [--quick] [--only TEXT]
[--backend cpu|dask]

Each case is one ``stencilmap run ... --json`` command in a child process (``python -m stencilmap``, the
import of the package included): "whole" is the child's wall time, "kernel" the run's own
``compute_seconds`` (dask: the graph's execution including chunk I/O), "CPU" the child's processor time
(user + system, ``RUSAGE_CHILDREN``: the figure the load of a shared machine changes least). Inputs come
from a ``.npy`` file (``--input v=FILE``), the way a real run gets them. Every case runs once untimed first
(the compile cache, ``STENCILMAP_CACHE_DIR``, is a temporary folder shared by the runs), then ``--rounds``
times, the trees and cases interleaved round by round; the table gives medians. ``--before SRC`` adds the
same rows for the source tree ``SRC`` (e.g. the main branch's ``src``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def cases(quick: bool) -> list[tuple[str, str, tuple[int, ...], int, str]]:
    """(label, program, shape, steps, backend)."""
    n2, n3 = (1024, 96) if quick else (4096, 256)
    out = []
    for steps in (50, 400, 1000) if not quick else (20,):  # 1000: a kernel over a second
        for backend in ("cpu", "dask"):
            out.append((f"jacobi2d {n2}² × {steps}", "jacobi2d.soda", (n2, n2), steps, backend))
    for backend in ("cpu", "dask"):
        out.append((f"jacobi3d {n3}³ × 20", "jacobi3d.soda", (n3, n3, n3), 20, backend))
    return out


def run_once(
    src: str, work: Path, program: str, shape: tuple[int, ...], steps: int, backend: str
) -> dict[str, float]:
    data = work / f"v-{'x'.join(map(str, shape))}.npy"
    if not data.exists():
        np.save(data, np.random.default_rng(0).random(shape, dtype=np.float32))
    out = work / "out"
    args = [sys.executable, "-m", "stencilmap", "run", str(EXAMPLES / program), "--backend", backend,
            "--input", f"v={data}", "--iterate", str(steps), "--out", str(out), "--json"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": src, "STENCILMAP_CACHE_DIR": str(work / "cache")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    whole = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    report = json.loads(done.stdout)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"whole": whole, "kernel": float(report["compute_seconds"]), "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="another source tree to compare (its src folder)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", help="only the cases whose label contains this text")
    ap.add_argument("--backend", choices=("cpu", "dask"), help="only this backend's cases")
    args = ap.parse_args()
    trees = [("after", str(ROOT / "src"))] + ([("before", args.before)] if args.before else [])
    todo = [
        c
        for c in cases(args.quick)
        if (args.only is None or args.only in c[0]) and (args.backend is None or c[4] == args.backend)
    ]
    got: dict[tuple[str, int], list[dict[str, float]]] = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="job-bench-") as tmp:
        work = Path(tmp)
        for _, src in trees:  # warm: compile caches, page cache of the input files
            for _, program, shape, steps, backend in todo:
                run_once(src, work, program, shape, min(steps, 2), backend)
        for _ in range(args.rounds):
            for tree, src in trees:
                for k, (_, program, shape, steps, backend) in enumerate(todo):
                    got.setdefault((tree, k), []).append(run_once(src, work, program, shape, steps, backend))
            load.append(os.getloadavg()[0])
    print(
        f"# load average (1 min) during the runs: {min(load):.1f}–{max(load):.1f}; {args.rounds} rounds, medians"
    )
    print(
        f"{'case':24} {'backend':7} {'tree':6} {'whole s':>8} {'kernel s':>9} {'whole/kernel':>12} {'CPU s':>7} {'vs cpu':>7}"
    )
    for tree, _ in trees:
        cpu_whole: dict[str, float] = {}
        for k, (label, _, _, _, backend) in enumerate(todo):
            rows = got[tree, k]
            whole = statistics.median(r["whole"] for r in rows)
            kernel = statistics.median(r["kernel"] for r in rows)
            cpu = statistics.median(r["cpu"] for r in rows)
            if backend == "cpu":
                cpu_whole[label] = whole
            ratio = f"{whole / cpu_whole[label]:.2f}×" if backend != "cpu" and label in cpu_whole else ""
            print(
                f"{label:24} {backend:7} {tree:6} {whole:>8.2f} {kernel:>9.2f} {whole / kernel:>11.2f}× {cpu:>7.2f} {ratio:>7}"
            )


if __name__ == "__main__":
    main()
