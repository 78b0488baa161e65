"""What StencilFlow §V-B fusion (``--fuse``) changes on the corpus: stencils, latency L, on-chip buffers, ops.

Usage: .venv/bin/python benchmarks/fusion_table.py [--corpus DIR] [--markdown]

Every corpus program where something fuses, at its own shape and hints: StencilFlow programs on the
StencilFlow pipeline (internal + delay buffers, elements), SODA kernels on SODA (shared reuse buffers and
their delays, ``analysis.storage``). L is the pipeline latency of ``analysis.timing`` in cycles; ops are the
operations per point of all stencils (``analysis.ops``). ``guarded``: the pairs fused under an
``InBounds`` guard (a ``constant`` or ``copy`` read at a nonzero offset), which the cost decides
(``transform.fusion.NODE_OPS``); the others are fused wherever exact, as before.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from table import print_table

from stencilmap.analysis.ops import stencil_ops
from stencilmap.analysis.storage import shared_storage
from stencilmap.analysis.summary import analyze_program
from stencilmap.design.common import live_graph
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from stencilmap.transform import fuse

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
COLUMNS = ("program", "fused", "guarded", "stencils", "latency L", "buffers", "ops")


def buffers(program: Program) -> int:
    """On-chip elements of the program's own microarchitecture (StencilFlow or SODA)."""
    facts = analyze_program(program)
    if program.format == "stencilflow":
        return facts.internal_buffer_elements + facts.delay_buffer_elements
    shape = tuple(int(n or 0) for n in program.shape)
    return shared_storage(program, live_graph(program).graph, shape, program.hints.unroll).total


def ops(program: Program) -> int:
    return sum(stencil_ops(s).total for s in program.stencils)


def rows(corpus: Path) -> list[tuple[str, ...]]:
    out = []
    for path in sorted(corpus.glob("stencilflow/*.json")) + sorted(corpus.glob("soda/*.soda")):
        program = bind_shape(load_program(path), {}, None)
        fusion = fuse(program)
        if not fusion.fused:
            continue
        after = fusion.program
        out.append((
            f"{path.parent.name}/{path.name}",
            str(len(fusion.fused)),
            str(len(fusion.guarded)),
            f"{len(program.stencils)} → {len(after.stencils)}",
            f"{analyze_program(program).latency_cycles:,} → {analyze_program(after).latency_cycles:,}",
            f"{buffers(program):,} → {buffers(after):,}",
            f"{ops(program):,} → {ops(after):,}",
        ))  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    args = parser.parse_args()
    table = rows(args.corpus)
    print_table(COLUMNS, table, args.markdown)


if __name__ == "__main__":
    main()
