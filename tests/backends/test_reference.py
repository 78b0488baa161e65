"""Reference executor on hand-computed cases: boundaries, shrink, lower dimensions, iterate, dtypes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stencilmap.backends.reference import defined_region, run_reference, shifted
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from stencilmap.program.stencilflow import parse_stencilflow
from tests.conftest import CORPUS, CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, UNPUBLISHED_DATA


def run_json(prog: dict, **supplied: np.ndarray) -> dict[str, np.ndarray]:  # type: ignore[type-arg]
    p = parse_stencilflow(json.dumps(prog), "t.json")
    p = bind_shape(p, supplied)
    return dict(run_reference(p, make_inputs(p, supplied, 0)).outputs)


def one(code: str, bc: dict | str, dims: list[int], data: list[float]) -> np.ndarray:  # type: ignore[type-arg]
    prog = {
        "inputs": {"a": {"data": data, "data_type": "float64"}},
        "outputs": ["b"],
        "dimensions": dims,
        "program": {"b": {"computation_string": code, "boundary_conditions": bc, "data_type": "float64"}},
    }
    return run_json(prog)["b"]


def test_shifted() -> None:
    a = np.arange(5)
    v, m = shifted(a, (2,))
    assert v.tolist()[:3] == [2, 3, 4] and m.tolist() == [True, True, True, False, False]
    v, m = shifted(a, (-7,))
    assert not m.any()


def test_constant_boundary() -> None:
    out = one(
        "b = a[j, k] + a[j, k+2]", {"a": {"type": "constant", "value": 0.0}}, [2, 3], [0, 1, 2, 3, 4, 5]
    )
    np.testing.assert_allclose(out, [[2, 1, 2], [8, 4, 5]])  # StencilFlow's simulator.json without the 3.14


def test_copy_boundary_uses_the_centre_value() -> None:
    out = one("b = a[k-1] + a[k+1]", {"a": {"type": "copy"}}, [4], [1, 2, 3, 4])
    np.testing.assert_allclose(out, [1 + 2, 1 + 3, 2 + 4, 3 + 4])


def test_shrink_leaves_nan_and_reports_region() -> None:
    out = one("b = a[j-1, k] + a[j, k+1]", "shrink", [3, 3], list(range(9)))
    expected = np.full((3, 3), np.nan)
    expected[1:, :2] = [[0 + 4, 1 + 5], [3 + 7, 4 + 8]]
    np.testing.assert_allclose(out, expected)
    assert defined_region(~np.isnan(out)) == ((1, 3), (0, 2))


def test_undefined_points_propagate_through_the_dag() -> None:
    prog = {
        "inputs": {"a": {"data": "constant:1", "data_type": "float32"}},
        "outputs": ["c"],
        "dimensions": [6],
        "program": {
            "b": {"computation_string": "b = a[k+1]", "boundary_conditions": "shrink", "data_type": "float32"},
            "c": {"computation_string": "c = b[k-2]", "boundary_conditions": {"b": {"type": "constant", "value": 9}},
                  "data_type": "float32"},
        },
    }  # fmt: skip
    c = run_json(prog)["c"]
    # c[k] = b[k-2]: k < 2 reads outside → 9; b[5] is undefined (a[6] is outside) → c[... ] all defined here
    np.testing.assert_allclose(c, [9, 9, 1, 1, 1, 1])
    prog["program"]["c"]["computation_string"] = "c = b[k+0]"
    c = run_json(prog)["c"]
    assert np.isnan(c[5]) and not np.isnan(c[:5]).any()


def test_lower_dimensional_inputs_broadcast() -> None:
    prog = {
        "inputs": {
            "row": {"data": [1, 2, 3], "data_type": "float64", "input_dims": ["k"]},
            "col": {"data": [10, 20], "data_type": "float64", "input_dims": ["j"]},
            "s": {"data": 100.0, "data_type": "float64", "input_dims": []},
        },
        "outputs": ["o"],
        "dimensions": [2, 3],
        "program": {"o": {"computation_string": "o = row[k] + col[j] + s", "data_type": "float64",
                          "boundary_conditions": {}}},
    }  # fmt: skip
    np.testing.assert_allclose(run_json(prog)["o"], [[111, 112, 113], [121, 122, 123]])


def test_numpy_semantics_keep_float32_and_cast_to_data_type() -> None:
    prog = {
        "inputs": {"a": {"data": [0.1, 0.2], "data_type": "float32"}},
        "outputs": ["b", "c"],
        "dimensions": [2],
        "program": {
            "b": {"computation_string": "b = a[k] * 0.3", "boundary_conditions": {}, "data_type": "float32"},
            "c": {"computation_string": "c = a[k] * 0.3", "boundary_conditions": {}, "data_type": "float64"},
        },
    }
    out = run_json(prog)
    a = np.array([0.1, 0.2], dtype=np.float32)
    np.testing.assert_array_equal(out["b"], a * 0.3)
    np.testing.assert_array_equal(out["c"], (a * np.float32(0.3)).astype(np.float64))


SODA_INT = """kernel: k
input int16: a(4, *)
output int16: o(0, 0) = (a(0, 0) + a(1, 0)) / 3
"""


def test_c_semantics_int16_sum_in_int_then_truncated() -> None:
    p = bind_shape(parse_soda(SODA_INT), {}, (1, 4))
    a = np.array([[30000, 30000, -7, 1]], dtype=np.int16)
    out = run_reference(p, {"a": a}).outputs["o"]
    # (30000 + 30000) / 3 = 20000 (no int16 overflow before the division); (-7 + 1) / 3 = -2
    assert out.dtype == np.int16
    assert out[0, :3].tolist() == [20000, (30000 - 7) // 3, -2] and out[0, 3] == 0


JACOBI1D = """kernel: j
input float: a(*)
output float: b(0) = (a(-1) + a(0) + a(1)) * 0.25f
iterate: 2
border: {border}
"""


def test_iterate_with_border_ignore_shrinks_by_the_accumulated_halo() -> None:
    p = bind_shape(parse_soda(JACOBI1D.format(border="ignore")), {}, (8,))
    a = np.arange(8, dtype=np.float32)
    r = run_reference(p, {"a": a})
    assert defined_region(r.defined["b"]) == ((2, 6),)
    once = (a[:-2] + a[1:-1] + a[2:]) * np.float32(0.25)
    twice = (once[:-2] + once[1:-1] + once[2:]) * np.float32(0.25)
    np.testing.assert_array_equal(r.outputs["b"][2:6], twice)


def test_iterate_with_border_preserve_keeps_boundary_values() -> None:
    p = bind_shape(parse_soda(JACOBI1D.format(border="preserve")), {}, (6,))
    a = np.array([4, 0, 0, 0, 0, 8], dtype=np.float32)
    r = run_reference(p, {"a": a})
    assert r.defined["b"].all()
    step1 = np.array([4, 1, 0, 0, 2, 8], dtype=np.float32)
    step2 = np.array([4, 1.25, 0.25, 0.5, 2.5, 8], dtype=np.float32)
    assert step1[1] == 1
    np.testing.assert_array_equal(r.outputs["b"], step2)


RUNNABLE = [p for p in CORPUS_SODA + CORPUS_STENCILFLOW if p.name not in UNPUBLISHED_DATA] + EXAMPLE_FILES


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_every_bundled_program_runs(path: Path) -> None:
    p = load_program(path)
    shape = (64, 64) if path.name == "blur.soda" else None  # keep the 2000-wide corpus image small
    p = bind_shape(p, {}, shape)
    r = run_reference(p, make_inputs(p, {}, 0))
    for name, out in r.outputs.items():
        assert out.shape == p.shape and str(out.dtype) == p.field_dtype(name)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus absent")
def test_corpus_jacobi3d_with_zero_data_file() -> None:
    p = bind_shape(load_program(CORPUS / "stencilflow" / "jacobi3d_32x32x32.json"), {})
    b = run_reference(p, make_inputs(p, {}, 0)).outputs["b"]
    # a is all zeros from data/zeros_32x32x32_fp32.dat; the boundary constant is 1.0
    assert b[16, 16, 16] == 0.0
    assert b[0, 16, 16] == np.float32(0.16666666) * np.float32(1.0)
    assert b[0, 0, 0] == np.float32(0.16666666) * np.float32(3.0)


def _paper_fdtd(ez: np.ndarray, hx: np.ndarray, hy: np.ndarray, c: dict[str, np.ndarray], steps: int):  # type: ignore[no-untyped-def]
    """The OpenCL paper's 2-D FDTD (§5, the application table of Tables 4/5), written out directly: Hx and
    Hy from Ez, then Ez from the new Hx and Hy, fields outside the grid zero, C1..C4 the same every step."""
    z = np.float32(0)
    for _ in range(steps):
        ez_k1 = np.concatenate([ez[:, 1:], np.full((ez.shape[0], 1), z)], axis=1)  # Ez[j, k+1]
        ez_j1 = np.concatenate([ez[1:, :], np.full((1, ez.shape[1]), z)], axis=0)  # Ez[j+1, k]
        hx = hx - c["C3"] * (ez_k1 - ez)
        hy = hy - c["C4"] * (ez_j1 - ez)
        hx_k0 = np.concatenate([np.full((hx.shape[0], 1), z), hx[:, :-1]], axis=1)  # hx[j, k-1]
        hy_j0 = np.concatenate([np.full((1, hy.shape[1]), z), hy[:-1, :]], axis=0)  # hy[j-1, k]
        ez = ez - c["C1"] * (hx - hx_k0) + c["C2"] * (hy - hy_j0)
    return ez, hx, hy


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_fdtd_feedback_by_name_is_the_papers_time_stepping(steps: int) -> None:
    from dataclasses import replace

    from tests.conftest import EXAMPLES

    p = replace(load_program(EXAMPLES / "fdtd2d_iterate.json"), iterate=steps)
    rng = np.random.default_rng(steps)
    values = {i.name: rng.uniform(-1, 1, (64, 128)).astype(np.float32) for i in p.inputs}
    got = run_reference(p, values).outputs
    want = _paper_fdtd(values["Ez"], values["Hx"], values["Hy"], values, steps)
    for name, w in zip(("ez", "hx", "hy"), want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)


def test_progress_after_each_stencil_of_each_time_step() -> None:
    """A long reference run reports its advance (issue 25): (done, total) per stencil and time step."""
    from stencilmap.backends.reference import run_reference
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape, make_inputs
    from tests.conftest import EXAMPLES

    prog = bind_shape(load_program(EXAMPLES / "jacobi2d.soda"), {}, (8, 8))  # 4 time steps
    seen: list[tuple[int, int]] = []
    run_reference(prog, make_inputs(prog, {}, 0), lambda done, total: seen.append((done, total)))
    total = prog.iterate * len(prog.stencils)
    assert seen == [(n, total) for n in range(1, total + 1)] and total > 1
