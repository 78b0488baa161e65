"""The unrolled DAG: inputs as sources, iterate copies chained output i → input i."""

from __future__ import annotations

from stencilmap.analysis.dag import pass_graph
from stencilmap.program.expr import Binary, Ref

from .helpers import jacobi, program, stencil


def test_single_pass_uses_field_names() -> None:
    p = program((5, 5), ["a"], [jacobi("b", "a"), jacobi("c", "b")])
    g = pass_graph(p)
    assert [n.name for n in g.nodes] == ["a", "b", "c"]
    assert [e.key for e in g.edges] == ["a->b", "b->c"]


def test_iterate_chains_copies_and_shares_unpaired_inputs() -> None:
    # out = a + k; a is fed by out of the previous copy, k (no matching output) is shared
    s = stencil("out", Binary("+", Ref("a", (0, 0)), Ref("k", (0, 0))))
    p = program((5, 5), ["a", "k"], [s], outputs=("out",), iterate=3)
    g = pass_graph(p)
    assert [n.name for n in g.nodes] == ["a", "k", "out@1", "out@2", "out@3"]
    assert {e.key for e in g.edges} == {
        "a->out@1",
        "k->out@1",
        "out@1->out@2",
        "k->out@2",
        "out@2->out@3",
        "k->out@3",
    }
    assert {e.field for e in g.into("out@2")} == {"a", "k"}


def test_feedback_by_name_feeds_the_named_input_and_replays_the_rest() -> None:
    from dataclasses import replace

    from stencilmap.program import load_program
    from tests.conftest import EXAMPLES

    p = replace(load_program(EXAMPLES / "fdtd2d_iterate.json"), iterate=3)
    g = pass_graph(p)
    into = {(e.consumer, e.field): e.producer for e in g.edges}
    assert into[("hx@2", "Hx")] == "hx@1" and into[("hx@3", "Ez")] == "ez@2"
    assert into[("hy@1", "Hy")] == "Hy"  # the first copy reads memory
    assert into[("ez@3", "C1")] == "C1" and into[("hx@2", "C3")] == "C3"  # coefficients: every copy
    swapped = replace(p, feedback=(("ez", "Ez"), ("hx", "Hy"), ("hy", "Hx")))
    assert {(e.consumer, e.field): e.producer for e in pass_graph(swapped).edges}[("hx@2", "Hx")] == "hy@1"


class _CountedEdges(tuple):  # type: ignore[type-arg]
    """A graph's edges that count the passes over them."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _CountedEdges.passes += 1
        return super().__iter__()


def test_edges_into_every_node_take_one_pass_over_the_edges() -> None:
    """``into`` on each node of a 200-stencil chain (what the timing and the design builder ask): one pass
    over the edges in all, not one per call; the same edges as a scan."""
    from stencilmap.analysis.dag import PassGraph

    stencils = [
        stencil(f"s{t}", Binary("+", Ref("a" if t == 0 else f"s{t - 1}", (-1,)), Ref("a", (1,))))
        for t in range(200)
    ]
    g = pass_graph(program((64,), ["a"], stencils, outputs=("s199",)))
    _CountedEdges.passes = 0
    counted = PassGraph(g.nodes, _CountedEdges(g.edges))
    into = {n.name: counted.into(n.name) for n in g.nodes}
    assert _CountedEdges.passes == 1
    assert into == {n.name: tuple(e for e in g.edges if e.consumer == n.name) for n in g.nodes}
    assert len(into["s7"]) == 2 and into["a"] == ()
