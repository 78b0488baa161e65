"""``stencilmap codegen``: the --help examples run; --json keys; exit status 0 (valid), 1 (mismatch or
deadlock), 2 (bad input: one line on stderr, nothing written)."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.cli.codegen import codegen_cmd
from stencilmap.codegen.opencl_run import pocl_available
from tests.conftest import EXAMPLES, ROOT

runner = CliRunner()
JACOBI = str(EXAMPLES / "jacobi2d.soda")
DAG = str(EXAMPLES / "dag_listing1.json")


def invoke(args: list[str]) -> tuple[int, str, str]:
    result = runner.invoke(codegen_cmd, args)
    return result.exit_code, result.stdout, result.stderr


def _help_examples() -> list[str]:
    text = runner.invoke(codegen_cmd, ["--help"]).output
    lines = text.split("Examples:")[1].splitlines()
    return [ln.strip() for ln in lines if ln.strip().startswith("stencilmap codegen")]


@pytest.mark.parametrize("example", _help_examples())
def test_help_examples_run(example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if (
        "--target opencl" in example
        and "--arch" not in example
        and ".soda" in example
        and not pocl_available()
    ):
        pytest.skip("no OpenCL CPU runtime (PoCL)")
    monkeypatch.chdir(ROOT)
    args = shlex.split(example)[2:]
    args[args.index("--out") + 1] = str(tmp_path / "out")
    code, out, err = invoke(args)
    assert code == 0, out + err
    assert (tmp_path / "out" / "README.md").is_file() and (tmp_path / "out" / "Makefile").is_file()


def test_json_report_and_csim_outputs(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    code, text, _ = invoke(
        [
            JACOBI,
            "--target",
            "hls",
            "--unroll",
            "2",
            "--iterate",
            "2",
            "--out",
            str(out),
            "--verify",
            "--json",
        ]
    )
    assert code == 0, text
    report = json.loads(text)
    assert {"files", "valid", "max_abs_error", "compile_seconds", "run_seconds"} <= set(report)
    assert report["valid"] is True and report["bit_exact"] is True and report["max_abs_error"] == 0
    assert "kernel.cpp" in report["files"] and "connectivity.cfg" in report["files"]
    w = np.load(out / "csim" / "w.npy")
    assert w.shape == (64, 64) and np.isfinite(w).all()
    assert all((out / f).is_file() for f in report["files"])


def test_without_verify_writes_the_files(tmp_path: Path) -> None:
    code, text, _ = invoke([DAG, "--target", "hls", "--out", str(tmp_path / "g")])
    assert code == 0, text
    assert "kernel.cpp" in text and not (tmp_path / "g" / "csim").exists()


def test_deadlock_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "dl"
    code, text, _ = invoke(
        [DAG, "--target", "opencl", "--delay-buffers", "min", "--out", str(out), "--verify", "--json"]
    )
    assert code == 1
    report = json.loads(text)
    assert report["valid"] is False and report["status"] == "deadlock"
    # as in the simulator: the join b4 starves while the short path's delay buffer is full
    assert "b4.pe reads empty" in report["message"] and "b4.b2.delay writes full" in report["message"]
    code, text, _ = invoke([DAG, "--target", "opencl", "--out", str(out), "--verify", "--json"])
    assert code == 0 and json.loads(text)["valid"] is True  # the computed depths finish


def _nothing_written(parent: Path, name: str) -> None:
    assert not (parent / name).exists()
    assert not [p for p in parent.iterdir() if p.name.startswith(f".{name}.")]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--target", "vhdl"], "unknown target 'vhdl'"),
        (["--target", "opencl", "--arch", "soda"], "cannot express a 'soda' design"),
        (["--target", "hls", "--unroll", "0"], "--unroll must be"),
        (["--target", "hls", "--verify", "--hls-include", "/nonexistent/include"], "no such folder"),
        (
            ["--target", "hls", "--verify", "--hls-include", str(EXAMPLES)],
            "no ap_int.h or hls_stream.h in it",
        ),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(args: list[str], reason: str, tmp_path: Path) -> None:
    code, out, err = invoke([JACOBI, *args, "--out", str(tmp_path / "g")])
    assert code == 2, out + err
    assert err.count("\n") == 1 and reason in err and "Traceback" not in err
    _nothing_written(tmp_path, "g")


def test_unwritable_out(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = invoke([JACOBI, "--target", "hls", "--out", str(blocker / "g")])
    assert code == 2 and err.count("\n") == 1 and "--out" in err
    code, _, err = invoke([JACOBI, "--target", "hls", "--out", str(blocker)])
    assert code == 2 and "not a folder" in err


def test_missing_gxx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = invoke([JACOBI, "--target", "hls", "--verify", "--out", str(tmp_path / "g")])
    assert code == 2 and "g++ not found" in err and err.count("\n") == 1
    _nothing_written(tmp_path, "g")


def test_missing_opencl_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyopencl", None)  # import fails as if not installed
    code, _, err = invoke([JACOBI, "--target", "opencl", "--verify", "--out", str(tmp_path / "g")])
    assert code == 2 and "pyopencl" in err and err.count("\n") == 1
    _nothing_written(tmp_path, "g")


def test_vendor_include_folder_replaces_the_standins(tmp_path: Path) -> None:
    """--hls-include compiles against the headers found there (here: copies of the stand-ins)."""
    first = tmp_path / "first"
    assert invoke([JACOBI, "--target", "hls", "--out", str(first)])[0] == 0
    vendor = tmp_path / "vendor"
    shutil.copytree(first / "csim_include", vendor)
    code, out, err = invoke(
        [JACOBI, "--target", "hls", "--verify", "--hls-include", str(vendor), "--out", str(tmp_path / "g")]
    )
    assert code == 0, out + err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "hls_stream.h").write_text("#error not a usable header\n")
    (broken / "ap_int.h").write_text("\n")
    code, out, _ = invoke(
        [JACOBI, "--target", "hls", "--verify", "--hls-include", str(broken), "--out", str(tmp_path / "h")]
    )
    assert code == 1 and "g++ failed" in out


def test_replaces_an_existing_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "g"
    assert invoke([JACOBI, "--target", "hls", "--out", str(out)])[0] == 0
    (out / "stale.txt").write_text("old")  # a folder codegen wrote is replaced as a whole (issue 19 §3)
    assert invoke([JACOBI, "--target", "hls", "--out", str(out)])[0] == 0
    assert not (out / "stale.txt").exists() and (out / "kernel.cpp").is_file()
