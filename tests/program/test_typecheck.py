"""Typing refuses what an executor could not compute: expressions NumPy itself rejects under NumPy semantics
(found by ``benchmarks/difffuzz.py``: verify accepted them and the reference raised a TypeError)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stencilmap.backends.reference import run_reference
from stencilmap.errors import StencilmapError
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.expr import Binary, Const, Ref
from stencilmap.program.ir import Program
from stencilmap.program.stencilflow import parse_stencilflow
from stencilmap.program.typecheck import ExprTypeError, TypeEnv, infer
from stencilmap.program.verify import verify


def load(text: str) -> Program:
    program = parse_stencilflow(text, "t.json")
    verify(program)
    return program


def sf(computation: str, dtypes: dict[str, str], out: str = "int64") -> str:
    return json.dumps({
        "inputs": {n: {"data_type": t} for n, t in dtypes.items()},
        "outputs": ["b"],
        "dimensions": [4, 5],
        "program": {"b": {"computation_string": f"b = {computation}", "boundary_conditions": "shrink",
                          "data_type": out}},
    })  # fmt: skip


@pytest.mark.parametrize("op", ["&", "|", "^"])
def test_bitwise_operands_without_a_common_integer_type_are_refused(op: str) -> None:
    """NumPy 2 computes uint64 with int64 in float64, which has no bitwise operations."""
    with pytest.raises(StencilmapError, match=f"operator '{re_escape(op)}' on uint64 and int64"):
        load(sf(f"a[j, k] {op} c[j, k]", {"a": "uint64", "c": "int64"}))
    env = TypeEnv("c", {"a": "uint64", "c": "int64"}, {}, {})
    assert infer(Binary(op, Ref("a", (0, 0)), Ref("c", (0, 0))), env) == "uint64"  # C: the unsigned type


@pytest.mark.parametrize("rhs", ["(c[j, k] > 1)", "True"])
def test_subtracting_booleans_is_refused_under_numpy(rhs: str) -> None:
    with pytest.raises(StencilmapError, match="binary '-' of two booleans"):
        load(sf(f"(a[j, k] < 3) - {rhs}", {"a": "int32", "c": "int32"}))
    env = TypeEnv("numpy", {}, {}, {})
    with pytest.raises(ExprTypeError):
        infer(Binary("-", Const(True, "pybool"), Const(False, "pybool")), env)
    c_env = TypeEnv("c", {"a": "bool"}, {}, {})  # C promotes both to int
    assert infer(Binary("-", Ref("a", ()), Ref("a", ())), c_env) == "int32"


def test_what_numpy_computes_stays_accepted_and_runs() -> None:
    """Booleans add and multiply (or / and), unsigned with unsigned and signed with signed combine; the
    reference computes each."""
    text = sf(
        "((a[j, k] < 3) + (c[j, k] > 1)) * ((a[j, k] & 7) ^ (c[j, k] | 1)) + ((u[j, k] & v[j, k]) > 2)",
        {"a": "int32", "c": "int64", "u": "uint64", "v": "uint8"},
    )
    p = bind_shape(load(text), {})
    values = make_inputs(p, {}, 1)
    got = run_reference(p, values)["b"]
    a, c, u, v = (values[n].astype(np.int64) for n in "acuv")
    want = ((a < 3) | (c > 1)) * ((a & 7) ^ (c | 1)) + ((u & v) > 2)
    np.testing.assert_array_equal(got, want)


def re_escape(op: str) -> str:
    return "\\" + op if op in "|^" else op


def test_the_environment_tables_are_built_once_per_program() -> None:
    """Every stencil of a program shares one table of field types (built once, read only), not a copy of
    all the program's fields per stencil: typing a program of thousands of stencils stays linear."""
    from stencilmap.program.typecheck import stencil_env

    program = load(sf("a[j, k] + c[j, k]", {"a": "int32", "c": "int64"}))
    envs = [stencil_env(program, s) for s in program.stencils * 3]
    assert all(e.fields is envs[0].fields and e.scalars is envs[0].scalars for e in envs)
    assert dict(envs[0].fields) == {"a": "int32", "c": "int64", "b": "int64"}
    with pytest.raises(TypeError):
        envs[0].fields["d"] = "int8"  # type: ignore[index]
