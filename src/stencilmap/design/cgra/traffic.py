"""The memory traffic of a CGRA worker mapping (CGRA §III-B, Fig. 3, 10): the loads each reader issues and
the stores each writer issues, per column class x ≡ c (mod workers). Facts of the mapping, read by its
assembly (``codegen.cgra``), the simulator and the cycle model (``model.cgra``)."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from stencilmap.design.cgra.mapping import CgraMapping

if TYPE_CHECKING:
    from stencilmap.device.catalog import Device

I64 = npt.NDArray[np.int64]


def residues(x0: int, x1: int, w: int, r: int) -> int:
    """Columns x in [x0, x1) with x ≡ r (mod w)."""
    return max(0, (x1 - 1 - r) // w - (x0 - 1 - r) // w) if x1 > x0 else 0


def reads_of(m: CgraMapping, field: int, r: int) -> int:
    """Loads reader r of input ``field`` issues: every strip's rows, its columns x ≡ r (mod w), halos
    included (Fig. 3, 10); a lower-dimensional input is loaded at every point of the grid it spans."""
    z, y, _ = m.shape
    return sum(z * y * residues(*span, m.workers, r) for span in m.spans[field])


def stores_of(m: CgraMapping, stage: int, c: int) -> int:
    """Stores writer c of output ``stage`` issues: the last layer's points with x ≡ c (mod w), all strips."""
    boxes = m.boxes[m.box_id(m.layers - 1, stage)]
    return sum(
        max(0, z1 - z0) * max(0, y1 - y0) * residues(x0, x1, m.workers, c) for z0, z1, y0, y1, x0, x1 in boxes
    )


def ring_of(m: CgraMapping, stage: int, c: int) -> int:
    """``border: preserve``: the points of column class c outside the output's region (stored as input)."""
    if m.preserve is False:
        return 0
    z, y, x = m.shape
    return z * y * residues(0, x, m.workers, c) - stores_of(m, stage, c)


# ------------------------------------------------------------------------------- the loads' cache


