"""CGRA tiles (CGRA paper §VIII-A, Table I): a system of n CGRA tiles, each a whole fabric with its own
workers and its own share of the memory bandwidth (the paper's 16 tiles: 16 × 100 GB/s), splits the grid.

The split cuts the outermost axis into n bands of (nearly) equal rows; tile t computes the outputs of its
band [lo, hi) from a slab of the inputs widened by the program's accumulated halo along that axis
(``analysis.halos.program_halo``: every stage and ``iterate`` copy) and clipped to the grid, so each tile
is the same program on a smaller grid and its band's outputs are exactly the whole grid's: a point's
reads reach at most the halo, and a slab's edge inside the grid is at least the halo away from the band.
Pure functions: which rows each tile owns and loads, the tile's program, the slices of its inputs, and
where its outputs go.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.halos import program_halo
from stencilmap.errors import StencilmapError, param
from stencilmap.program.ir import Program

#: The paper's system (§VIII-A): 16 tiles occupy about the V100's chip area.
PAPER_TILES = 16


@dataclass(frozen=True, slots=True)
class Tile:
    """Tile ``index`` owns the outputs of rows [lo, hi) of the outermost axis; its readers load the rows
    [slab_lo, slab_hi) (the band and its halo, within the grid)."""

    index: int
    lo: int
    hi: int
    slab_lo: int
    slab_hi: int

    @property
    def rows(self) -> int:
        return self.slab_hi - self.slab_lo


def split_tiles(program: Program, n: int) -> tuple[Tile, ...]:
    """The ``n`` tiles of the shape-bound ``program`` (see the module docstring)."""
    if n < 1:
        raise StencilmapError(f"{param('tiles')} must be ≥ 1, got {n}")
    extent = int(program.shape[0] or 0)
    if n > extent:
        raise StencilmapError(
            f"{param('tiles')} {n}: the outermost axis has {extent} rows, fewer than the tiles that split it"
        )
    halo = program_halo(program)
    below, above = halo.low[0], halo.high[0]
    out = []
    for t in range(n):
        lo, hi = t * extent // n, (t + 1) * extent // n
        out.append(Tile(t, lo, hi, max(0, lo - below), min(extent, hi + above)))
    return tuple(out)


def tile_program(program: Program, tile: Tile) -> Program:
    """``program`` on the grid of ``tile``'s slab (the same stencils; the outermost axis shortened)."""
    shape = (tile.rows, *(int(n or 0) for n in program.shape[1:]))
    return program.with_shape(shape)


def input_slice(program: Program, field: str, tile: Tile) -> tuple[int, slice] | None:
    """The axis of input ``field``'s array that is the iteration space's outermost, and the slab's rows of
    it; None when the input does not span that axis (every tile reads all of it)."""
    axes = program.field_axes(field)
    if 0 not in axes:
        return None
    return axes.index(0), slice(tile.slab_lo, tile.slab_hi)


def band(tile: Tile) -> tuple[slice, slice]:
    """Where the tile's band lies: in its own output (rows of its slab) and in the whole grid's."""
    return slice(tile.lo - tile.slab_lo, tile.hi - tile.slab_lo), slice(tile.lo, tile.hi)
