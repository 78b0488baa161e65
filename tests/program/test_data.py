"""Input data: files relative to the program, constants, seeded random and generated values, checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from tests.conftest import CORPUS


def write(tmp: Path, data: object, dims: list[int] | None = None, dtype: str = "float64") -> Path:
    prog = {
        "inputs": {"a": {"data": data, "data_type": dtype}},
        "outputs": ["b"],
        "dimensions": dims or [2, 3],
        "program": {
            "b": {"computation_string": "b = a[j, k]", "boundary_conditions": {}, "data_type": dtype}
        },
    }
    path = tmp / "p.json"
    path.write_text(json.dumps(prog))
    return path


def inputs_of(path: Path, seed: int = 0, data_dir: Path | None = None) -> dict[str, np.ndarray]:
    p = bind_shape(load_program(path), {})
    return make_inputs(p, {}, seed, data_dir)


def test_dat_file_relative_to_program(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    np.arange(6, dtype="<f8").tofile(tmp_path / "d" / "a.dat")
    a = inputs_of(write(tmp_path, "d/a.dat"))["a"]
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_csv_file(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("1,2,3\n4,5,6\n")
    assert inputs_of(write(tmp_path, "a.csv"))["a"].tolist() == [[1, 2, 3], [4, 5, 6]]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus absent")
def test_corpus_helper_files_agree(tmp_path: Path) -> None:
    for name in ("helper_test.csv", "helper_test.dat"):
        prog = write(tmp_path, str(CORPUS / "stencilflow" / name), dims=[2])
        text = prog.read_text().replace('"b = a[j, k]"', '"b = a[k]"')
        prog.write_text(text)
        assert inputs_of(prog, data_dir=CORPUS / "stencilflow")["a"].tolist() == [7.0, 7.0]
        with pytest.raises(StencilmapError, match=r"is outside .*--data-dir"):
            inputs_of(prog)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(
        StencilmapError, match=r"p.json: inputs.a.data: data file not found: .*a.dat.*--input a="
    ):
        inputs_of(write(tmp_path, "a.dat"))


def test_wrong_size_file(tmp_path: Path) -> None:
    np.arange(5, dtype="<f8").tofile(tmp_path / "a.dat")
    with pytest.raises(StencilmapError, match="has 5 values, expected 6"):
        inputs_of(write(tmp_path, "a.dat"))


def test_constant_and_inline(tmp_path: Path) -> None:
    assert (inputs_of(write(tmp_path, "constant:2.5"))["a"] == 2.5).all()
    assert inputs_of(write(tmp_path, [[1, 2, 3], [4, 5, 6]]))["a"].tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(StencilmapError, match="inline data has 2 values, expected 6"):
        inputs_of(write(tmp_path, [1, 2]))


def test_random_is_seeded_and_in_range(tmp_path: Path) -> None:
    path = write(tmp_path, "random:2-3", dims=[50, 50])
    a, b, c = inputs_of(path, 1)["a"], inputs_of(path, 1)["a"], inputs_of(path, 2)["a"]
    assert (a == b).all() and not (a == c).all()
    assert a.min() >= 2 and a.max() < 3
    ints = inputs_of(write(tmp_path, "random:0-3", dims=[50, 50], dtype="int32"))["a"]
    assert set(np.unique(ints).tolist()) == {0, 1, 2, 3}


SODA = "kernel: k\ninput float: a(16, *)\ninput float: b\noutput float: o(0, 0) = a(0, 0) + b(0, 1)\n"


def test_soda_shape_from_supplied_input_or_default() -> None:
    p = parse_soda(SODA)
    assert bind_shape(p, {}).shape == (16, 16)
    assert bind_shape(p, {"a": np.zeros((5, 16), np.float32)}).shape == (5, 16)
    assert bind_shape(p, {}, (7, 9)).shape == (7, 9)


def test_supplied_inputs_are_checked() -> None:
    p = bind_shape(parse_soda(SODA), {}, (4, 16))
    good = np.zeros((4, 16), np.float32)
    make_inputs(p, {"a": good, "b": good}, 0)
    with pytest.raises(StencilmapError, match="--input a: has rank 1, expected 2"):
        make_inputs(p, {"a": np.zeros(4, np.float32)}, 0)
    with pytest.raises(StencilmapError, match=r"--input a: has shape \[4, 15\], expected \[4, 16\]"):
        make_inputs(p, {"a": np.zeros((4, 15), np.float32)}, 0)
    with pytest.raises(StencilmapError, match="--input a: has dtype float64, expected float32"):
        make_inputs(p, {"a": np.zeros((4, 16))}, 0)
    with pytest.raises(StencilmapError, match="no input named 'zz'"):
        make_inputs(p, {"zz": good}, 0)


def test_generated_inputs_are_reproducible() -> None:
    p = bind_shape(parse_soda(SODA), {})
    x, y = make_inputs(p, {}, 5), make_inputs(p, {}, 5)
    assert (x["a"] == y["a"]).all() and not (x["a"] == x["b"]).all()
