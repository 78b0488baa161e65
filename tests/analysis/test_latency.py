"""Compute latency: the critical path of the expression tree under an operator-latency table."""

from __future__ import annotations

from stencilmap.analysis.latency import OperatorLatencies, expr_latency, stencil_latency
from stencilmap.program.expr import Binary, Call, Const, Ref, Select, Unary, Var
from stencilmap.program.ir import Temp

from .helpers import coefficient_stencil, refs_sum, stencil

A = Ref("a", (0, 0))
LAT = OperatorLatencies(add=7, mul=4, div=15, sqrt=16, minmax=2, compare=2, select=1, func=20)


def test_defaults() -> None:
    d = OperatorLatencies.default()
    assert (d.add, d.mul, d.div, d.sqrt) == (7, 4, 15, 16)
    assert d.of("exp") == d.func and d.of("add") == 7
    assert OperatorLatencies(functions=(("exp", 9),)).of("exp") == 9
    assert OperatorLatencies.uniform(0).of("sqrt") == 0


def test_left_deep_chain_is_sequential() -> None:
    # ((((a + b) + c) + d) + e): four additions deep
    assert expr_latency(refs_sum("a", [(0, i) for i in range(5)]), LAT) == 4 * 7


def test_critical_path_takes_the_slowest_child() -> None:
    # c0*a + (c1*a + c2*a + ...): mul (4) then the add chain (4 × 7)
    s = coefficient_stencil("o", "a")
    assert stencil_latency(s, LAT) == 4 + 4 * 7
    e = Binary("+", Call("sqrt", (A,)), Binary("*", A, A))
    assert expr_latency(e, LAT) == 16 + 7


def test_minmax_is_a_balanced_tree_and_constants_are_free() -> None:
    assert expr_latency(Call("max", (A, A, A, A, A)), LAT) == 3 * 2
    assert expr_latency(Call("min", (A, A)), LAT) == 2
    assert expr_latency(Binary("*", Unary("-", Const(2.0, "pyfloat")), A), LAT) == 4
    assert expr_latency(Select(Binary("<", A, A), A, Unary("-", A)), LAT) == 7 + 1


def test_temporaries_are_on_the_path() -> None:
    t0 = Temp("t0", None, Call("sqrt", (A,)))
    t1 = Temp("t1", None, Binary("*", Var("t0"), A))
    s = stencil("o", Binary("+", Var("t1"), Var("k")), temps=(t0, t1))
    assert stencil_latency(s, LAT) == 16 + 4 + 7
