"""Wall time of the main commands on large StencilFlow programs: how each grows with the stencil count.

Usage: .venv/bin/python benchmarks/large_programs.py [--sizes 100,300,1000,3000] [--kind chain,dag]
       [--commands load,analyze,estimate,...] [--markdown] [--keep DIR]

Writes StencilFlow JSON programs of N stencils (weather codes have hundreds to thousands) and times each
command on them in a fresh child process (``stencilmap ...`` as a user runs it, so the ~0.5 s start-up is in
every figure), with an empty compile cache for the cpu backend. Two shapes:

- ``chain``: N 3-D stencils in a row, each reading the previous one at 5 offsets (a Jacobi-like sweep);
- ``dag``: a wide DAG: N/2 stencils each reading a few of 4 inputs at 7 offsets, then a reduction tree of
  pairwise sums down to one output (N - 1 stencils in all, rounded to a power of two of leaves).

Commands: ``load`` (parse and verify: ``stencilmap.load``), ``analyze``, ``estimate`` on ``--device``
(stratix10, the one with links to other devices) split over ``--devices`` of them (default 64, at most
N), ``codegen`` of the HLS C++ and of the cpu backend's C (``c-openmp``, written, not compiled), ``run``
with the numpy and the cpu backend (compiled with gcc, empty cache), ``simulate`` (cycle by cycle, the
simulator's engine already compiled; ``--max-cycles`` 10⁸: the default limit is shorter than a long chain's
latency). A
command over ``--timeout`` seconds is shown as ``>T``. The last column is the 1-minute load average after
the row: the machine is shared, so compare figures of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from table import print_table

ROOT = Path(__file__).resolve().parent.parent
EXE = ROOT / ".venv" / "bin" / "stencilmap"
SHAPE = (8, 16, 32)
COMMANDS = ("load", "analyze", "estimate", "codegen-hls", "codegen-c", "run-numpy", "run-cpu", "simulate")


def chain(n: int, shape: tuple[int, ...] = SHAPE) -> dict[str, object]:
    """N stencils in a row: s_t reads s_{t-1} (a, the input, for s0) at 5 offsets, constant boundary."""
    program: dict[str, object] = {}
    prev = "a"
    for t in range(n):
        name = f"s{t}"
        program[name] = {
            "computation_string": f"{name} = 0.25 * ({prev}[i-1,j,k] + {prev}[i+1,j,k] + {prev}[i,j-1,k]"
            f" + {prev}[i,j+1,k]) + 0.125 * {prev}[i,j,k+1]",
            "boundary_conditions": {prev: {"type": "constant", "value": 0.0}},
            "data_type": "float32",
        }
        prev = name
    return {
        "inputs": {"a": {"data": "random:0-1", "data_type": "float32"}},
        "outputs": [prev],
        "dimensions": list(shape),
        "program": program,
    }


def dag(n: int, shape: tuple[int, ...] = SHAPE) -> dict[str, object]:
    """A wide DAG of about N stencils: L leaves (a power of two, L ≈ N/2) each read 2 of the 4 inputs at
    a star of offsets, then a pairwise sum tree of L - 1 stencils down to one output."""
    leaves = 1
    while 2 * leaves <= max(2, (n + 1) // 2):
        leaves *= 2
    inputs = ("u", "v", "w", "p")
    program: dict[str, object] = {}
    level = []
    for t in range(leaves):
        x, y = inputs[t % 4], inputs[(t + 1 + t // 4) % 4]
        if y == x:
            y = inputs[(t + 2) % 4]
        c = 0.5 + (t % 7) / 16
        name = f"l{t}"
        program[name] = {
            "computation_string": f"{name} = {c} * {x}[i,j,k] + 0.1 * ({x}[i-1,j,k] + {x}[i+1,j,k]"
            f" + {y}[i,j-1,k] + {y}[i,j+1,k] + {y}[i,j,k-1] + {y}[i,j,k+1])",
            "boundary_conditions": {x: {"type": "copy"}, y: {"type": "constant", "value": 0.0}},
            "data_type": "float32",
        }
        level.append(name)
    depth = 0
    while len(level) > 1:
        nxt = []
        for t in range(0, len(level), 2):
            name = f"r{depth}_{t // 2}"
            program[name] = {
                "computation_string": f"{name} = {level[t]}[i,j,k] + {level[t + 1]}[i,j,k]",
                "boundary_conditions": {},
                "data_type": "float32",
            }
            nxt.append(name)
        level, depth = nxt, depth + 1
    return {
        "inputs": {x: {"data": "random:0-1", "data_type": "float32"} for x in inputs},
        "outputs": level,
        "dimensions": list(shape),
        "program": program,
    }


def command(name: str, path: Path, out: Path, device: str, devices: int, src: Path | None) -> list[str]:
    """The command line of one benchmark command on program ``path`` (``src``: another checkout's
    ``src`` folder runs instead of this one's)."""
    exe = [sys.executable, "-m", "stencilmap"] if src else [str(EXE)]
    if name == "load":
        return [sys.executable, "-c", f"import stencilmap as sm; sm.load({str(path)!r})"]
    if name == "analyze":
        return [*exe, "analyze", str(path), "--format", "json"]
    if name == "estimate":
        return [
            *exe,
            "estimate",
            str(path),
            "--device",
            device,
            "--devices",
            str(devices),
            "--format",
            "json",
        ]
    if name == "codegen-hls":
        return [*exe, "codegen", str(path), "--target", "hls", "--out", str(out / "hls"), "--force"]
    if name == "codegen-c":
        return [*exe, "codegen", str(path), "--target", "c-openmp", "--out", str(out / "c"), "--force"]
    if name.startswith("run-"):
        backend = name.removeprefix("run-")
        return [*exe, "run", str(path), "--backend", backend, "--out", str(out / backend), "--format", "json"]
    if name == "simulate":
        return [
            *exe,
            "simulate",
            str(path),
            "--out",
            str(out / "sim"),
            "--max-cycles",
            "100000000",
            "--format",
            "json",
        ]
    raise ValueError(name)


def timed(argv: list[str], timeout: float, cache: Path | None, src: Path | None) -> str:
    """The wall time of one child process as a table cell: seconds, ``>T`` past the timeout, or the
    start of the error. ``cache``: the compile cache it starts with (None: the user's)."""
    env = {**os.environ, **({"STENCILMAP_CACHE_DIR": str(cache)} if cache else {})}
    if src:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f">{timeout:.0f}"
    wall = time.perf_counter() - start
    if done.returncode != 0:
        line = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"exit {done.returncode}: {line[:60]}"
    return f"{wall:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument(
        "--sizes", default="100,300,1000,3000", help="stencil counts N (default: %(default)s)"
    )
    parser.add_argument(
        "--kind", default="chain,dag", help="program shapes: chain, dag (default: %(default)s)"
    )
    parser.add_argument("--commands", default=",".join(COMMANDS), help="default: %(default)s")
    parser.add_argument("--device", default="stratix10", help="estimate's device (default: %(default)s)")
    parser.add_argument(
        "--devices", type=int, default=64, help="estimate's --devices, at most N (default: 64)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per command (default: 900)")
    parser.add_argument(
        "--keep", type=Path, help="write the programs and outputs here (default: a temporary)"
    )
    parser.add_argument("--write-only", action="store_true", help="only write the programs (into --keep)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    parser.add_argument(
        "--before",
        type=Path,
        help="also time another checkout's src folder (e.g. `git archive REV src | tar -x -C DIR`, then "
        "DIR/src), each command right after this one's: rows 'before' and 'after' under the same load",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = args.kind.split(",")
    names = args.commands.split(",")
    for name in names:
        if name not in COMMANDS:
            parser.error(f"unknown command {name!r} (known: {', '.join(COMMANDS)})")
    makers = {"chain": chain, "dag": dag}
    with tempfile.TemporaryDirectory(prefix="large_programs_") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        print(f"# load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min)")
        for kind in kinds:
            for n in sizes:
                prog = makers[kind](n)
                count = len(prog["program"])  # type: ignore[arg-type]
                path = folder / f"{kind}{n}.json"
                path.write_text(json.dumps(prog, indent=1))
                if args.write_only:
                    continue
                out = folder / f"{kind}{n}.out"
                trees: list[tuple[str, Path | None]] = [("before", args.before), ("after", None)]
                trees = trees if args.before else [("", None)]
                cells: dict[str, list[str]] = {label: [] for label, _ in trees}
                for name in names:
                    devices = min(args.devices, count)
                    for label, src in trees:
                        with tempfile.TemporaryDirectory(prefix="cache_", dir=scratch) as cache:
                            argv = command(name, path, out, args.device, devices, src)
                            fresh = Path(cache) if name == "run-cpu" else None  # simulate's engine: cached
                            cells[label].append(timed(argv, args.timeout, fresh, src))
                        print(
                            f"# {kind} {count} {name} {label}: {cells[label][-1]}",
                            file=sys.stderr,
                            flush=True,
                        )
                for label, _ in trees:
                    rows.append((kind, str(count), *([label] if label else []), *cells[label],
                                 f"{os.getloadavg()[0]:.2f}"))  # fmt: skip
        if not args.write_only:
            head = (
                "program",
                "stencils",
                *(["code"] if args.before else []),
                *(f"{c} s" for c in names),
                "load",
            )
            print_table(head, rows, args.markdown)


if __name__ == "__main__":
    main()
