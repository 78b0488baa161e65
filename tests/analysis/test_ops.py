"""Operation counts by kind and operational intensity."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stencilmap.analysis.intensity import bytes_per_point, operational_intensity
from stencilmap.analysis.ops import OpCounts, count_ops, ops_per_point, stencil_ops
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Input, Temp

from .helpers import coefficient_stencil, program, refs_sum, stencil

A = Ref("a", (0, 0))
B = Ref("a", (0, 1))


def test_five_coefficient_stencil_is_nine_ops_per_eight_bytes() -> None:
    p = program((64, 64), ["a"], [coefficient_stencil("b", "a")])
    ops = stencil_ops(p.stencils[0])
    assert ops.as_dict() == {"add": 4, "mul": 5}
    assert bytes_per_point(p, (64, 64)) == 8.0
    assert operational_intensity(p, (64, 64)) == 9 / 8


def test_kinds() -> None:
    cases: list[tuple[Expr, dict[str, int]]] = [
        (Binary("-", A, B), {"add": 1}),
        (Binary("%", A, B), {"div": 1}),
        (Binary("//", A, B), {"div": 1}),
        (Binary("**", A, B), {"pow": 1}),
        (Call("sqrt", (A,)), {"sqrt": 1}),
        (Call("exp", (A,)), {"exp": 1}),
        (Call("min", (A, B, A, B)), {"minmax": 3}),
        (Call("fma", (A, B, A)), {"mul": 1, "add": 1}),
        (Select(Binary("<", A, B), A, B), {"select": 1, "compare": 1}),
        (Unary("!", Binary("&&", A, B)), {"logic": 2}),
        (Binary("^", Unary("~", A), B), {"bitwise": 2}),
        (Cast("int32", A), {"cast": 1}),
        (Unary("-", A), {"add": 1}),  # negation counts as a subtraction from zero
        (Unary("+", A), {}),
    ]
    for e, want in cases:
        assert count_ops(e).as_dict() == want, e


def test_constant_subexpressions_are_folded() -> None:
    neg = Unary("-", Const(0.5, "pyfloat"))
    third = Binary("/", Const(1.0, "pyfloat"), Const(3, "pyint"))
    assert count_ops(Binary("*", neg, A)).as_dict() == {"mul": 1}
    assert count_ops(Binary("*", third, A)).as_dict() == {"mul": 1}
    # a named constant is not folded: it is a value the hardware reads
    assert count_ops(Binary("*", Var("c"), Unary("-", Var("c")))).as_dict() == {"mul": 1, "add": 1}


def test_temporaries_count_once() -> None:
    t = Temp("t", None, Binary("*", A, B))
    s = stencil("o", Binary("+", Var("t"), Var("t")), temps=(t,))
    assert stencil_ops(s).as_dict() == {"add": 1, "mul": 1}


def test_iterate_multiplies_ops_not_bytes() -> None:
    p = program((32, 32), ["a"], [coefficient_stencil("b", "a")], iterate=4)
    assert ops_per_point(p).total == 36
    assert bytes_per_point(p, (32, 32)) == 8.0
    assert operational_intensity(p, (32, 32)) == 36 / 8


def test_lower_dimensional_inputs_cost_their_own_size() -> None:
    shape = (8, 16, 32)
    ins = [Input("a", "float64", (0, 1, 2)), Input("row", "float32", (2,)), Input("s", "float64", ())]
    e = Binary("+", Binary("+", Ref("a", (0, 0, 0)), Ref("row", (1,))), Ref("s", ()))
    p = program(shape, ins, [stencil("o", e, "float64")])
    n = 8 * 16 * 32
    assert bytes_per_point(p, shape) == 8 + 4 * 32 / n + 8 / n + 8
    assert operational_intensity(p, shape) == 2 / bytes_per_point(p, shape)


def test_opcounts_arithmetic() -> None:
    a = OpCounts.of([("add", 2), ("mul", 1)])
    b = OpCounts.of([("add", 1), ("sqrt", 1), ("mul", 0)])
    assert (a + b).as_dict() == {"add": 3, "mul": 1, "sqrt": 1}
    assert a.scaled(3)["add"] == 6 and a["div"] == 0 and (a + b).total == 5


@given(st.integers(1, 12))
def test_sum_of_n_reads_is_n_minus_one_adds(n: int) -> None:
    e = refs_sum("a", [(0, i) for i in range(n)])
    assert count_ops(e).as_dict() == ({"add": n - 1} if n > 1 else {})
