"""Overlapping tiles (SODA §4.2): where each tile reads its input and where its valid outputs go.

The outermost axis is streamed whole; every inner axis ``a`` wider than its tile size ``T`` is cut into
tiles of exactly ``T`` points (the hardware linearizes with ``T``, so every tile has that width). With
the program's accumulated halo ``h_lo`` / ``h_hi`` on that axis (summed over stages, SODA §2.2), the
outputs of a tile within ``h_lo`` of its low edge or ``h_hi`` of its high edge read the tile's local
border instead of the neighbouring data, so they are invalid — except at the grid's own border, where
the program's boundary rule is exactly what the tile computes. Tiles therefore overlap by
``H = h_lo + h_hi``: tile t + 1 starts ``H`` points before tile t ends (stride ``T − H``); the last tile
is shifted back to end at the grid's end (overlapping its neighbour by more than ``H``).

Each output point is written by exactly one tile, the one that *owns* it: ownership boundaries sit at
``start_t + T − h_hi`` (= ``start_{t+1} + h_lo`` for unshifted tiles), and every owned point lies in its
tile's valid region. (SODA's own host code places the outputs of tile t at ``t·T`` as if tiles did not
overlap; ours places them by ownership.)::

    input   |0 ............................................................ n|
    tile 0  [-------------------T-----------------)
    tile 1                      [--H--|-------------------T------)
    owned   [0 ........ t0 ..........)[......... t1 ..............)
                         start_1 + h_lo = start_0 + T − h_hi
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product
from math import prod

from stencilmap.analysis.halos import Halo
from stencilmap.errors import StencilmapError


@dataclass(frozen=True, slots=True)
class AxisTiling:
    """The tiles along one inner axis: ``starts`` of tiles of ``tile`` points on an axis of ``size``."""

    axis: int
    size: int
    tile: int
    halo_low: int
    halo_high: int
    starts: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.starts)

    def valid(self, t: int) -> tuple[int, int]:
        """Global [lo, hi) of the outputs of tile ``t`` that do not depend on its local borders."""
        start = self.starts[t]
        lo = 0 if t == 0 else start + self.halo_low
        hi = self.size if t == self.count - 1 else start + self.tile - self.halo_high
        return lo, hi

    def owned(self, t: int) -> tuple[int, int]:
        """Global [lo, hi) of the outputs tile ``t`` writes: consecutive tiles' ranges abut."""
        lo = 0 if t == 0 else self.starts[t - 1] + self.tile - self.halo_high
        hi = self.size if t == self.count - 1 else self.starts[t] + self.tile - self.halo_high
        return lo, hi


def axis_tiling(axis: int, size: int, tile: int, halo_low: int, halo_high: int) -> AxisTiling:
    """Tiles of ``tile`` points over ``size`` points, overlapping by the halo (see the module docstring)."""
    if size <= tile:
        return AxisTiling(axis, size, size, halo_low, halo_high, (0,))
    stride = tile - halo_low - halo_high
    if stride < 1:
        raise StencilmapError(
            f"tile size {tile} on axis {axis} must exceed the accumulated halo {halo_low} + {halo_high}"
        )
    starts = [0]
    while starts[-1] + tile < size:
        starts.append(min(starts[-1] + stride, size - tile))
    return AxisTiling(axis, size, tile, halo_low, halo_high, tuple(starts))


@dataclass(frozen=True, slots=True)
class TilePlan:
    """How a grid of ``shape`` is streamed: tile by tile, each tile a stream of ``stream_shape``."""

    shape: tuple[int, ...]
    axes: tuple[AxisTiling, ...]  # one per inner axis 1 … rank − 1

    @property
    def stream_shape(self) -> tuple[int, ...]:
        return (self.shape[0], *(a.tile for a in self.axes))

    @property
    def tile(self) -> tuple[int, ...]:
        return tuple(a.tile for a in self.axes)

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(a.count for a in self.axes)

    @property
    def total(self) -> int:
        return prod(self.counts)

    @property
    def tiled(self) -> bool:
        return self.total > 1

    @property
    def points_read(self) -> int:
        """Elements streamed in: every tile in full, halos re-read."""
        return self.total * prod(self.stream_shape)

    def tiles(self) -> Iterator[tuple[int, ...]]:
        """Tile indices (one per inner axis) in streaming order (C order)."""
        return product(*(range(a.count) for a in self.axes))

    def input_box(self, index: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
        """Global [lo, hi) per axis of the input tile ``index`` reads."""
        inner = tuple((a.starts[t], a.starts[t] + a.tile) for a, t in zip(self.axes, index, strict=True))
        return ((0, self.shape[0]), *inner)

    def owned_box(self, index: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
        """Global [lo, hi) per axis of the outputs tile ``index`` writes."""
        return ((0, self.shape[0]), *(a.owned(t) for a, t in zip(self.axes, index, strict=True)))


def tile_plan(shape: tuple[int, ...], tile: tuple[int, ...] | None, halo: Halo) -> TilePlan:
    """The tiling of ``shape`` by ``tile`` (sizes of all but the outermost axis; None: untiled)."""
    inner = len(shape) - 1
    sizes = tile if tile is not None else shape[1:]
    if len(sizes) != inner or any(t < 1 for t in sizes):
        raise StencilmapError(
            f"tile {list(sizes)} must give {inner} positive size(s) for a {len(shape)}-D grid"
        )
    axes = tuple(
        axis_tiling(a, shape[a], sizes[a - 1], halo.low[a], halo.high[a]) for a in range(1, len(shape))
    )
    return TilePlan(shape, axes)
