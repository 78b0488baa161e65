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
