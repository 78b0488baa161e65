"""The cpu backend's cost model: which driver, how many fused steps ``T_b`` and which tile.

Two drivers (``cgen.sm_block``, ``cwave.sm_wave``) and, per driver, every ``T_b`` of ``BLOCKS`` and every
tile of powers of two are scored in units of "one streamed step's compute": the work including redundant
halo points, plus memory time ``KAPPA`` per pass over the grid (``ceil(T / T_b)`` passes, inputs read with
their halo amplification), plus per-row and per-tile overheads. Candidates whose working set does not fit the
cache (``TILE_BYTES`` for overlapped tiles, ``WAVE_BYTES`` for the wavefront's rings) are not considered.
The constants were calibrated on the 2-core development machine with ``benchmarks/host_bench.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Stencil

from .cgen import NT_BYTES, TMAX, joint_planes
from .cwave import reads_0, ring_sizes
from .plan import Plan, margins, stencil_refs

#: Scratch bytes per thread an overlapped tile may use: this machine's L2 is 1 MiB per core.
TILE_BYTES = 768 * 1024
#: Ring bytes per thread of the wavefront driver: its planes are touched in order, a few at a time, so rings
#: larger than L2 still stream from the shared L3 (32 MiB here) at little cost (``L3_COST``).
WAVE_BYTES = 6 * 1024 * 1024
L3_COST = 0.02
#: Memory time of one streamed pass relative to its compute time, and the overhead of one row in points.
KAPPA = 2.0
ROW_COST = 64
#: The per-stage call of the wavefront driver on one tick's planes, in points.
PLANE_COST = 256
#: Planes a stage of the wavefront computes per tick (``sm_wave``'s ``blk``): more share a call's cost and
#: read the previous stage's new planes while they are still in cache, at the price of larger rings.
PLANES = (1, 2, 4, 8, 16)
#: The layer condition (Stengel et al., ICS 2015) in L1: a stage computing consecutive planes reuses the
#: planes it read for the last one only while they (``R0 + R1 + 1`` of each full-rank field read) and the
#: plane it writes fit the 32 KiB L1; past that every plane is read again from L2. Its cost per point, in
#: points (a 2-D 5-point wave on 4,096-point rows against 1,024: 11.1 against 12.7 GCell/s).
L1_BYTES = 32 * 1024
LAYER_COST = 0.15
BLOCKS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 25, 32, 50, 64)
#: The share of a stage's work saved where a 3-D stencil computes the rows of several planes at once
#: (``cgen.joint_planes``: the reads they share loaded once): a call must cover that many planes (the wave's
#: planes a tick, an overlapped tile's depth). The wave on 256³ × 20, 2 threads: 8.8 GCell/s with 4 planes
#: a tick at once against 7.2 plane by plane.
JOINT_SAVE = 0.25


@dataclass(frozen=True)
class Choice:
    """How a run is executed: ``scheme`` "tiles" (overlapped) or "wave", steps per block, tile, score."""

    scheme: str
    block: int
    tile: tuple[int, ...]
    cost: float
    planes: int = 1


def choose(
    plan: Plan,
    shape: Sequence[int],
    iterate: int,
    threads: int,
    block: int | None = None,
    scheme: str | None = None,
) -> Choice:
    """The cheapest (scheme, T_b, tile) within the options given (``block``/``scheme`` fix one)."""
    if block is not None and not 1 <= block <= TMAX:
        raise StencilmapError(f"block must be between 1 and {TMAX} steps, got {block}")
    if scheme not in (None, "tiles", "wave"):
        raise StencilmapError(f"scheme must be 'tiles' or 'wave', got {scheme!r}")
    if scheme == "wave" and len(shape) < 2:
        raise StencilmapError("the wave scheme needs a program of rank ≥ 2")
    if block is not None:
        blocks = [min(block, iterate)]
    elif not plan.feeds:
        blocks = [1]
    else:
        blocks = [b for b in BLOCKS if b <= iterate] or [1]
    # One step fuses nothing: the wave's gain (no halo along axis 0) is a plane's reuse the overlapped
    # tiles mostly get from L2 anyway, and it measured a few percent slower there.
    streaming = len(shape) >= 2 and plan.feeds
    schemes = [scheme] if scheme else (["tiles", "wave"] if streaming else ["tiles"])
    best = Choice("tiles", blocks[0], tuple(shape), math.inf)
    # Outputs big enough to be streamed (``use_nt``'s rule) are computed row by row in their last step.
    big = {o for o in plan.program.outputs if _bytes(plan, o, shape) >= NT_BYTES}
    joints = [(joint_planes(plan, st), st.name in big) for st in plan.order]
    for b in blocks:
        for s in schemes:
            c = _best_tile(plan, shape, b, iterate, threads, s, joints)
            if c.cost < best.cost:
                best = c
    return best


def use_nt(plan: Plan, shape: Sequence[int]) -> bool:
    """The wavefront driver's ``nt``: streaming stores for outputs too large to be read back from the cache,
    in iterative programs (the only ones it runs). ``sm_block`` applies the same size rule (``NT_BYTES``)
    itself, to every output a step writes straight, one step included."""
    return plan.feeds and min(_bytes(plan, o, shape) for o in plan.program.outputs) >= NT_BYTES


def _best_tile(
    plan: Plan,
    shape: Sequence[int],
    steps: int,
    iterate: int,
    threads: int,
    scheme: str,
    joints: Sequence[tuple[int, bool]],
) -> Choice:
    tables = margins(plan, steps)
    per_r = [_total_margin(plan, table, len(shape)) for table in tables]
    halo_in = [0] * len(shape)  # the inputs' halo in the first step of a block, plus what it reads
    for i in plan.program.inputs:
        m = tables[-1][i.name]
        if m is not None:
            halo_in = [max(h, lo + hi) for h, (lo, hi) in zip(halo_in, m, strict=True)]
    passes = -(-iterate // steps) / max(1, iterate)
    best = Choice(scheme, steps, tuple(shape), math.inf)
    wave = scheme == "wave"
    profile = _wave_profile(plan, shape, steps) if wave else ([], 0, 0, 0)
    tiles = _tiles_profile(plan, shape, per_r)
    extent, halos = np.asarray(shape, dtype=np.float64), np.asarray(per_r, dtype=np.float64)
    redundant: dict[tuple[int, ...], float] = {}  # a tile's work with its halos, the same for any planes
    for tile, planes in _candidates(shape, wave):
        fit = _wave_penalty(profile, shape, tile, planes) if wave else _tiles_fit(tiles, shape, tile)
        if fit is None:
            continue
        if tile not in redundant:
            # Each step's points with its halo, over the tile's, averaged over the steps (np.prod multiplies
            # a step's few factors left to right, np.mean sums pairwise: the floats of the scalar loops).
            ts = np.asarray(tile, dtype=np.float64)
            redundant[tile] = float(np.mean(np.prod(np.minimum(extent, ts + halos) / ts, axis=1)))
        work = redundant[tile] * (1 - JOINT_SAVE * _joint_share(joints, steps, planes if wave else tile[0]))
        # One streamed step: neighbouring tiles' halos come from cache (measured: whole-plane tiles win).
        amp = _read_amplification(shape, tile, halo_in, skip_axis0=wave) if plan.feeds else 1.0
        cost = float(work) + KAPPA * passes * (1 + amp) / 2 + fit
        cost += ROW_COST / min(shape[-1], tile[-1] + per_r[-1][-1]) if len(shape) > 1 else 0.0
        count = _count(tile, shape)
        cost += 256 / float(math.prod(tile))  # a tile's scheduling ≈ 256 points
        if wave:
            cost += PLANE_COST / float(planes * math.prod(tile[1:]))
            cost += LAYER_COST if _layer_bytes(profile, shape, tile) > L1_BYTES else 0.0
        cost += 1.0 if count < threads else (0.1 if count < 2 * threads else 0.0)
        if cost < best.cost:
            best = Choice(scheme, steps, tile, cost, planes)
    return best


def mean(values: Sequence[float]) -> float:
    """``np.mean(values)`` bit for bit, without building an array (the cost model averages a few dozen floats
    per candidate tile): NumPy's pairwise sum, which for up to 128 values keeps eight running sums
    (``pairwise_sum`` in ``loops_utils.h``), then one division; longer lists go to NumPy itself."""
    n = len(values)
    if n == 0 or n > 128:
        return float(np.mean(values))
    if n < 8:
        total = -0.0
        for v in values:
            total += v
        return total / n
    r = list(values[:8])
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += values[i + j]
        i += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    for v in values[i:]:
        total += v
    return total / n


def _joint_share(joints: Sequence[tuple[int, bool]], steps: int, planes: int) -> float:
    """The share of a block's stages computed several planes at once (``joints``: each stencil's
    ``joint_planes`` and whether its last step is streamed, row by row) when a call covers ``planes``
    planes."""
    shares = [
        (planes // p * p / planes if p > 1 else 0.0) * (1 - (1 / steps if streamed else 0.0))
        for p, streamed in joints
    ]
    return mean(shares) if shares else 0.0


def _bytes(plan: Plan, field: str, shape: Sequence[int]) -> int:
    return np.dtype(plan.program.field_dtype(field)).itemsize * math.prod(shape)


def _tiles_profile(plan: Plan, shape: Sequence[int], per_r: list[list[int]]) -> tuple[list[int], int]:
    """What an overlapped tile's scratch depends on apart from the tile: every field's largest halo per axis
    and the bytes of all fields per point (computed once per ``steps``)."""
    halo = [max(m[a] for m in per_r) for a in range(len(shape))]
    per_cell = sum(
        (np.dtype(s.dtype).itemsize + (1 if s.name in plan.masked else 0)) * (2 if plan.feeds else 1)
        for s in plan.order
    )
    return halo, per_cell


def _tiles_fit(profile: tuple[list[int], int], shape: Sequence[int], tile: Sequence[int]) -> float | None:
    """0 when an overlapped tile's scratch (every field, with its halo) fits ``TILE_BYTES``, else None."""
    halo, per_cell = profile
    ext = [min(n, t + h) for n, t, h in zip(shape, tile, halo, strict=True)]
    return 0.0 if math.prod(ext) * per_cell <= TILE_BYTES else None


