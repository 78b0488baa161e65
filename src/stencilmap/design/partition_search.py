"""The least-cut split of a StencilFlow DAG over k devices in topological order (``design.partition``).

StencilFlow continues a chain on the next device when one is full (§VIII-C): device p holds a
contiguous run [b_p, b_{p+1}) of the stencil nodes in topological order, and streams flow only to
later devices. Then the streams device p receives are those of the earlier nodes u < b_p with a
consumer in [b_p, b_{p+1}) — a function of the run alone, so the least total over all splits is a
dynamic program over (devices used, end of the run), exact over every contiguous split:

    cut(i, j) = |{u < i : some consumer of u lies in [i, j)}|
    F[p][j]   = min over i of F[p − 1][i] + cut(i, j), over runs [i, j) that fit the device

Among splits of equal cut it takes the one whose fullest device is least full (the utilization of the
device's most used resource): lexicographic (cut, fullest) has optimal substructure since a run adds
its cut and can only raise the fullest.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stencilmap.design.common import LiveGraph
from stencilmap.device.catalog import Cost, Device

Array = npt.NDArray[np.float64]


def solve(live: LiveGraph, costs: dict[str, Cost], device: Device, devices: int) -> dict[str, int] | None:
    """The device of every stencil node, or None when no split into ``devices`` runs fits.

    The runs [i, j) ending at j are taken for every device count p at once (numpy over p and i), and
    only over the i whose run fits (``_Fill.first_fit``): O(n · k · w) work for runs of at most w nodes,
    not the O(k · n²) of the recurrence as written. Ties go to the smallest i, as the recurrence's scan."""
    nodes = [n.name for n in live.stencils]
    n, k = len(nodes), devices
    fill = _Fill(nodes, costs, device)
    cut = _Cuts(live, nodes)
    inf = np.inf
    cost = np.full((k + 1, n + 1), inf)  # cost[p, j]: the least cut of nodes [0, j) on p devices
    full = np.full((k + 1, n + 1), inf)  # ... and the fullest of those devices (the tie-break)
    back = np.full((k + 1, n + 1), -1, dtype=np.int64)
    cost[0, 0] = full[0, 0] = 0.0
    lo = 0
    for j in range(1, n + 1):
        lo = fill.first_fit(lo, j)
        col = cut.column(lo, j)  # col[i - lo] = cut[i, j]
        p0, p1 = max(1, j - (n - k)), min(k, j)  # the devices p a split can have used by node j
        if lo >= j or p0 > p1:
            continue
        f = fill.column(lo, j)
        prev_cost = cost[p0 - 1 : p1, lo:j]
        ok = np.isfinite(prev_cost) & (f <= 1.0)
        c0 = np.where(ok, prev_cost + col, inf)
        c1 = np.where(ok, np.maximum(full[p0 - 1 : p1, lo:j], f), inf)
        m0 = c0.min(axis=1)
        tie = c0 == m0[:, None]
        c1 = np.where(tie, c1, inf)
        m1 = c1.min(axis=1)
        at = (tie & (c1 == m1[:, None])).argmax(axis=1)  # the first i of the least (cut, fullest)
        found = np.isfinite(m0)
        rows = np.arange(p0, p1 + 1)[found]
        cost[rows, j], full[rows, j], back[rows, j] = m0[found], m1[found], lo + at[found]
    if not np.isfinite(cost[k, n]):
        return None
    where: dict[str, int] = {}
    j = n
    for p in range(k, 0, -1):
        i = int(back[p, j])
        for v in nodes[i:j]:
            where[v] = p - 1
        j = i
    return where


class _Cuts:
    """cut[i, j]: streams the run [i, j) of ``nodes`` receives from earlier stencil nodes, one column j at a
    time for the rows i ≥ lo (``column``, j increasing, lo never decreasing).

    A run [i, j) receives u's stream iff u < i and u's first consumer at or after i lies before j, so
    cut[i, j + 1] = cut[i, j] + |{u : j is u's first consumer at or after i}|: for each producer u of j
    whose previous consumer (or u itself) is a, the rows a < i ≤ j gain one. O(n + edges) updates of at
    most ``j - lo`` rows each."""

    def __init__(self, live: LiveGraph, nodes: list[str]) -> None:
        pos = {v: t for t, v in enumerate(nodes)}
        consumers: dict[int, set[int]] = {}
        for e in live.graph.edges:
            if e.producer in pos:
                consumers.setdefault(pos[e.producer], set()).add(pos[e.consumer])
        # into[v]: (a + 1) for each producer u of v, a being u's consumer before v (or u)
        self.into: list[list[int]] = [[] for _ in nodes]
        for u, vs in consumers.items():
            a = u
            for v in sorted(v for v in vs if v > u):
                self.into[v].append(a + 1)
                a = v
        self.col = np.zeros(len(nodes) + 1)  # col[i] = cut[i, j] for the last j asked, rows i ≥ lo
        self.j = 0

    def column(self, lo: int, j: int) -> Array:
        """cut[lo:j, j] (j one more than the last call's)."""
        assert j == self.j + 1
        for start in self.into[j - 1]:  # the column j - 1 of the first consumers, added to cut[:, j - 1]
            if start < j:
                self.col[max(start, lo) : j] += 1
        self.j = j
        return self.col[lo:j]


class _Fill:
    """fill[i, j]: the largest used / (limit × available) of any resource on a device holding run
    [i, j) with the device's base (> 1: it does not fit), a column at a time."""

    def __init__(self, nodes: list[str], costs: dict[str, Cost], device: Device) -> None:
        model = device.resource_model
        self.terms: list[tuple[float, float, Array]] = []  # (base, limit, prefix sums of the costs)
        monotone = True
        for name, avail in device.resources:
            if avail <= 0:
                continue
            limit = (model.limit(name) if model is not None else 1.0) * avail
            base = model.base[name] if model is not None else 0.0
            prefix = np.concatenate([[0.0], np.cumsum([costs[v][name] for v in nodes])])
            monotone = monotone and bool(np.all(prefix[1:] >= prefix[:-1]))
            self.terms.append((base, limit, prefix))
        # with costs ≥ 0, fill[i, j] falls as i grows and rises with j: the runs ending at j that fit
        # start at or after the first that fits, which never moves back
        self.monotone = monotone

    def column(self, lo: int, j: int) -> Array:
        """fill[lo:j, j], computed as the whole matrix was: (base + prefix[j] - prefix[i]) / limit."""
        f = np.zeros(j - lo)
        for base, limit, prefix in self.terms:
            f = np.maximum(f, (base + prefix[j] - prefix[lo:j]) / limit)
        return f

    def first_fit(self, lo: int, j: int) -> int:
        """The first i ≥ lo (lo: the answer for j - 1) whose run [i, j) fits, or j; lo itself where the
        costs are not monotone (every i is then looked at)."""
        if not self.monotone:
            return lo
        while lo < j and self.at(lo, j) > 1.0:
            lo += 1
        return lo

    def at(self, i: int, j: int) -> float:
        """fill[i, j] alone, by the same operations as ``column``."""
        f = 0.0
        for base, limit, prefix in self.terms:
            f = max(f, float((base + prefix[j] - prefix[i]) / limit))
        return f
