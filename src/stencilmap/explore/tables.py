"""What the timing model needs about every candidate of one builder, as arrays over (q, tile, lanes).

The facts of ``model.timing.design_timing`` — latency L and drain D of q chained copies, beats V,
bytes per bank, the reuse-chain rate, the tile-transition bubble — are computed here for the whole
space at once, from the analysis and without building a design per point: ``chain_latencies`` runs the
latency recurrence over arrays of stream shapes and lanes, the tile counts follow ``design.tiling``, the
chain rate SODA's reuse buffers (``analysis.reuse``). ``tests/explore`` checks every array against the
built designs.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.sharing import shared_buffers
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.arch import arch as arch_of
from stencilmap.design.common import bank_of, live_graph, with_iterate
from stencilmap.design.registry import BuildConfig, build
from stencilmap.explore.space import Space
from stencilmap.model.timing import chain_latencies, segment_rate
from stencilmap.program.ir import Program

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class ArchTables:
    """One builder's candidates: ``tiles`` (rows) × ``lanes`` (columns) × q = 1 … q_max (first axis)."""

    arch: str
    lanes: Array  # (m,)
    tiles: tuple[tuple[int, ...], ...]  # (t,) tile sizes of the inner axes (the untiled sizes first)
    tile_points: Array  # (t,) points of one tile's stream
    latency: Array  # (q, t, m) L
    drain: Array  # (q, t, m) D
    reach: Array  # (t, m) the largest reach in beats: a tile transition's bubble
    chain_rate: Array  # (t, m)
    tile_count: Array  # (q, t) tiles per launch
    valid: Array  # (q, t) the tile exceeds the halo of q stages
    banks: tuple[int, ...]
    read_bytes: Array  # (q, t, banks) bytes read per launch
    write_bytes: Array  # (banks,) bytes written per launch

    @property
    def vectors(self) -> Array:
        """(q, t, m) V = tiles · ⌈N_tile / P⌉."""
        beats = -(-self.tile_points[:, None] // self.lanes[None, :])
        result: Array = self.tile_count[:, :, None] * beats[None]
        return result


def arch_tables(space: Space, arch: str) -> ArchTables:
    """The tables of ``arch`` over ``space`` (its PE latencies read from one built design)."""
    program, shape = space.program, space.shape
    tiles = space.tiles_of(arch)
    streams = [(shape[0], *(min(t, n) for t, n in zip(tile, shape[1:], strict=True))) for tile in tiles]
    lanes = np.array(space.lanes, dtype=np.int64)
    pe_latency = pe_latencies(program, arch, space.builder_device)
    chained = chain_latencies(program, space.q_max, streams, space.lanes, pe_latency)
    count, valid = tile_counts(program, shape, tiles, space.q_max)
    tile_points = np.array([prod(s) for s in streams], dtype=np.int64)
    tiled = arch_of(arch).tiled
    banks, read, write = bank_bytes(program, count, tile_points, tiled=tiled)
    rate = np.ones((len(tiles), len(lanes)))
    if tiled:  # SODA's reuse chains (§3.3)
        lat = space.device.operator_latencies()
        rate = np.array([[soda_chain_rate(program, s, int(k), lat) for k in lanes] for s in streams])
    return ArchTables(
        arch=arch,
        lanes=lanes,
        tiles=tiles,
        tile_points=tile_points,
        latency=chained.latency,
        drain=chained.drain,
        reach=chained.reach,
        chain_rate=rate,
        tile_count=count,
        valid=valid,
        banks=banks,
        read_bytes=read,
        write_bytes=write,
    )


def pe_latencies(program: Program, arch: str, device: str | None = None) -> dict[str, int]:
    """λ of every stencil as the builder's PEs have it on ``device`` (read from a one-lane, one-stage
    design; no device: the default operator latencies)."""
    design = build(arch, program, BuildConfig(unroll=1, iterate=1, vector=1, device=device))
    found = {str(m.param("stencil")): m.latency for m in design.modules if m.kind == "pe"}
    return {st.name: found.get(st.name, 0) for st in program.stencils}


def tile_counts(
    program: Program, shape: tuple[int, ...], tiles: tuple[tuple[int, ...], ...], q_max: int
) -> tuple[Array, Array]:
    """(q, t) tiles per launch and whether the tiling exists (``design.tiling.axis_tiling``).

    An axis of n points cut into tiles of T overlapping by the halo H(q) of q stages has
    1 + ⌈(n − T) / (T − H(q))⌉ tiles (1 when n ≤ T); H grows by the same amount with every stage.
    """
    q = np.arange(1, q_max + 1)[:, None]
    h1 = program_halo(program)
    h2 = program_halo(with_iterate(program, 2)) if q_max > 1 else h1
    count = np.ones((q_max, len(tiles)), dtype=np.int64)
    valid = np.ones((q_max, len(tiles)), dtype=bool)
    for a in range(1, len(shape)):
        one, two = h1.low[a] + h1.high[a], h2.low[a] + h2.high[a]
        halo = one + (q - 1) * (two - one)
        t = np.array([tile[a - 1] for tile in tiles], dtype=np.int64)[None, :]
        cut = shape[a] > t
        stride = t - halo
        valid &= ~cut | (stride >= 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            extra = np.where(cut & (stride >= 1), -(-(shape[a] - t) // np.maximum(stride, 1)), 0)
        count *= 1 + extra
    return count, valid


def bank_bytes(
    program: Program, count: Array, tile_points: Array, tiled: bool
) -> tuple[tuple[int, ...], Array, Array]:
    """Banks used and bytes per launch: (q, t, banks) read, (banks,) written (``timing.design_banks``)."""
    live = live_graph(program)
    shape = tuple(int(n or 0) for n in program.shape)
    reads = []
    for node in live.inputs:
        inp = program.input(node.field)
        assert inp is not None
        own = prod(shape[a] for a in inp.axes)
        # a tiled SODA reader re-reads the halos of every tile; an untiled one reads its field once
        points = (
            np.where(count > 1, count * tile_points[None, :], own) if tiled else np.full(count.shape, own)
        )
        reads.append((bank_of(inp.banks), itemsize(inp.dtype) * points))
    writes = []
    for out, _ in live.outputs:
        st = program.stencil(out)
        assert st is not None
        writes.append((bank_of(st.banks), itemsize(st.dtype) * prod(shape)))
    banks = tuple(sorted({b for b, _ in reads} | {b for b, _ in writes}))
    read = np.zeros((*count.shape, len(banks)))
    write = np.zeros(len(banks))
    for b, amount in reads:
        read[:, :, banks.index(b)] += amount
    for b, size in writes:
        write[banks.index(b)] += size
    return banks, read, write


def soda_chain_rate(
    program: Program, stream_shape: tuple[int, ...], k: int, latencies: OperatorLatencies | None = None
) -> float:
    """The slowest reuse-chain segment of a SODA design with ``k`` PEs (``timing.segment_rate``): its
    one buffer per producer (``analysis.sharing``), scheduled with the device's operator ``latencies``."""
    live = live_graph(program)
    timing = pipeline_timing(program, stream_shape, k, latencies, graph=live.graph)
    rate = 1.0
    for buf in shared_buffers(program, live.graph, timing, stream_shape).values():
        for chain in buf.chains:
            for _, _, beats in chain.segments:
                if beats > 1:
                    rate = min(rate, segment_rate(beats - 1))
    return rate
