"""Input data: files relative to the program, constants, seeded random and generated values, checks."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
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


@pytest.mark.parametrize("shape", [(0, 16), (5, 0)])
def test_an_empty_supplied_input_is_refused(shape: tuple[int, int]) -> None:
    with pytest.raises(StencilmapError, match=r"^--input a: has shape \[\d, \d+\]: an input of size 0"):
        bind_shape(parse_soda(SODA), {"a": np.zeros(shape, np.float32)})


def test_an_empty_input_is_a_one_line_exit_2_that_writes_nothing(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from stencilmap.cli import main

    (tmp_path / "p.soda").write_text(SODA)
    np.save(tmp_path / "a.npy", np.zeros((0, 16), np.float32))
    for backend in ("numpy", "cpu"):
        out = tmp_path / f"out-{backend}"
        args = ["run", str(tmp_path / "p.soda"), "--backend", backend, "--input", f"a={tmp_path / 'a.npy'}"]
        result = CliRunner().invoke(main, [*args, "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert "size 0" in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize(
    ("dtype", "text", "what"),
    [
        ("int32", "1,2,3\n4,1e20,6\n", "value 1e+20 at row 2, column 2 does not fit int32"),
        ("int32", "1,2,3\n4,5,3.7\n", "value 3.7 at row 2, column 3 is not an integer (int32)"),
        ("int32", "1,2,3\n4,5,nan\n", "value nan at row 2, column 3 does not fit int32"),
        ("uint8", "1,2,-1,4,5,6\n", "value -1 at row 1, column 3 does not fit uint8"),
        ("float32", "1,2,3\n1e400,5,6\n", "value inf at row 2, column 1 does not fit float32"),
        ("float32", "1,2,3\n1e39,5,6\n", "value 1e+39 at row 2, column 1 does not fit float32"),
    ],
)
def test_csv_values_must_fit_the_input_dtype(tmp_path: Path, dtype: str, text: str, what: str) -> None:
    (tmp_path / "a.csv").write_text(text)
    with _no_warnings(), pytest.raises(StencilmapError) as info:
        inputs_of(write(tmp_path, "a.csv", dtype=dtype))
    assert str(info.value) == f"{tmp_path / 'p.json'}: inputs.a.data: data file a.csv: {what}"


def test_raw_float_data_must_be_finite(tmp_path: Path) -> None:
    np.array([1, 2, np.nan, 4, np.inf, 6], "<f4").tofile(tmp_path / "a.dat")
    with pytest.raises(StencilmapError, match=r"data file a\.dat: value inf at index 4 does not fit float32"):
        inputs_of(write(tmp_path, "a.dat", dtype="float32"))


def test_an_empty_csv_file_warns_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("")
    with _no_warnings(), pytest.raises(StencilmapError, match="has 0 values, expected 6"):
        inputs_of(write(tmp_path, "a.csv"))


def test_a_file_outside_is_refused_whether_or_not_it_exists(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "there.dat").write_bytes(b"\0" * 48)
    for name in ("../there.dat", "../absent.dat", "/nonexistent_zz/x.dat"):
        with pytest.raises(StencilmapError, match=r"inputs.a.data: data file .* is outside "):
            inputs_of(write(tmp_path / "p", name))


@contextmanager
def _no_warnings() -> Iterator[None]:
    """Turn any Python warning into an exception (stencilmap must not print one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_inline_values_must_fit_the_input_dtype(tmp_path: Path) -> None:
    with pytest.raises(
        StencilmapError, match=r"inline data: value 3\.5 at index 4 is not an integer \(int32\)"
    ):
        inputs_of(write(tmp_path, [[1, 2, 3], [4, 3.5, 6]], dtype="int32"))
    with pytest.raises(StencilmapError, match=r"inline data: value 1e\+39 at index 0 does not fit float32"):
        inputs_of(write(tmp_path, [1e39, 2, 3, 4, 5, 6], dtype="float32"))


def test_csv_int64_limit_is_exact(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("1,2,3,4,5,9223372036854775808\n")
    with pytest.raises(StencilmapError, match=r"at row 1, column 6 does not fit int64"):
        inputs_of(write(tmp_path, "a.csv", dtype="int64"))
