"""SODA reuse and delay storage per corpus kernel: one buffer per reader (before), one per producer (now),
and the SODA paper's method computed analytically (``analysis.storage``; sodac's own figures:
``benchmarks/sodac_compare.py``).

Usage: .venv/bin/python benchmarks/soda_storage.py [--corpus DIR] [--markdown]

Elements at k = 1, 2, 4 PEs, each kernel at its own shape (SODA ``*`` dimensions at the defaults):
"before" is analytic (the former per-reader builder), "now" is counted in the built design (taps, FIFO
depths, and what the channels into the chains hold beyond a plain link), "SODA method" is analytic.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from table import print_table

from stencilmap.analysis.storage import Storage, per_reader_storage, soda_method_storage
from stencilmap.design.common import live_graph
from stencilmap.design.registry import BuildConfig, build
from stencilmap.design.soda import chain_storage
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "soda"
COLUMNS = (
    "kernel",
    "k",
    "before reuse",
    "before delay",
    "now reuse",
    "now delay",
    "SODA reuse",
    "SODA delay",
)


def rows(corpus: Path) -> list[tuple[str, int, Storage, Storage, Storage]]:
    """(kernel, k, before, now, SODA method) for every kernel of ``corpus`` and k = 1, 2, 4."""
    out = []
    for path in sorted(corpus.glob("*.soda")):
        program = bind_shape(load_program(path), {}, None)
        shape = tuple(int(n or 0) for n in program.shape)
        graph = live_graph(program).graph
        for k in (1, 2, 4):
            now = chain_storage(build("soda", program, BuildConfig(unroll=k)))
            before = per_reader_storage(program, graph, shape, k)
            out.append((path.stem, k, before, now, soda_method_storage(program, graph, shape, k)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    args = parser.parse_args()
    table = [
        (name, str(k), *(f"{n:,}" for s in (b, now, soda) for n in (s.reuse, s.delay)))
        for name, k, b, now, soda in rows(args.corpus)
    ]
    print_table(COLUMNS, table, args.markdown)


if __name__ == "__main__":
    main()
