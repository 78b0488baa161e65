"""design.partition_search: the least-cut contiguous split, against the recurrence as written (every run
[i, j) for every device count: O(k · n²)), and its work: only the runs that fit are looked at."""

from __future__ import annotations

import random
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from stencilmap.design import partition_search
from stencilmap.design.partition_search import solve
from stencilmap.device.catalog import Cost, Device, load_device


def _graph(n: int, edges: list[tuple[str, str]]) -> Any:
    """A live graph of stencil nodes v0 … v{n-1} (in topological order) and the given edges."""
    nodes = tuple(SimpleNamespace(name=f"v{t}") for t in range(n))
    return SimpleNamespace(
        stencils=nodes,
        graph=SimpleNamespace(edges=tuple(SimpleNamespace(producer=u, consumer=v) for u, v in edges)),
    )


def _recurrence(live: Any, costs: dict[str, Cost], device: Device, k: int) -> dict[str, int] | None:
    """The module docstring's dynamic program, run as written over every (p, j, i)."""
    nodes = [v.name for v in live.stencils]
    n, pos = len(nodes), {v: t for t, v in enumerate(nodes)}
    consumers: dict[int, set[int]] = {}
    for e in live.graph.edges:
        if e.producer in pos:
            consumers.setdefault(pos[e.producer], set()).add(pos[e.consumer])

    def cut(i: int, j: int) -> int:
        return sum(1 for u, vs in consumers.items() if u < i and any(i <= v < j for v in vs))

    def fill(i: int, j: int) -> float:
        model, f = device.resource_model, 0.0
        for name, avail in device.resources:
            if avail > 0:
                base = model.base[name] if model is not None else 0.0
                limit = (model.limit(name) if model is not None else 1.0) * avail
                f = max(f, (base + sum(costs[v][name] for v in nodes[i:j])) / limit)
        return f

    inf = (float("inf"), float("inf"))
    best = [[inf] * (n + 1) for _ in range(k + 1)]
    back = [[-1] * (n + 1) for _ in range(k + 1)]
    best[0][0] = (0.0, 0.0)
    for p in range(1, k + 1):
        for j in range(p, n - (k - p) + 1):
            for i in range(p - 1, j):
                if best[p - 1][i] != inf and fill(i, j) <= 1.0:
                    cand = (best[p - 1][i][0] + cut(i, j), max(best[p - 1][i][1], fill(i, j)))
                    if cand < best[p][j]:
                        best[p][j], back[p][j] = cand, i
    if best[k][n] == inf:
        return None
    where, j = {}, n
    for p in range(k, 0, -1):
        i = back[p][j]
        where.update({v: p - 1 for v in nodes[i:j]})
        j = i
    return where


@pytest.mark.parametrize("seed", range(6))
def test_split_equals_the_recurrence_on_random_dags(seed: int) -> None:
    """Random DAGs (skip edges, repeated edges, inputs), costs of a few sizes (ties), with and without a
    resource model: the same assignment, None included, for every device count."""
    rng = random.Random(seed)
    dev = load_device("stratix10")
    avail = dict(dev.resources)
    found = 0
    for _ in range(12):
        n = rng.randint(1, 9)
        edges = [
            (f"in{-u}" if u < 0 else f"v{u}", f"v{v}")
            for v in range(n)
            for u in range(-2, v)
            if rng.random() < (0.6 if u == v - 1 else 0.25)
        ]
        live = _graph(n, edges + edges[: rng.randint(0, 2)])
        scale = rng.choice([30, 15, 8])  # integer costs: sums are exact, whatever their order
        costs = {
            f"v{t}": Cost.of({r: rng.randint(0, 3) * (a // scale) for r, a in avail.items()})
            for t in range(n)
        }
        device = dev if rng.random() < 0.7 else replace(dev, resource_model=None)
        for k in range(1, n + 1):
            expected = _recurrence(live, costs, device, k)
            assert solve(live, costs, device, k) == expected
            found += expected is not None
    assert found  # some splits fit


def test_only_runs_that_fit_are_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200-stencil chain on 8 devices that hold at most 30 stencils each: the solver weighs at most 31
    runs ending at each node (about 6,000 in all), not the 20,000 runs of every (i, j)."""
    n, per = 200, 30
    dev = load_device("stratix10")
    model = dev.resource_model
    assert model is not None
    alm = dict(dev.resources)["alm"] * model.limit("alm")
    costs = {f"v{t}": Cost.of({"alm": (alm - model.base["alm"]) / (per + 0.5)}) for t in range(n)}
    looked: list[int] = []
    column = partition_search._Fill.column

    def counted(self: Any, lo: int, j: int) -> Any:
        looked.append(j - lo)
        return column(self, lo, j)

    monkeypatch.setattr(partition_search._Fill, "column", counted)
    where = solve(_graph(n, [(f"v{t}", f"v{t + 1}") for t in range(n - 1)]), costs, dev, 8)
    assert where is not None and max(where.values()) == 7
    assert max(looked) <= per + 1 and sum(looked) <= n * (per + 1)