@dataclass(frozen=True, slots=True)
class LoadCache:
    """The cache the LOADs reach (CGRA §II-A, §VIII: PEs reach "a scratchpad memory, and a cache hierarchy";
    the paper's simulator models them and reports "more conflict misses in the cache for stencil 2D"), from
    the device file's ``cache_bytes``, ``cache_ways``, ``cache_line_bytes``, ``cache_fill_bytes``: LRU, shared
    by the LOADs, stores written through around it. A miss holds its LOAD's port while the line arrives,
    ``line_bytes / fill_bytes`` cycles after the request's own, before that LOAD issues again."""

    size_bytes: int
    ways: int
    line_bytes: int
    fill_bytes: int  # bytes of a line the port takes a cycle

    @property
    def sets(self) -> int:
        return max(1, self.size_bytes // (self.ways * self.line_bytes))

    @property
    def fill_cycles(self) -> int:
        return ceil(self.line_bytes / self.fill_bytes)


def load_cache(device: Device) -> LoadCache | None:
    """The device's cache, or None where its file gives none (every load then costs one issue cycle)."""
    got = [device.resource(k) for k in ("cache_bytes", "cache_ways", "cache_line_bytes", "cache_fill_bytes")]
    if not all(got):
        return None
    size, ways, line, fill = (int(v or 0) for v in got)
    return LoadCache(size, ways, line, fill)


def field_bytes(m: CgraMapping) -> tuple[int, ...]:
    """Each input's first byte in memory: the inputs one after another in C order (as the simulator and the
    assembly's ``.input addr=`` lay them), each as long as its strides span."""
    z, y, x = m.shape
    starts, at = [], 0
    for _, dtype, (sz, sy, sx) in m.inputs:
        starts.append(at)
        at += ((z - 1) * sz + (y - 1) * sy + (x - 1) * sx + 1) * int(np.dtype(dtype).itemsize)
    return tuple(starts)


def line_fills(m: CgraMapping, field: int, cache: LoadCache) -> int:
    """The lines input ``field``'s readers bring into the cache: the lines its rows' spans cover (a line two
    spans share, or a row a lower-dimensional input repeats, comes once), per strip where one strip's lines
    of all inputs exceed the cache (LRU has let the previous strip's halo go by the time the next strip
    reads it), else once for the whole grid. The streams leave nothing to conflict over while the readers
    keep together, so these are the compulsory misses."""
    strips = [_strip_lines(m, f, cache.line_bytes) for f in range(len(m.inputs))]
    per_strip = [sum(_covered(*strips[f][s]) for f in range(len(m.inputs))) for s in range(len(m.strips))]
    mine = strips[field]
    if max(per_strip, default=0) * cache.line_bytes > cache.size_bytes:
        return sum(_covered(first, last) for first, last in mine)
    return _covered(np.concatenate([f for f, _ in mine]), np.concatenate([la for _, la in mine]))


def _strip_lines(m: CgraMapping, field: int, line_bytes: int) -> list[tuple[I64, I64]]:
    """Per strip, the first and last line of each row's span of input ``field``."""
    z, y, _ = m.shape
    _, dtype, (sz, sy, sx) = m.inputs[field]
    size, base = int(np.dtype(dtype).itemsize), field_bytes(m)[field]
    rows = (np.arange(z, dtype=np.int64)[:, None] * sz + np.arange(y, dtype=np.int64)[None, :] * sy).ravel()
    out = []
    for x0, x1 in m.spans[field]:
        if x1 <= x0:
            out.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        first = (base + (rows + x0 * sx) * size) // line_bytes
        last = (base + (rows + (x1 - 1) * sx) * size + size - 1) // line_bytes
        out.append((first, last))
    return out


def _covered(first: I64, last: I64) -> int:
    """Lines in the union of the ranges [first, last]."""
    if not len(first):
        return 0
    order = np.argsort(first, kind="stable")
    f, la = first[order], last[order]
    reach = np.maximum.accumulate(la)
    starts = np.flatnonzero(np.concatenate([[True], f[1:] > reach[:-1]]))
    return int((np.maximum.reduceat(la, starts) - f[starts] + 1).sum())


def first_touches(m: CgraMapping, field: int, cache: LoadCache) -> tuple[int, ...]:
    """Per reader of input ``field``, the lines it reaches first while the readers load in step: in each
    strip's stream (rows in order, columns ascending), a line is missed once, by the reader (x ≡ r mod w) of
    its first column not already reached in an earlier row (a line two rows share is the earlier's)."""
    w, line = m.workers, cache.line_bytes
    _, dtype, (_, _, sx) = m.inputs[field]
    size = int(np.dtype(dtype).itemsize)
    counts = np.zeros(w, np.int64)
    for (x0, x1), (first, last) in zip(m.spans[field], _strip_lines(m, field, line), strict=True):
        if not len(first):
            continue
        seen = np.concatenate([[-1], np.maximum.accumulate(last)[:-1]])
        skip = np.clip(seen - first + 1, 0, None)
        if sx == 0:  # a row is one point: its line, where new, is reached by the span's first column
            counts[x0 % w] += int((skip == 0).sum())
            continue
        lead = _row_lead(m, field, x0) - first * line  # bytes of its first line before a row's span begins
        groups, times = np.unique(np.stack([lead, skip]), axis=1, return_counts=True)
        for (before, s), n in zip(groups.T.tolist(), times.tolist(), strict=True):
            # the later lines' first bytes, from the span's start, and the columns that reach them
            ends = np.arange(line - before, (x1 - x0) * size, line, dtype=np.int64)
            cols = np.concatenate([[x0], x0 + (ends + size - 1) // size])[s:]
            counts += n * np.bincount(cols % w, minlength=w)
    return tuple(int(c) for c in counts)


def _row_lead(m: CgraMapping, field: int, x0: int) -> I64:
    """The first byte of each row's span of input ``field`` from column x0, rows in stream order."""
    z, y, _ = m.shape
    _, dtype, (sz, sy, sx) = m.inputs[field]
    rows = (np.arange(z, dtype=np.int64)[:, None] * sz + np.arange(y, dtype=np.int64)[None, :] * sy).ravel()
    return field_bytes(m)[field] + (rows + x0 * sx) * int(np.dtype(dtype).itemsize)
