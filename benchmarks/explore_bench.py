"""Design-space exploration speed: candidate points evaluated per second on the issue's large space.

Usage: .venv/bin/python benchmarks/explore_bench.py [--repeat N] [--markdown]

jacobi3d.soda on de5 (256³, 1,000 iterations, q ≤ 1024, 24 tile sizes per axis, no simulation): the space
of the exploration issue (≥ 100,000 points in under 10 s). Best of N runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from table import print_table

from stencilmap.explore import ExploreConfig, explore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CASES = (("jacobi3d.soda", "de5", (256, 256, 256), 1000), ("laplace2d.soda", "de5", (4096, 32768), 15360))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    args = parser.parse_args()
    rows = []
    for name, device, shape, iterations in CASES:
        cfg = ExploreConfig(
            program=EXAMPLES / name, device=device, iterations=iterations, shape=shape, max_iterate=1024,
            tiles_per_axis=24, simulate=False,
        )  # fmt: skip
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = explore(cfg)
            best = min(best, time.perf_counter() - start)
        points = result.points_evaluated
        rows.append((name, device, f"{points:,}", f"{best:.2f}", f"{points / best:,.0f}"))
    print_table(("program", "device", "points", "seconds", "points/s"), rows, args.markdown)


if __name__ == "__main__":
    main()
