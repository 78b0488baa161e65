"""The OpenCL paper's Table 4 cell by cell: does ``explore`` pick the paper's (P_cell, d)? And Table 5.

Usage: .venv/bin/python benchmarks/opencl_table4.py [--markdown]

For each of the 12 cells (4 applications × DE5, 395-D8, 395-AB) it picks the optimum as the paper's
§4.3 search does (``stencilmap.explore.opencl.opencl_optimum``: ``explore`` over the PCM design space at
the board's lower clock limit, §5.1, ranked by eq. 1 with I_total / d kernel executions) and runs
``estimate`` on the paper's (P_cell, d) and on ours with the device's own clock model, and prints: the paper's choice and ours, our predicted time for both and their ratio (paper's ÷ ours), the
measured time of Table 5 (DE5 and 395-D8 only; the paper had no 395-AB board) with our prediction for the
paper's design at the f_core Table 4 reports for it, and the resource that binds (``why``).

The programs are the paper's (Table 1): ``examples/laplace2d.soda``, ``jacobi2d_5pt.soda``,
``jacobi2d_9pt.soda`` and ``fdtd2d_iterate.json`` (three fields fed back by name, C1–C4 replayed), on the
grids of Table 1 (N × M with N the row, the fast axis: C-order shapes (M, N)) and 15,360 time steps
(Table 2's; for the other applications the count Fig. 14's Gflop/s range implies: 133–181 Gflop/s on the
DE5 is 15,360 steps of Table 5's times, e.g. 5-point Jacobi 4,096·32,768·9 flops·15,360 / 139.2 s = 133).
The bank annotations (``dram``) are dropped: the paper's kernels leave global memory interleaved (§5).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

from table import print_table

from stencilmap.api import estimate
from stencilmap.explore.opencl import opencl_optimum
from stencilmap.model.report import EstimateReport
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ITERATIONS = 15_360
BOARDS = ("de5", "395-d8", "395-ab")
#: Table 1: the program and the C-order grid of each application.
APPS = {
    "Laplace": ("laplace2d.soda", (32768, 4096)),
    "5-pt Jacobi": ("jacobi2d_5pt.soda", (32768, 4096)),
    "9-pt Jacobi": ("jacobi2d_9pt.soda", (32768, 4096)),
    "FDTD": ("fdtd2d_iterate.json", (16384, 1024)),
}
#: Table 4: (P_cell, d, constrained resource, f_core MHz) per application and board.
TABLE4 = {
    ("Laplace", "de5"): (8, 21, "ALM", 283),
    ("Laplace", "395-d8"): (4, 44, "ALM", 253),
    ("Laplace", "395-ab"): (8, 32, "ALM", 248),
    ("5-pt Jacobi", "de5"): (2, 25, "DSP", 296),
    ("5-pt Jacobi", "395-d8"): (4, 27, "ALM", 256),
    ("5-pt Jacobi", "395-ab"): (4, 17, "DSP", 248),
    ("9-pt Jacobi", "de5"): (1, 28, "DSP", 283),
    ("9-pt Jacobi", "395-d8"): (4, 14, "ALM", 234),
    ("9-pt Jacobi", "395-ab"): (2, 19, "DSP", 226),
    ("FDTD", "de5"): (1, 44, "Memory", 291),
    ("FDTD", "395-d8"): (2, 30, "ALM", 227),
    ("FDTD", "395-ab"): (2, 34, "Memory", 247),
}
#: Table 5: measured processing time (s) on the two boards the authors had.
TABLE5 = {
    ("Laplace", "de5"): 45.3,
    ("Laplace", "395-d8"): 46.9,
    ("5-pt Jacobi", "de5"): 139.2,
    ("5-pt Jacobi", "395-d8"): 78.0,
    ("9-pt Jacobi", "de5"): 259.8,
    ("9-pt Jacobi", "395-d8"): 164.6,
    ("FDTD", "de5"): 20.5,
    ("FDTD", "395-d8"): 21.6,
}
COLUMNS = (
    "application", "board", "paper (P, d)", "ours (P, d)", "ours s", "paper's s", "ratio",
    "Table 5 s", "ours @ f_core s", "why",
)  # fmt: skip
NAMES = {"alm": "ALM", "dsp": "DSP", "memory_bits": "memory", "register": "registers"}


@dataclass(frozen=True)
class Cell:
    """One cell of Table 4: the paper's choice and ours, both predicted by our model."""

    app: str
    board: str
    paper: tuple[int, int]
    ours: tuple[int, int]
    ours_seconds: float
    paper_estimate: EstimateReport
    at_fcore: EstimateReport
    ours_binding: str
    ours_use: float

    @property
    def ratio(self) -> float:
        return self.paper_estimate.predicted_seconds / self.ours_seconds