def _wave_profile(plan: Plan, shape: Sequence[int], steps: int) -> tuple[list[int], int, int, int]:
    """What the wavefront's working set depends on apart from the tile: every field's largest halo per axis,
    the bytes its rings and input planes hold per point of a plane with one plane a tick, the bytes each
    further plane a tick adds, and the most bytes per point of a plane that one stage reads and writes
    (its layer condition; computed once per ``steps``)."""
    halo = [0] * len(shape)
    for table in margins(plan, steps):
        for m in table.values():
            if m is not None:
                halo = [max(h, lo + hi) for h, (lo, hi) in zip(halo, m, strict=True)]
    rings = ring_sizes(plan, steps)
    size = {st.name: np.dtype(st.dtype).itemsize + (1 if st.name in plan.masked else 0) for st in plan.order}
    total = sum(k * size[st.name] for row in rings for k, st in zip(row, plan.order, strict=True))
    extra = sum(size[st.name] for row in rings for k, st in zip(row, plan.order, strict=True) if k)
    r0, r1 = reads_0(plan)
    total += (r0 + r1 + 1) * sum(np.dtype(i.dtype).itemsize for i in plan.program.inputs)
    layer = max((_layer(plan, st, r0 + r1 + 1) for st in plan.order), default=0)
    return halo, int(total), int(extra), layer


