"""program.graph: the pure-Python order and acyclicity check agree with networkx's on random programs."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from stencilmap.program.expr import Binary, Const, Expr, Ref
from stencilmap.program.graph import _topological, dependency_graph, find_cycle, stencil_order
from stencilmap.program.ir import Input, Program, Stencil


def random_program(seed: int, cyclic: bool) -> Program:
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    names = [f"s{k}" for k in range(n)]
    rng.shuffle(names)  # declaration order differs from the dependency order
    inputs = (Input("a", "float32", (0, 0)), Input("b", "float32", (0, 0)))
    stencils = []
    for k, name in enumerate(names):
        pool = ["a", "b", *names[:k]] + (names[k:] if cyclic else [])
        expr: Expr = Const(1.0, "float32")
        for f in rng.sample(pool, rng.randint(0, min(3, len(pool)))):
            expr = Binary("+", expr, Ref(f, (0, 0)))
        stencils.append(Stencil(name, "float32", expr))
    order = list(range(n))
    rng.shuffle(order)
    return Program(
        name="p",
        format="stencilflow",
        semantics="numpy",
        shape=(4, 4),
        inputs=inputs,
        stencils=tuple(stencils[i] for i in order),
        outputs=(stencils[-1].name,),
    )


def networkx_order(program: Program) -> tuple[Stencil, ...]:
    """The former implementation of ``stencil_order``."""
    position = {s.name: n for n, s in enumerate(program.stencils)}
    nodes = nx.lexicographical_topological_sort(dependency_graph(program), key=lambda n: position.get(n, -1))
    by_name = {s.name: s for s in program.stencils}
    return tuple(by_name[n] for n in nodes if n in by_name)


@pytest.mark.parametrize("seed", range(200))
def test_order_and_cycles_agree_with_networkx(seed: int) -> None:
    acyclic = random_program(seed, cyclic=False)
    assert stencil_order(acyclic) == networkx_order(acyclic)
    assert find_cycle(acyclic) is None
    program = random_program(seed, cyclic=True)
    has_cycle = not nx.is_directed_acyclic_graph(dependency_graph(program))
    assert (_topological(program) is None) == has_cycle
    assert (find_cycle(program) is not None) == has_cycle
    if not has_cycle:
        assert stencil_order(program) == networkx_order(program)


def test_the_program_s_name_index_is_its_scan() -> None:
    """``Program.stencil``/``input`` (one name index per program, built on first use) find what a scan of its
    stencils and inputs finds, None included; a program made from it by ``replace`` gets its own index."""
    from dataclasses import replace

    from stencilmap.program.load import as_program
    from tests.conftest import EXAMPLES

    program = as_program(EXAMPLES / "dag_listing1.json")
    for name in [*(s.name for s in program.stencils), "a0", "nothing"]:
        assert program.stencil(name) is next((s for s in program.stencils if s.name == name), None)
        assert program.input(name) is next((i for i in program.inputs if i.name == name), None)
    fewer = replace(program, stencils=program.stencils[:1])
    assert fewer.stencil(program.stencils[-1].name) is None
