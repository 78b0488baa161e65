"""The dataflow DAG the hardware implements: the program's dependency graph, unrolled over ``iterate``.

``iterate: q`` chains q copies of the program (SODA §2.2: each iteration is a stage), output i of copy
c − 1 feeding input i of copy c, or by name as the program's ``feedback`` says (``Program.feeds``, the
reference executor's pairing; inputs fed by no output keep their value and are shared by every copy). With q = 1 nodes carry the field names; with q > 1 the stencil
nodes of copy c (1-based) are named ``name@c``. Input fields are nodes too (sources: memory readers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stencilmap.program.graph import reads, stencil_order
from stencilmap.program.ir import Program, Stencil


@dataclass(frozen=True, slots=True)
class Node:
    """A node of the unrolled DAG: an input field (``copy`` 0, ``stencil`` None) or one stencil copy."""

    name: str
    field: str
    copy: int
    stencil: Stencil | None


@dataclass(frozen=True, slots=True)
class Edge:
    """Stencil ``consumer`` reads ``field`` (its name in the consumer's expression) from node ``producer``."""

    producer: str
    consumer: str
    field: str

    @property
    def key(self) -> str:
        return f"{self.producer}->{self.consumer}"


@dataclass(frozen=True, slots=True)
class PassGraph:
    """Nodes in topological order (inputs first, then each copy's stencils) and the edges between them."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    #: The edges into each node, built on the first ``into``: one pass over the edges, not one per call.
    _into: dict[str, tuple[Edge, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def into(self, name: str) -> tuple[Edge, ...]:
        if not self._into and self.edges:
            by: dict[str, list[Edge]] = {}
            for e in self.edges:
                by.setdefault(e.consumer, []).append(e)
            self._into.update((k, tuple(v)) for k, v in by.items())
        return self._into.get(name, ())


def node_name(field: str, copy: int, iterate: int) -> str:
    """The name of stencil ``field`` in copy ``copy`` (1-based) of a program iterated ``iterate`` times."""
    return field if iterate == 1 else f"{field}@{copy}"


def pass_graph(program: Program) -> PassGraph:
    """The program's DAG unrolled over ``program.iterate`` copies."""
    q = max(1, program.iterate)
    feeds = dict(program.feeds())
    nodes = [Node(i.name, i.name, 0, None) for i in program.inputs]
    edges: list[Edge] = []
    order = stencil_order(program)
    for c in range(1, q + 1):
        for st in order:
            consumer = node_name(st.name, c, q)
            nodes.append(Node(consumer, st.name, c, st))
            for f in reads(st):
                producer = _producer(program, f, c, q, feeds)
                if producer is not None:
                    edges.append(Edge(producer, consumer, f))
    return PassGraph(tuple(nodes), tuple(edges))


def _producer(program: Program, field: str, copy: int, q: int, feeds: dict[str, str]) -> str | None:
    if program.stencil(field) is not None:  # name lookups are indexed (Program._names)
        return node_name(field, copy, q)
    if program.input(field) is None:
        return None
    if copy > 1 and field in feeds:
        return node_name(feeds[field], copy - 1, q)
    return field
