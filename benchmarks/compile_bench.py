"""First-call compile time of the cpu backend on every corpus program (issue 26 item 4).

Usage: .venv/bin/python benchmarks/compile_bench.py [--programs GLOB ...] [--no-kernel] [--repeat 3]

Each program is measured in a fresh child process with an empty compile cache (``STENCILMAP_CACHE_DIR``
pointed at a new temporary folder), so nothing of an earlier program is reused. Columns: the compiler's
processor time (user + system of the finished children, ``resource.getrusage(RUSAGE_CHILDREN)``: on a loaded
machine this is the figure that does not depend on the others), the wall time of the whole first call
(planning, code generation, compilation, loading), the generated C's size, and the kernel's GCell/s after
(best of ``--repeat`` runs on a grid of about 4 M points with the program's own time steps, at most 8).
Programs the compiled backend does not support are listed as such. The corpus is ``/work/shared/corpus``
(``$STENCILMAP_CORPUS``) and ``examples/``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("STENCILMAP_CORPUS", "/work/shared/corpus"))
CELLS = 1 << 22  # points of the grid the kernel rate is measured on


def programs() -> list[Path]:
    found = sorted((CORPUS / "soda").glob("*.soda")) + sorted((CORPUS / "stencilflow").glob("*.json"))
    return (
        found
        + sorted(ROOT.joinpath("examples").glob("*.soda"))
        + sorted(ROOT.joinpath("examples").glob("*.json"))
    )


def measure(path: str, kernel: bool, repeat: int) -> dict[str, object]:
    """In the child: the first call of ``compile_program`` and the kernel's rate after."""
    import resource
    import time
    from dataclasses import replace

    import numpy as np

    from stencilmap.backends import cpu
    from stencilmap.errors import StencilmapError
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape, make_inputs

    program = load_program(path)
    program = bind_shape(program, {}, None)
    cpu.flags(cpu.compiler())  # ``gcc --version`` once: not compile time
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        cp = cpu.compile_program(program)
    except StencilmapError as exc:
        return {"error": str(exc)}
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    gcc = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row: dict[str, object] = {
        "gcc": gcc,
        "wall": wall,
        "kb": len(cp.source) / 1024,
        "stencils": len(cp.plan.order),
    }
    if kernel:
        rank = program.rank
        edge = max(8, round(CELLS ** (1 / rank)))
        shape = tuple(edge for _ in range(rank))
        bound = replace(bind_shape(program, {}, shape), iterate=min(program.iterate, 8))
        try:
            values = make_inputs(bound, {}, 0, Path(path).parent)
        except StencilmapError as exc:
            row["kernel_error"] = str(exc)
            return row
        best = float("inf")
        for _ in range(repeat):
            _, timing = cpu.run_cpu(bound, values)
            best = min(best, timing.compute_seconds)
        row["gcells"] = int(np.prod(shape)) * bound.iterate / best / 1e9
    return row


def child(path: Path, kernel: bool, repeat: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="compile-bench-") as cache:
        env = {**os.environ, "STENCILMAP_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "src")}
        args = [sys.executable, __file__, "--child", str(path), "--repeat", str(repeat)]
        if not kernel:
            args.append("--no-kernel")
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"child failed: {tail}"}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", nargs="*", default=["*"], help="name globs (default: all)")
    ap.add_argument("--no-kernel", action="store_true", help="compile only")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help="one JSON object per program")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, not args.no_kernel, args.repeat)))
        return
    print(f"# load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}  (1/5/15 min)")
    print(f"{'program':40} {'stencils':>8} {'C KiB':>7} {'gcc CPU s':>10} {'wall s':>7} {'GCell/s':>8}")
    worst = 0.0
    for path in programs():
        if not any(fnmatch.fnmatch(path.name, g) or fnmatch.fnmatch(path.stem, g) for g in args.programs):
            continue
        row = child(path, not args.no_kernel, args.repeat)
        name = f"{path.parent.name}/{path.name}"
        if args.json:
            print(json.dumps({"program": name, **row}))
            continue
        if "gcc" not in row:
            print(f"{name:40} {'-':>8} {'-':>7} {'-':>10} {'-':>7} {'-':>8}  {str(row.get('error'))[:70]}")
            continue
        gcells = f"{row['gcells']:.3f}" if "gcells" in row else "-"
        gcc, wall = float(str(row["gcc"])), float(str(row["wall"]))
        worst = max(worst, gcc)
        print(f"{name:40} {row['stencils']:>8} {row['kb']:>7.1f} {gcc:>10.2f} {wall:>7.2f} {gcells:>8}")
    print(f"# slowest compile: {worst:.2f} s of gcc CPU; load now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
