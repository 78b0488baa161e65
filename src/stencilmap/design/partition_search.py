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
    """The device of every stencil node, or None when no split into ``devices`` runs fits."""
    nodes = [n.name for n in live.stencils]
    n, k = len(nodes), devices
    cut = run_cuts(live, nodes)
    fill = run_fill(nodes, costs, device)  # fill[i, j]: the fullest resource of run [i, j); > 1: no fit
    inf = (np.inf, np.inf)
    best: list[list[tuple[float, float]]] = [[inf] * (n + 1) for _ in range(k + 1)]
    back = np.full((k + 1, n + 1), -1, dtype=np.int64)
    best[0][0] = (0.0, 0.0)
    for p in range(1, k + 1):
        for j in range(p, n - (k - p) + 1):
            for i in range(p - 1, j):
                prev = best[p - 1][i]
                if prev == inf or fill[i, j] > 1.0:
                    continue
                cand = (prev[0] + cut[i, j], max(prev[1], fill[i, j]))
                if cand < best[p][j]:
                    best[p][j], back[p, j] = cand, i
    if best[k][n] == inf:
        return None
    where: dict[str, int] = {}
    j = n
    for p in range(k, 0, -1):
        i = int(back[p, j])
        for v in nodes[i:j]:
            where[v] = p - 1
        j = i
    return where


def run_cuts(live: LiveGraph, nodes: list[str]) -> Array:
    """cut[i, j]: streams the run [i, j) of ``nodes`` receives from earlier stencil nodes."""
    n = len(nodes)
    pos = {v: t for t, v in enumerate(nodes)}
    consumers: dict[int, list[int]] = {}
    for e in live.graph.edges:
        if e.producer in pos:
            consumers.setdefault(pos[e.producer], []).append(pos[e.consumer])
    for u in consumers:
        consumers[u].sort()
    cut = np.zeros((n + 1, n + 1))
    for i in range(n + 1):
        first = np.zeros(n + 2)  # how many producers u < i have their first consumer ≥ i at t
        for u, vs in consumers.items():
            if u < i:
                later = [v for v in vs if v >= i]
                if later:
                    first[later[0]] += 1
        # a run [i, j) receives u's stream iff u's first consumer at or after i lies before j
        cut[i, i + 1 :] = np.cumsum(first[i:n])[: n - i]
    return cut


def run_fill(nodes: list[str], costs: dict[str, Cost], device: Device) -> Array:
    """fill[i, j]: the largest used / (limit × available) of any resource on a device holding run
    [i, j) with the device's base (> 1: it does not fit)."""
    n = len(nodes)
    model = device.resource_model
    fill = np.zeros((n + 1, n + 1))
    for name, avail in device.resources:
        if avail <= 0:
            continue
        limit = (model.limit(name) if model is not None else 1.0) * avail
        base = model.base[name] if model is not None else 0.0
        prefix = np.concatenate([[0.0], np.cumsum([costs[v][name] for v in nodes])])
        used = base + prefix[None, :] - prefix[:, None]
        fill = np.maximum(fill, used / limit)
    return fill