def paper_program(app: str) -> Program:
    """The application on Table 1's grid, its global memory interleaved (no ``dram`` pins)."""
    file, shape = APPS[app]
    program = bind_shape(load_program(EXAMPLES / file), {}, shape)
    inputs = tuple(replace(i, banks=()) for i in program.inputs)
    return replace(program, inputs=inputs, stencils=tuple(replace(s, banks=()) for s in program.stencils))


def cell(app: str, board: str) -> Cell:
    program = paper_program(app)
    p, d, _, f_core = TABLE4[(app, board)]
    best = opencl_optimum(program, board, ITERATIONS)
    assert best is not None, f"nothing fits: {app} on {board}"
    ours = estimate(program, board, "pcm", unroll=best.lanes, iterate=best.iterate, iterations=ITERATIONS)
    paper = estimate(program, board, "pcm", unroll=p, iterate=d, iterations=ITERATIONS)
    at_fcore = estimate(program, board, "pcm", unroll=p, iterate=d, iterations=ITERATIONS, clock_mhz=f_core)
    binding = best.binding
    return Cell(app, board, (p, d), (best.lanes, best.iterate), ours.predicted_seconds, paper, at_fcore,
                binding, dict(best.utilization)[binding])  # fmt: skip


def why(c: Cell) -> str:
    """Which resource binds ours and the paper's choice, and what separates them."""
    ours = f"{NAMES.get(c.ours_binding, c.ours_binding)} {100 * c.ours_use:.1f}%"
    r = c.paper_estimate.resources
    assert r is not None
    over = [n for n, _ in r.available if r.utilization(n) > r.limit(n)]
    if c.ours == c.paper:
        return f"same; {ours} binds"
    if over:
        worst = max(over, key=r.utilization)
        return f"paper's needs {100 * r.utilization(worst):.0f}% {NAMES.get(worst, worst)}; ours: {ours}"
    paper_binding = r.binding or "-"
    use = f"{NAMES.get(paper_binding, paper_binding)} {100 * r.utilization(paper_binding):.1f}%"
    pd_ours, pd_paper = c.ours[0] * c.ours[1], c.paper[0] * c.paper[1]
    return f"P·d {pd_ours} vs {pd_paper}; ours: {ours}, paper's: {use}"


def row(c: Cell) -> tuple[str, ...]:
    measured = TABLE5.get((c.app, c.board))
    return (
        c.app,
        c.board,
        f"({c.paper[0]}, {c.paper[1]})",
        f"({c.ours[0]}, {c.ours[1]})",
        f"{c.ours_seconds:.2f}",
        f"{c.paper_estimate.predicted_seconds:.2f}",
        f"{c.ratio:.3f}",
        "-" if measured is None else f"{measured:.1f}",
        f"{c.at_fcore.predicted_seconds:.2f}",
        why(c),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    args = parser.parse_args()
    rows = [row(cell(app, board)) for app in APPS for board in BOARDS]
    print_table(COLUMNS, rows, args.markdown)


if __name__ == "__main__":
    main()
