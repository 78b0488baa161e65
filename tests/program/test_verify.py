"""verify(): each invariant violation is reported with where it happened."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stencilmap.errors import StencilmapError
from stencilmap.program.expr import Binary, Call, Const, Ref, Var
from stencilmap.program.ir import Input, Program, Stencil
from stencilmap.program.verify import verify


def prog(*stencils: Stencil, inputs: tuple[Input, ...] | None = None, semantics: str = "numpy") -> Program:
    return Program(
        name="p",
        format="stencilflow" if semantics == "numpy" else "soda",
        semantics=semantics,  # type: ignore[arg-type]
        shape=(4, 4),
        inputs=inputs if inputs is not None else (Input("a", "float32", (0, 1)), Input("s", "float32", ())),
        stencils=stencils,
        outputs=(stencils[-1].name,),
        path="p.json",
    )


def st(name: str, expr, dtype: str = "float32") -> Stencil:  # type: ignore[no-untyped-def]
    return Stencil(name, dtype, expr, loc=f"p.json: program.{name}")


def test_valid_program_passes() -> None:
    verify(prog(st("b", Binary("+", Ref("a", (0, 1)), Ref("s", ())))))


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (prog(st("b", Ref("c", (0, 0)))), "undefined field 'c'"),
        (prog(st("b", Ref("s", (1,)))), "scalar 's' cannot be read at an offset"),
        (prog(st("b", Ref("a", (1,)))), "spans 2 dimension(s), accessed with 1"),
        (prog(st("b", Var("zz"))), "undefined name 'zz'"),
        (prog(st("b", Call("frobnicate", (Ref("a", (0, 0)),)))), "unknown function 'frobnicate'"),
        (prog(st("b", Call("sqrt", (Ref("a", (0, 0)), Ref("a", (0, 0)))))), "takes 1 arguments"),
        (prog(st("b", Ref("a", (0, 0))), st("b", Ref("a", (0, 0)))), "duplicate name 'b'"),
        (prog(st("a", Ref("s", ()))), "duplicate name 'a'"),
        (
            prog(st("b", Binary("%", Ref("a", (0, 0)), Const(2, "int32"))), semantics="c"),
            "needs integer operands",
        ),
        (prog(st("b", Binary("&", Ref("a", (0, 0)), Const(2, "pyint")))), "needs integer operands"),
        (prog(st("b", Binary("//", Ref("a", (0, 0)), Const(2, "int32"))), semantics="c"), "is not C"),
        (prog(st("b", Ref("a", (0, 0)), dtype="float31")), "bad dtype 'float31'"),
    ],
)
def test_violations_are_reported(program: Program, message: str) -> None:
    with pytest.raises(StencilmapError) as info:
        verify(program)
    assert message in str(info.value)
    assert str(info.value).startswith("p.json")


def test_cycles_are_reported_with_the_path() -> None:
    p = prog(st("b", Ref("c", (0, 0))), st("c", Ref("b", (0, 1))))
    with pytest.raises(StencilmapError, match=r"cyclic program: (b -> c -> b|c -> b -> c)"):
        verify(p)


def test_outputs_must_be_stencils() -> None:
    p = replace(prog(st("b", Ref("a", (0, 0)))), outputs=("a",))
    with pytest.raises(StencilmapError, match="output 'a' is not computed"):
        verify(p)


def test_iterate_needs_matching_inputs_and_outputs() -> None:
    p = replace(prog(st("b", Ref("a", (0, 0)), dtype="float64")), iterate=2)
    with pytest.raises(StencilmapError, match="iterate/preserve need outputs matching inputs"):
        verify(p)
