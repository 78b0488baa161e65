"""The command line: every example runs; bad input is one line on stderr with exit status 2."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap import __version__
from stencilmap.cli import main
from tests.conftest import CORPUS, EXAMPLE_FILES

runner = CliRunner()


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_every_example_runs(path: Path, tmp_path: Path) -> None:
    result = runner.invoke(main, ["run", str(path), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for name, file in report["outputs"].items():
        arr = np.load(file)
        field = next(f for f in report["fields"] if f["name"] == name)
        assert list(arr.shape) == field["shape"] and str(arr.dtype) == field["dtype"]
    assert {"program", "format", "shape", "fields", "outputs", "seconds"} <= set(report)


def test_table_output_and_default_out_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["run", str(EXAMPLE_FILES[0].parent / "jacobi2d.soda")])
    assert result.exit_code == 0, result.output
    assert "defined region" in result.stdout and "jacobi2d" in result.stdout
    assert (tmp_path / "out" / "jacobi2d" / "w.npy").is_file()


def test_supplied_input_is_used(tmp_path: Path) -> None:
    v = np.ones((10, 64), dtype=np.float32)
    np.save(tmp_path / "v.npy", v)
    prog = EXAMPLE_FILES[0].parent / "laplace2d.soda"
    result = runner.invoke(
        main, ["run", str(prog), "--input", f"v={tmp_path / 'v.npy'}", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    w = np.load(tmp_path / "w.npy")
    assert w.shape == (10, 64) and w[5, 5] == 1.0 and np.isnan(w[0, 0])


def test_version_and_help() -> None:
    assert __version__ in runner.invoke(main, ["--version"]).output
    assert "Example" in runner.invoke(main, ["--help"]).output
    assert "Examples:" in runner.invoke(main, ["run", "--help"]).output


def bad(tmp_path: Path, args: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "stencilmap", *args], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert list(tmp_path.glob("out*")) == [], "nothing may be written on error"
    return lines[0]


def test_bad_syntax(tmp_path: Path) -> None:
    (tmp_path / "b.soda").write_text(
        "kernel: k\ninput float: a(4, *)\noutput float: o(0, 0) = a(0, 0) +* 2\n"
    )
    assert "b.soda:3:34: syntax error" in bad(tmp_path, ["run", "b.soda"])


def test_unknown_field(tmp_path: Path) -> None:
    (tmp_path / "b.soda").write_text("kernel: k\ninput float: a(4, *)\noutput float: o(0, 0) = c(0, 0)\n")
    assert "b.soda:3:1: stencil 'o': undefined field 'c'" in bad(tmp_path, ["run", "b.soda"])


def test_unknown_json_key(tmp_path: Path) -> None:
    prog = json.loads((EXAMPLE_FILES[0].parent / "heat3d.json").read_text())
    prog["program"]["T1"]["boundary"] = "x"
    (tmp_path / "p.json").write_text(json.dumps(prog))
    assert "p.json: program.T1.boundary: unknown field" in bad(tmp_path, ["run", "p.json"])


def test_bad_dtype(tmp_path: Path) -> None:
    (tmp_path / "b.soda").write_text("kernel: k\ninput flot: a(4, *)\noutput float: o(0, 0) = a(0, 0)\n")
    assert "unknown type 'flot'" in bad(tmp_path, ["run", "b.soda"])


def test_cyclic_program(tmp_path: Path) -> None:
    (tmp_path / "c.soda").write_text(
        "kernel: k\ninput float: a(4, *)\nlocal float: t(0, 0) = u(0, 1)\nlocal float: u(0, 0) = t(0, 1)\n"
        "output float: o(0, 0) = u(0, 0) + a(0, 0)\n"
    )
    assert "cyclic program" in bad(tmp_path, ["run", "c.soda"])


@pytest.mark.parametrize(
    ("array", "what"),
    [(np.zeros(64, np.float32), "has rank 1, expected 2"),
     (np.zeros((4, 64), np.float64), "has dtype float64, expected float32")],
)  # fmt: skip
def test_wrong_input_array(tmp_path: Path, array: np.ndarray, what: str) -> None:
    np.save(tmp_path / "v.npy", array)
    prog = str(EXAMPLE_FILES[0].parent / "laplace2d.soda")
    assert what in bad(tmp_path, ["run", prog, "--input", "v=v.npy"])


def test_wrong_input_shape_for_fixed_grid(tmp_path: Path) -> None:
    np.save(tmp_path / "T.npy", np.zeros((2, 2, 2), np.float32))
    prog = str(EXAMPLE_FILES[0].parent / "heat3d.json")
    assert "--input T: has shape [2, 2, 2], expected [32, 64, 64]" in bad(
        tmp_path, ["run", prog, "--input", "T=T.npy"]
    )


def test_missing_program_and_input_files(tmp_path: Path) -> None:
    assert "nope.soda: no such file" in bad(tmp_path, ["run", "nope.soda"])
    prog = str(EXAMPLE_FILES[0].parent / "laplace2d.soda")
    assert "--input v=x.npy: no such file" in bad(tmp_path, ["run", prog, "--input", "v=x.npy"])


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus absent")
def test_unpublished_data_file_names_the_file(tmp_path: Path) -> None:
    line = bad(tmp_path, ["run", str(CORPUS / "stencilflow" / "horidiff_min.json")])
    assert "inputs.inA.data: data file not found" in line and "inA_float32.dat" in line


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus absent")
def test_unpublished_data_supplied_with_input(tmp_path: Path) -> None:
    np.save(tmp_path / "inA.npy", np.arange(10, dtype=np.float32))
    prog = str(CORPUS / "stencilflow" / "horidiff_min.json")
    result = runner.invoke(
        main, ["run", prog, "--input", f"inA={tmp_path / 'inA.npy'}", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    out = np.load(tmp_path / "out.npy")
    # out = k2 + k3 = (k1 + k0[i+1] + k0) + (k0 + k1[i+1,j+1,k+1] + k1), k0 = k1 = inA[i], zero outside
    i = np.arange(10, dtype=np.float32)
    nxt = np.append(i[1:], 0)
    expect_inner = 3 * i + nxt + i + nxt
    assert np.allclose(out[:9, 0, 0], expect_inner[:9])


def test_bad_option_values(tmp_path: Path) -> None:
    prog = str(EXAMPLE_FILES[0].parent / "laplace2d.soda")
    result = subprocess.run([sys.executable, "-m", "stencilmap", "run", prog, "--shape", "4,x"],
                            capture_output=True, text=True, cwd=tmp_path, check=False)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr and "--shape" in result.stderr


def test_csv_is_one_row_per_field(tmp_path: Path) -> None:
    dag = str(EXAMPLE_FILES[0].parent / "dag_listing1.json")
    result = runner.invoke(main, ["run", dag, "--out", str(tmp_path), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["field", "role", "shape", "dtype", "defined_region", "defined_points", "source"]
    assert [r[0] for r in rows[1:]] == ["a0", "a1", "a2", "b4"]
    assert rows[4][4] == "[1:31, 0:32, 0:32]" and rows[4][6] == str(tmp_path / "b4.npy")