def _layer(plan: Plan, st: Stencil, planes: int) -> int:
    """Bytes per point of a plane that ``st`` keeps live between consecutive planes: ``planes`` planes of
    each full-rank field it reads and the plane it writes."""
    rank = plan.program.rank
    read = {r.field for r in stencil_refs(st) if plan.axes(r.field) == tuple(range(rank))}
    size = sum(np.dtype(plan.program.field_dtype(f)).itemsize for f in read)
    return int(planes * size + np.dtype(st.dtype).itemsize)


def _layer_bytes(profile: tuple[list[int], int, int, int], shape: Sequence[int], tile: Sequence[int]) -> int:
    halo, _, _, layer = profile
    plane = 1
    for n, t, h in zip(shape[1:], tile[1:], halo[1:], strict=True):
        plane *= min(n, t + h)
    return layer * plane


def _wave_penalty(
    profile: tuple[list[int], int, int, int], shape: Sequence[int], tile: Sequence[int], planes: int
) -> float | None:
    halo, per_point, extra, _ = profile
    plane = 1
    for n, t, h in zip(shape[1:], tile[1:], halo[1:], strict=True):
        plane *= min(n, t + h)
    total = (per_point + (planes - 1) * extra) * plane
    if total > WAVE_BYTES:
        return None
    return L3_COST if total > TILE_BYTES else 0.0


def _read_amplification(
    shape: Sequence[int], tile: Sequence[int], halo: list[int], skip_axis0: bool
) -> float:
    """Input points read per owned point: a tile reads its inputs with the halo (the wave: not along axis 0,
    where consecutive planes are reused)."""
    amp = 1.0
    for a, (n, t) in enumerate(zip(shape, tile, strict=True)):
        if not (skip_axis0 and a == 0):
            amp *= min(n, t + halo[a]) / t
    return amp


def _total_margin(plan: Plan, table: Mapping[str, Any], rank: int) -> list[int]:
    out = [0] * rank
    for st in plan.order:
        m = table[st.name]
        if m is not None:
            out = [max(o, lo + hi) for o, (lo, hi) in zip(out, m, strict=True)]
    return out


def _candidates(shape: Sequence[int], wave: bool) -> list[tuple[tuple[int, ...], int]]:
    """Tiles of powers of two (and the whole axis) per axis, rows of at least 64 points, the wave's axis-0
    chunk at least 1/16 of the axis (a chunk's ramp costs its halo); with the wave's planes a tick."""
    sizes = [2**k for k in range(0, 16)]
    rank = len(shape)
    per_axis = []
    for a, n in enumerate(shape):
        floor = 64 if a == rank - 1 and rank > 1 else 1
        if wave and a == 0:
            floor = max(1, n // 16)
        per_axis.append(sorted({min(n, s) for s in sizes if s >= floor} | {n}))
    out: list[tuple[int, ...]] = [()]
    for options in per_axis:
        out = [(*t, o) for t in out for o in options]
    return [(t, p) for t in out for p in (PLANES if wave else (1,))]


def _count(tile: Sequence[int], shape: Sequence[int]) -> int:
    return math.prod([-(-n // t) for n, t in zip(shape, tile, strict=True)])
