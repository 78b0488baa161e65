"""The least-cut assignment of stencil nodes to devices as a mixed-integer program (``design.partition``).

Variables: x[v, p] = 1 when node v is on device p; y[u, p] = 1 when u's stream is sent to device p;
z the largest utilization of any resource on any device. Minimise Σ y + z / 2 (a cut stream always
outweighs balance, z ≤ 1) subject to

* Σ_p x[v, p] = 1 (each node on one device), Σ_v x[v, p] ≥ 1 (no empty device);
* y[u, p] ≥ x[v, p] − x[u, p] for every edge u → v between stencils (u's stream needed on p);
* Σ_p p·x[v, p] ≥ Σ_p p·x[u, p] (streams flow to the same or a later device: a chain, §VIII-C);
* Σ_v c_r(v)·x[v, p] ≤ limit_r·avail_r − base_r for every resource r and device p, and
  z ≥ (base_r + Σ_v c_r(v)·x[v, p]) / avail_r.
"""

from __future__ import annotations

import numpy as np

from stencilmap.design.common import LiveGraph
from stencilmap.model.devices import Cost, Device


def solve(live: LiveGraph, costs: dict[str, Cost], device: Device, devices: int) -> dict[str, int] | None:
    """The device of every stencil node, or None when no assignment fits."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    nodes = [n.name for n in live.stencils]
    index = {v: i for i, v in enumerate(nodes)}
    edges = [(e.producer, e.consumer) for e in live.graph.edges if e.producer in index]
    producers = sorted({u for u, _ in edges}, key=index.__getitem__)
    n, k = len(nodes), devices
    nx, ny = n * k, len(producers) * k
    size = nx + ny + 1

    def x(v: str, p: int) -> int:
        return index[v] * k + p

    def y(u: str, p: int) -> int:
        return nx + producers.index(u) * k + p

    rows: list[tuple[dict[int, float], float, float]] = []
    for v in nodes:
        rows.append(({x(v, p): 1.0 for p in range(k)}, 1.0, 1.0))
    for p in range(k):
        rows.append(({x(v, p): 1.0 for v in nodes}, 1.0, np.inf))
    for u, v in edges:
        for p in range(k):
            rows.append(({x(v, p): 1.0, x(u, p): -1.0, y(u, p): -1.0}, -np.inf, 0.0))
        order = {x(v, p): float(p) for p in range(k)}
        for p in range(k):
            order[x(u, p)] = order.get(x(u, p), 0.0) - p
        rows.append((order, 0.0, np.inf))
    rows.extend(_resource_rows(nodes, costs, device, k, x, size - 1))
    a = np.zeros((len(rows), size))
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    for r, (coeffs, low, high) in enumerate(rows):
        for col, value in coeffs.items():
            a[r, col] += value
        lo[r], hi[r] = low, high
    objective = np.concatenate([np.zeros(nx), np.ones(ny), [0.5]])
    integrality = np.concatenate([np.ones(nx + ny), [0]])
    upper = np.concatenate([np.ones(nx + ny), [np.inf]])
    res = milp(objective, constraints=LinearConstraint(a, lo, hi), integrality=integrality,
               bounds=Bounds(np.zeros(size), upper), options={"time_limit": 60.0})  # fmt: skip
    if res.x is None:
        return None
    sol = np.round(res.x[:nx]).reshape(n, k)
    return {v: int(np.argmax(sol[index[v]])) for v in nodes}


def _resource_rows(
    nodes: list[str], costs: dict[str, Cost], device: Device, k: int, x: object, z: int
) -> list[tuple[dict[int, float], float, float]]:
    """Per device and resource: the capacity left beside the base, and z ≥ its utilization."""
    assert callable(x)
    model = device.resource_model
    base = model.base if model is not None else Cost()
    rows: list[tuple[dict[int, float], float, float]] = []
    for name, avail in device.resources:
        if avail <= 0 or not any(costs[v][name] for v in nodes):
            continue
        limit = model.limit(name) if model is not None else 1.0
        for p in range(k):
            use = {x(v, p): costs[v][name] for v in nodes if costs[v][name]}
            rows.append((use, -np.inf, limit * avail - base[name]))
            share = {col: c / avail for col, c in use.items()}
            share[z] = -1.0
            rows.append((share, -np.inf, -base[name] / avail))
    return rows
