"""Every compiled backend reproduces the reference's scalar semantics on edge values: C integer promotion
and wrap-around, division and remainder by zero and of the minimum by −1, float → integer truncation with
wrap-around and NaN → 0, NumPy's weak literals, floor division and modulo, float16, NaN-propagating min/max."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from stencilmap.backends.cpu import run_cpu
from stencilmap.backends.reference import run_reference
from stencilmap.program import Program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.expr import Binary, Cast, Const, Expr, Ref, Select, Unary
from stencilmap.program.soda import parse_soda
from stencilmap.program.stencilflow import parse_stencilflow
from stencilmap.program.verify import verify
from tests.backends.common import assert_matches

SHAPE = (4, 8)


def edge_ints(dtype: str, seed: int) -> np.ndarray:  # type: ignore[type-arg]
    info = np.iinfo(dtype)
    special = [0, 1, -1, 2, -2, 7, -7, info.min, info.max, info.min + 1, 3, -3, 100, -100, 5, -5]
    vals = np.array([v for v in special if info.min <= v <= info.max], dtype=np.int64)
    rng = np.random.default_rng(seed)
    return rng.permutation(np.resize(vals, SHAPE[0] * SHAPE[1])).reshape(SHAPE).astype(dtype)


def edge_floats(dtype: str, seed: int) -> np.ndarray:  # type: ignore[type-arg]
    special = [
        0.0,
        -0.0,
        1.5,
        -2.5,
        0.5,
        -0.5,
        np.nan,
        np.inf,
        -np.inf,
        1e10,
        -3e9,
        255.9,
        -128.7,
        65535.5,
        3.7,
        2.5,
    ]
    rng = np.random.default_rng(seed)
    return rng.permutation(np.resize(np.array(special), SHAPE[0] * SHAPE[1])).reshape(SHAPE).astype(dtype)


def check(p: Program, supplied: dict[str, np.ndarray]) -> None:  # type: ignore[type-arg]
    values = make_inputs(p, supplied, 0)
    got, _ = run_cpu(p, values, threads=2)
    assert_matches(p, run_reference(p, values), got)


C_INT_EXPRS = [
    ("int32", "a(0, 0) / b(0, 0)"),
    ("int32", "a(0, 0) % b(0, 0)"),
    ("int32", "a(0, 0) * b(0, 0) + a(0, 0)"),
    ("int8", "a(0, 0) + b(0, 0) * 3"),
    ("uint16", "uint16(a(0, 0)) * uint16(b(0, 0))"),
    ("uint32", "uint32(a(0, 0)) / uint32(b(0, 0)) + uint32(a(0, 0)) % 7"),
    ("int64", "int64(a(0, 0)) * 3000000000 - ~b(0, 0)"),
    ("int32", "max(a(0, 0), b(0, 0), 3) - min(a(0, 0), -b(0, 0))"),
]


@pytest.mark.parametrize(("out", "expr"), C_INT_EXPRS)
def test_c_integer_semantics(out: str, expr: str) -> None:
    text = f"kernel: k\ninput int32: a(8, *)\ninput int32: b(8, *)\noutput {out}: c(0, 0) = {expr}\n"
    p = bind_shape(parse_soda(text, "t.soda"), {}, SHAPE)
    check(p, {"a": edge_ints("int32", 1), "b": edge_ints("int32", 2)})


C_FLOAT_EXPRS = [
    ("int16", "int16(f(0, 0))"),
    ("uint8", "uint8(f(0, 0) * 2.0f)"),
    ("int32", "int32(f(0, 0)) + int32(g(0, 0))"),
    ("float", "round(f(0, 0)) + floor(g(0, 0)) - fabs(f(0, 0))"),
    ("float", "min(f(0, 0), g(0, 0)) + max(g(0, 0), f(0, 0))"),
    ("double", "sqrt(f(0, 0)) + f(0, 0) / g(0, 0)"),
    ("half", "f(0, 0) * 0.1f + g(0, 0)"),
]


@pytest.mark.parametrize(("out", "expr"), C_FLOAT_EXPRS)
def test_c_float_semantics(out: str, expr: str) -> None:
    text = f"kernel: k\ninput float: f(8, *)\ninput float: g(8, *)\noutput {out}: c(0, 0) = {expr}\n"
    p = bind_shape(parse_soda(text, "t.soda"), {}, SHAPE)
    check(p, {"f": edge_floats("float32", 3), "g": edge_floats("float32", 4)})


A, B = Ref("a", (0, 0)), Ref("b", (0, 1))
# The SODA parser cannot read these yet (`&&`, `||`, `|`, `&` give it a two-child tree): built as IR.
C_LOGIC_EXPRS = [
    Binary("+", Select(Binary("&&", Binary("<", A, B), Binary("!=", A, Const(0, "int32"))), Unary("-", A),
                       Binary("^", B, Const(5, "int32"))), Unary("!", B)),
    Binary("&", Binary("|", A, B), Const(255, "int32")),
    Select(Binary("||", Binary(">", A, B), Binary("==", A, A)), Cast("int8", A), Unary("~", Cast("uint8", B))),
]  # fmt: skip


@pytest.mark.parametrize("expr", C_LOGIC_EXPRS)
@pytest.mark.parametrize("out", ["int16", "int32", "uint32"])
def test_c_logic_and_bitwise_semantics(expr: Expr, out: str) -> None:
    text = f"kernel: k\ninput int32: a(8, *)\ninput int32: b(8, *)\noutput {out}: c(0, 0) = a(0, 0)\n"
    p = bind_shape(parse_soda(text, "t.soda"), {}, SHAPE)
    p = replace(p, stencils=(replace(p.stencils[0], expr=expr),))
    verify(p)
    check(p, {"a": edge_ints("int32", 1), "b": edge_ints("int32", 2)})


NUMPY_EXPRS = [
    ("int32", "int32", "c = a[j, k] % b[j, k]"),
    ("int32", "int32", "c = a[j, k] // b[j, k]"),
    ("int8", "int8", "c = a[j, k] * b[j, k] + 100"),
    ("float64", "int32", "c = a[j, k] / b[j, k]"),
    ("int64", "int64", "c = a[j, k] ** 3"),
    ("float32", "float32", "c = a[j, k] % b[j, k] + a[j, k] // b[j, k]"),
    ("float32", "float32", "c = a[j, k] * 0.25 + b[j, k] if a[j, k] < b[j, k] else min(a[j, k], b[j, k])"),
    ("float16", "float16", "c = a[j, k] * b[j, k] + a[j, k] / 3.0"),
    ("float16", "float16", "c = sqrt(a[j, k]) + max(a[j, k], b[j, k])"),
    ("uint8", "float64", "c = uint8(a[j, k]) + int16(b[j, k])"),
    ("bool", "int16", "c = (a[j, k] > b[j, k]) and not (a[j, k] == 0)"),
    (
        "float64",
        "float64",
        "t = a[j, k] - b[j, k]; c = round(t) + fmod(a[j, k], 2.0) + fdim(a[j, k], b[j, k])",
    ),
]


@pytest.mark.parametrize(("out", "inp", "code"), NUMPY_EXPRS)
def test_numpy_semantics(out: str, inp: str, code: str) -> None:
    prog = {
        "inputs": {"a": {"data_type": inp}, "b": {"data_type": inp}},
        "outputs": ["c"],
        "dimensions": list(SHAPE),
        "program": {"c": {"computation_string": code, "boundary_conditions": "shrink", "data_type": out}},
    }
    p = bind_shape(parse_stencilflow(json.dumps(prog), "t.json"), {})
    make = edge_floats if np.dtype(inp).kind == "f" else edge_ints
    check(p, {"a": make(inp, 5), "b": make(inp, 6)})
