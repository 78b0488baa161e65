"""The dependency DAG of a program: fields (inputs and stencil outputs) as nodes, reads as edges."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from stencilmap.program.expr import refs
from stencilmap.program.ir import Program, Stencil

if TYPE_CHECKING:
    import networkx as nx


def reads(stencil: Stencil) -> tuple[str, ...]:
    """Fields a stencil reads (its expression and temporaries), sorted, without repetition."""
    names = {r.field for r in refs(stencil.expr)}
    for t in stencil.temps:
        names.update(r.field for r in refs(t.expr))
    return tuple(sorted(names))


def dependency_graph(program: Program) -> nx.DiGraph:
    """Edge ``u -> v`` when stencil ``v`` reads field ``u``; nodes carry ``kind`` = input | stencil."""
    import networkx as nx  # not at module level: its import costs ~0.1 s of every command's start

    g = nx.DiGraph()
    for i in program.inputs:
        g.add_node(i.name, kind="input")
    for s in program.stencils:
        g.add_node(s.name, kind="stencil")
    for s in program.stencils:
        for f in reads(s):
            if f in g:
                g.add_edge(f, s.name)
    return g


def find_cycle(program: Program) -> list[str] | None:
    """One dependency cycle between stencils, as a closed list of names, or None (an acyclic program, the
    usual case, is answered without networkx, whose import costs ~0.1 s)."""
    if _unique_names(program) and _topological(program) is not None:
        return None
    import networkx as nx

    try:
        edges = nx.find_cycle(dependency_graph(program))
    except nx.NetworkXNoCycle:
        return None
    names = [str(u) for u, _ in edges]
    return [*names, names[0]]


def stencil_order(program: Program) -> tuple[Stencil, ...]:
    """Stencils in a topological order (declaration order breaks ties); the program must be acyclic."""
    order = _topological(program) if _unique_names(program) else None
    if order is not None:
        return order
    import networkx as nx  # names not unique (not a verified program) or a cycle: networkx's answer

    g = dependency_graph(program)
    position = {s.name: n for n, s in enumerate(program.stencils)}
    nodes = nx.lexicographical_topological_sort(g, key=lambda n: position.get(n, -1))
    by_name = {s.name: s for s in program.stencils}
    return tuple(by_name[n] for n in nodes if n in by_name)


def _unique_names(program: Program) -> bool:
    names = [*(i.name for i in program.inputs), *(s.name for s in program.stencils)]
    return len(set(names)) == len(names)


def _topological(program: Program) -> tuple[Stencil, ...] | None:
    """The stencils in the order ``networkx.lexicographical_topological_sort`` gives ``dependency_graph``
    with declaration order as the key (inputs, key −1, have no predecessors and are left out): Kahn's
    algorithm taking the ready stencil declared first; None when they form a cycle."""
    users: dict[str, list[int]] = {s.name: [] for s in program.stencils}
    waiting = [0] * len(program.stencils)
    for n, s in enumerate(program.stencils):
        for f in reads(s):
            if f in users:
                users[f].append(n)
                waiting[n] += 1
    ready = [n for n, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[Stencil] = []
    while ready:
        n = heapq.heappop(ready)
        order.append(program.stencils[n])
        for m in users[program.stencils[n].name]:
            waiting[m] -= 1
            if waiting[m] == 0:
                heapq.heappush(ready, m)
    return tuple(order) if len(order) == len(program.stencils) else None
