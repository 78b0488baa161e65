"""Could M20K blocks be the internal memory that binds Table 4's FDTD designs? A check of the hypothesis.

Usage: .venv/bin/python benchmarks/opencl_m20k.py [--markdown]

Table 4 of the OpenCL paper says FDTD is bound by internal memory on the DE5 at (P_cell, d) = (1, 44) and on
the 395-AB at (2, 34). Our memory model counts bits (Table 2's "internal memory" column is bits: Laplace's
R_shift is 262,000 bits = 8,196 floats per PCM, at every P_cell), and by bits those designs use 29-37%.
A Stratix V holds on-chip memory in M20K blocks of 20 Kbit, each 512 × 40, 1,024 × 20 or 2,048 × 10 bits
(Stratix V Device Handbook, vol. 1, "Embedded Memory Blocks"; the ``memory_blocks`` of the device files),
and a memory that does not fill its blocks wastes the rest: a compile fails when the blocks run out, not
the bits. This script counts, for the designs our ``pcm`` builder makes, the M20K blocks of every storage
that logic does not hold (more than ``logic_storage_max_bits``), each storage its own memory of its width
and depth (``model.resources.ram_blocks``: the cheapest of the three shapes), and prints:

* the blocks of the paper's design and of one PCM more (the step is the blocks per PCM);
* for the DE5, the blocks of Table 2's Laplace (1, 146), a design the paper built and measured: whatever the
  board support package takes must fit beside it (at most the ``room`` left);
* ``BSP needed``: how many blocks the board support package would have to take for d + 1 PCMs not to fit
  (2,560 / 2,640 / 2,567 blocks, Table 3's 50.0 / 51.5 / 50.1 Mbit).

The DE5's FDTD would need more than 940 blocks of BSP while Laplace (1, 146) leaves at most 78: counting
blocks does not make our FDTD PCM memory-bound at the paper's d (it would need about 55 blocks per PCM where
ours takes 36, i.e. about 1.1 Mbit of capacity per PCM for a grid whose rows hold 1,024 cells).
"""

from __future__ import annotations

import argparse
from math import ceil

from opencl_table4 import TABLE4, paper_program
from table import print_table

from stencilmap.analysis.intensity import itemsize
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig, build
from stencilmap.device.catalog import Device, load_device
from stencilmap.model.resources import ram_blocks

CELLS = (("FDTD", "de5"), ("FDTD", "395-d8"), ("FDTD", "395-ab"), ("Laplace", "de5"))
#: Table 2: a Laplace design the paper compiled and measured on the DE5 (76.1% of the memory bits)
TABLE2_LARGEST = ("Laplace", "de5", 1, 146)
COLUMNS = (
    "application", "board", "Table 4", "constrained", "(P, d) blocks", "(P, d+1) blocks", "per PCM",
    "blocks", "BSP needed", "memory bits %",
)  # fmt: skip


def m20k_blocks(design: Design, device: Device) -> int:
    """M20K blocks of every storage of ``design`` that logic does not hold: shift registers (``lanes``
    side by side, ``size / lanes`` deep) and channels (``width`` elements, ``depth`` deep)."""
    model, blocks = device.resource_model, device.memory_blocks
    assert model is not None and blocks is not None
    shapes, total = blocks.shapes, 0
    for m in design.modules:
        if m.kind == "shift_register":
            lanes = int(str(m.param("lanes")))
            width, depth = (
                8 * itemsize(str(m.param("dtype"))) * lanes,
                ceil(int(str(m.param("size"))) / lanes),
            )
            if width * depth > model.logic_storage_max_bits:
                total += ram_blocks(width, depth, shapes)
    for c in design.channels:
        width = 8 * itemsize(c.dtype) * c.width
        if width * c.depth > model.logic_storage_max_bits:
            total += ram_blocks(width, c.depth, shapes)
    return total


def blocks_of(app: str, board: str, p: int, d: int) -> int:
    design = build("pcm", paper_program(app), BuildConfig(unroll=p, iterate=d, device=board))
    return m20k_blocks(design, load_device(board))


def memory_bits_percent(app: str, board: str, p: int, d: int) -> float:
    from stencilmap.api import estimate

    report = estimate(paper_program(app), board, "pcm", unroll=p, iterate=d, iterations=15_360)
    assert report.resources is not None
    return 100 * report.resources.utilization("memory_bits")


def row(app: str, board: str) -> tuple[str, ...]:
    p, d, constrained, _ = TABLE4[(app, board)]
    device = load_device(board)
    assert device.memory_blocks is not None
    at, more = blocks_of(app, board, p, d), blocks_of(app, board, p, d + 1)
    count = device.memory_blocks.count
    return (
        app,
        board,
        f"({p}, {d})",
        constrained,
        f"{at:,}",
        f"{more:,}",
        f"{more - at}",
        f"{count:,}",
        f"> {count - more:,}",
        f"{memory_bits_percent(app, board, p, d):.1f}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    print_table(COLUMNS, [row(app, board) for app, board in CELLS], args.markdown)
    app, board, p, d = TABLE2_LARGEST
    used = blocks_of(app, board, p, d)
    device = load_device(board)
    assert device.memory_blocks is not None
    room = device.memory_blocks.count - used
    print(f"\nTable 2's {app} ({p}, {d}) on the {board}: {used:,} blocks, room for a BSP of at most {room:,}")


if __name__ == "__main__":
    main()
