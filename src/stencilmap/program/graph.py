"""The dependency DAG of a program: fields (inputs and stencil outputs) as nodes, reads as edges."""

from __future__ import annotations

import networkx as nx

from stencilmap.program.expr import refs
from stencilmap.program.ir import Program, Stencil


def reads(stencil: Stencil) -> tuple[str, ...]:
    """Fields a stencil reads (its expression and temporaries), sorted, without repetition."""
    names = {r.field for r in refs(stencil.expr)}
    for t in stencil.temps:
        names.update(r.field for r in refs(t.expr))
    return tuple(sorted(names))


def dependency_graph(program: Program) -> nx.DiGraph:
    """Edge ``u -> v`` when stencil ``v`` reads field ``u``; nodes carry ``kind`` = input | stencil."""
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
    """One dependency cycle between stencils, as a closed list of names, or None."""
    try:
        edges = nx.find_cycle(dependency_graph(program))
    except nx.NetworkXNoCycle:
        return None
    names = [str(u) for u, _ in edges]
    return [*names, names[0]]


def stencil_order(program: Program) -> tuple[Stencil, ...]:
    """Stencils in a topological order (declaration order breaks ties); the program must be acyclic."""
    g = dependency_graph(program)
    position = {s.name: n for n, s in enumerate(program.stencils)}
    order = nx.lexicographical_topological_sort(g, key=lambda n: position.get(n, -1))
    by_name = {s.name: s for s in program.stencils}
    return tuple(by_name[n] for n in order if n in by_name)
