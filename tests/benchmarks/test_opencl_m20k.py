"""benchmarks/opencl_m20k.py: the M20K-block count behind the FDTD notes of Table 4 (rows.csv,
docs/tutorials/opencl-pcm.md). Block counts follow from the builder and the Stratix V block shapes alone."""

from __future__ import annotations

from types import ModuleType

from tests.benchmarks.scripts import load


def m20k() -> ModuleType:
    return load("opencl_m20k")


def test_a_32_bit_register_takes_whole_blocks_of_its_cheapest_shape() -> None:
    from stencilmap.device.catalog import load_device
    from stencilmap.model.resources import ram_blocks

    blocks = load_device("de5").memory_blocks
    assert blocks is not None
    # Laplace's register at P_cell = 1 (8,196 floats): 17 blocks of 512 × 40, not the 12.8 its bits fill
    assert ram_blocks(32, 8196, blocks.shapes) == 17
    # one cell past 1,024 costs a third 512 × 40 block
    assert ram_blocks(32, 1024, blocks.shapes) == 2
    assert ram_blocks(32, 1026, blocks.shapes) == 3


def test_blocks_grow_by_the_same_count_per_pcm() -> None:
    mod = m20k()
    one, two, three = (mod.blocks_of("FDTD", "de5", 1, d) for d in (2, 3, 4))
    assert two - one == three - two > 0


def test_the_paper_design_of_table_2_leaves_less_room_than_fdtd_would_need() -> None:
    """The check the notes quote: with our FDTD PCM, the DE5's d = 45 overflows the 2,560 M20K blocks only
    beside more board-support blocks than Table 2's Laplace (1, 146), which the paper built, leaves."""
    mod = m20k()
    count = 2560
    laplace = mod.blocks_of("Laplace", "de5", 1, 146)
    fdtd_45 = mod.blocks_of("FDTD", "de5", 1, 45)
    assert laplace <= count
    assert count - fdtd_45 > count - laplace  # the BSP FDTD needs exceeds the room Laplace leaves
