"""Typing rules: C promotions and conversions (SODA), NumPy 2 weak scalars (StencilFlow)."""

from __future__ import annotations

import pytest

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Const, Ref, Unary
from stencilmap.program.typecheck import TypeEnv, infer


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [("int16", "int16", "int32"), ("uint8", "int8", "int32"), ("int32", "uint32", "uint32"),
     ("int64", "uint32", "int64"), ("uint64", "int64", "uint64"), ("float32", "int64", "float32"),
     ("float32", "float64", "float64"), ("float16", "float16", "float32"), ("uint16", "uint16", "int32")],
)  # fmt: skip
def test_c_usual_arithmetic_conversions(a: str, b: str, want: str) -> None:
    assert dt.c_common(a, b) == want


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [("float32", "pyfloat", "float32"), ("int16", "pyint", "int16"), ("int32", "pyfloat", "float64"),
     ("float32", "float64", "float64"), ("pyint", "pyfloat", "pyfloat"), ("int16", "uint16", "int32")],
)  # fmt: skip
def test_numpy_weak_scalars(a: str, b: str, want: str) -> None:
    assert dt.np_common(a, b) == want


def env(semantics: str) -> TypeEnv:
    return TypeEnv(semantics, {"h": "int16", "f": "float32", "u": "uint16"}, {}, {})  # type: ignore[arg-type]


def test_c_expression_types() -> None:
    c = env("c")
    assert infer(Binary("+", Ref("h", ()), Ref("h", ())), c) == "int32"
    assert infer(Binary("<", Ref("f", ()), Ref("f", ())), c) == "int32"
    assert infer(Unary("-", Ref("u", ())), c) == "int32"
    assert infer(Call("sqrt", (Ref("f", ()),)), c) == "float32"
    assert infer(Call("sqrt", (Ref("h", ()),)), c) == "float64"
    assert infer(Binary("*", Ref("f", ()), Const(0.2, "float64")), c) == "float64"


def test_numpy_expression_types() -> None:
    n = env("numpy")
    assert infer(Binary("*", Ref("f", ()), Const(0.25, "pyfloat")), n) == "float32"
    assert infer(Binary("/", Ref("h", ()), Const(2, "pyint")), n) == "float64"
    assert infer(Binary("<", Ref("f", ()), Const(1, "pyint")), n) == "bool"
    assert infer(Call("sqrt", (Ref("f", ()),)), n) == "float32"


def test_literal_types() -> None:
    assert dt.c_literal_int_type(2**31, "", True) == "int64"
    assert dt.c_literal_int_type(2**31, "", False) == "uint32"
    assert dt.c_literal_int_type(1, "ull", True) == "uint64"
