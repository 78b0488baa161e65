"""Issue 13 §4: no traceback, no hang, no escape on any input — each case a one-line error (exit status 2)
or a correct result, nothing written outside the folders given, nothing half-written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from stencilmap.cli import main
from tests.conftest import CORPUS, EXAMPLES

runner = CliRunner()
JACOBI = str(EXAMPLES / "jacobi2d.soda")
HEAT = str(EXAMPLES / "heat3d.json")


def invoke(args: list[str]) -> Result:
    return runner.invoke(main, args)


def one_line_error(args: list[str]) -> str:
    """Run the CLI; it must fail with exit status 2 and exactly one ``error:`` line, no traceback."""
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def sf_program(path: Path, **changes: Any) -> Path:
    """A small 2-D StencilFlow program, with ``changes`` to its top-level keys."""
    prog: dict[str, Any] = {
        "inputs": {"a": {"data_type": "float32"}},
        "outputs": ["b"],
        "dimensions": [8, 8],
        "program": {
            "b": {
                "computation_string": "b = a[j, k] + 1",
                "data_type": "float32",
                "boundary_conditions": "shrink",
            }
        },
    }
    prog.update(changes)
    path.write_text(json.dumps(prog))
    return path


def sf_expr(path: Path, expr: str, dtype: str = "float32") -> Path:
    return sf_program(
        path,
        inputs={"a": {"data_type": dtype}},
        program={
            "b": {"computation_string": f"b = {expr}", "data_type": dtype, "boundary_conditions": "shrink"}
        },
    )


def soda_program(path: Path, expr: str, extra: str = "", head: str = "") -> Path:
    path.write_text(f"kernel: k\ninput float: a(16, *)\n{head}output float:\n  b(0, 0) = {expr}\n{extra}")
    return path


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# ------------------------------------------------------------------------------------------- security


def test_output_named_like_a_path_is_refused_and_nothing_escapes(tmp_path: Path) -> None:
    name = "/../../escaped"
    prog = sf_program(
        tmp_path / "p.json",
        outputs=[name],
        program={name: {"computation_string": "b = a[j, k]", "data_type": "float32"}},
    )
    line = one_line_error(["run", str(prog), "--out", str(tmp_path / "out")])
    assert "is not an identifier" in line
    assert files_under(tmp_path) == ["p.json"]


def test_data_file_outside_the_program_folder_needs_data_dir(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    np.arange(4, dtype=np.float32).tofile(outside / "s.dat")
    progs = tmp_path / "progs"
    progs.mkdir()
    (progs / "link.dat").symlink_to(outside / "s.dat")
    for data in (str(outside / "s.dat"), "../secret/s.dat", "link.dat"):
        prog = sf_program(
            progs / "p.json", inputs={"a": {"data": data, "data_type": "float32"}}, dimensions=[2, 2]
        )
        line = one_line_error(["run", str(prog), "--out", str(tmp_path / "out")])
        assert "is outside" in line and "--data-dir" in line
    result = invoke(["run", str(prog), "--out", str(tmp_path / "out"), "--data-dir", str(outside)])
    assert result.exit_code == 0, result.output
    assert np.load(tmp_path / "out" / "b.npy")[0, 0] == 1.0


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "large", "binary"])
def test_program_must_be_a_small_regular_text_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "p.soda"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "large":
        path.write_text("# " + "x" * (5 * 2**20))
    else:
        path.write_bytes(b"\xff\xfe kernel")
    line = one_line_error(["analyze", str(path)])
    assert {"fifo": "not a regular file", "device": "not a regular file", "folder": "not a regular file",
            "large": "larger than the limit", "binary": "not UTF-8"}[kind] in line  # fmt: skip


def test_rich_markup_in_paths_is_printed_as_text(tmp_path: Path) -> None:
    out = tmp_path / "[red]x" / "[/]"
    result = invoke(["run", JACOBI, "--shape", "8,8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "[red]x" in result.stdout and "[/]" in result.stdout
    assert (out / "w.npy").is_file()


# ------------------------------------------------------------------------------- real programs


def test_soda_bitwise_and_logical_operators(tmp_path: Path) -> None:
    prog = soda_program(
        tmp_path / "ops.soda",
        "float((i(0, 0) & 12) | (i(0, 0) ^ 5)) + select(a(0, 0) > 0.25f && a(0, 0) < 0.75f || a(0, 0) > 0.9f, "
        "10.0f, 0.0f)",
        head="local int32:\n  i(0, 0) = int32(a(0, 0) * 64.0f)\n",
    )
    result = invoke(["run", str(prog), "--shape", "8,16", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    a = np.random.default_rng([0, zlib.crc32(b"a")]).random((8, 16)).astype(np.float32)
    i = (a * np.float32(64)).astype(np.int32)
    flag = ((a > 0.25) & (a < 0.75)) | (a > 0.9)
    expect = ((i & 12) | (i ^ 5)).astype(np.float32) + np.where(flag, 10, 0).astype(np.float32)
    assert np.array_equal(np.load(tmp_path / "b.npy"), expect)


def test_soda_dram_bank_groups_still_parse(tmp_path: Path) -> None:
    prog = tmp_path / "d.soda"
    prog.write_text("kernel: k\ninput dram 0|1 float: a(16, *)\noutput dram 2 float:\n  b(0, 0) = a(0, 0)\n")
    assert invoke(["analyze", str(prog), "--json"]).exit_code == 0


def test_a_21x21_window_analyzes_and_runs(tmp_path: Path) -> None:
    terms = " + ".join(f"a({x}, {y})" for y in range(-10, 11) for x in range(-10, 11))
    prog = soda_program(tmp_path / "w.soda", terms)
    assert invoke(["analyze", str(prog), "--json"]).exit_code == 0
    result = invoke(["run", str(prog), "--shape", "24,32", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    a = np.random.default_rng([0, zlib.crc32(b"a")]).random((24, 32)).astype(np.float32)
    window = np.lib.stride_tricks.sliding_window_view(a, (21, 21)).sum(axis=(2, 3))
    assert np.allclose(np.load(tmp_path / "o" / "b.npy")[10:-10, 10:-10], window, rtol=1e-5)


def test_a_1000_term_stencilflow_sum_runs_exactly(tmp_path: Path) -> None:
    prog = sf_expr(tmp_path / "s.json", " + ".join(["a[j, k]"] * 1000), dtype="int64")
    result = invoke(["run", str(prog), "--out", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["shape"] == [8, 8]
    b = np.load(tmp_path / "o" / "b.npy")
    a = np.random.default_rng([0, zlib.crc32(b"a")]).integers(0, 64, size=(8, 8))
    assert np.array_equal(b, 1000 * a)


def test_nesting_beyond_the_limit_is_one_line(tmp_path: Path) -> None:
    assert "nested more than 10,000 levels" in one_line_error(
        ["analyze", str(soda_program(tmp_path / "d.soda", "-" * 10_050 + "a(0, 0)"))]
    )
    assert "nested more than 10,000 levels" in one_line_error(
        ["analyze", str(sf_expr(tmp_path / "d.json", "-" * 20_000 + "a[j, k]"))]
    )
    assert "nested more than 10,000 levels" in one_line_error(
        ["analyze", str(sf_expr(tmp_path / "e.json", " + ".join(["a[j, k]"] * 10_050)))]
    )


# ------------------------------------------------------------------------------------ tracebacks


def _forged_npy(path: Path) -> None:
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }"
    header += b" " * (118 - len(header)) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 64)


CASES: list[tuple[str, Any, str]] = [
    ("json-nesting", lambda t: (t / "n.json").write_text("[" * 100_000 + "]" * 100_000), "nested more than 32"),
    ("json-big-int", lambda t: (t / "n.json").write_text('{"dimensions": [' + "9" * 5000 + "]}"), "4,300 digits"),
    ("json-nan", lambda t: sf_program(t / "n.json", inputs={"a": {"data": [float("nan")], "data_type": "float32"}}),
     "NaN is not a number"),
    ("surrogate", lambda t: (t / "n.json").write_text('{"inputs": {"a\\ud800": {"data_type": "float32"}}}'),
     "lone surrogate"),
    ("soda-big-int", lambda t: soda_program(t / "n.soda", "a(0, 0) + " + "9" * 5000), "n.soda:4:23: integer literal"),
    ("random-inf", lambda t: sf_program(t / "n.json", inputs={"a": {"data": "random:0-1e400", "data_type": "float32"}}),
     "does not fit float32"),
    ("random-int-range", lambda t: sf_program(t / "n.json", inputs={"a": {"data": "random:0-1e30", "data_type": "int32"}}),
     "does not fit int32"),
    ("param-index", lambda t: soda_program(t / "n.soda", "a(0, 0) + p[100]", head="param float: p[4]\n"),
     "index 100 of param 'p[4]' is out of bounds"),
    ("int-negative-power", lambda t: sf_expr(t / "n.json", "a[j, k] + 1 ** -1", "int32"), "negative power"),
    ("minus-bool", lambda t: sf_expr(t / "n.json", "a[j, k] + -True"), "unary '-' on a boolean"),
    ("lhs-rank", lambda t: (t / "n.soda").write_text("kernel: k\ninput float: a(16, *)\noutput float:\n  b(0, 0, 1) = a(0, 0)\n"),
     "n.soda:4:3: 'b' is defined with 3 offset(s)"),
    ("lhs-rank-2", lambda t: (t / "n.soda").write_text("kernel: k\ninput float: a(16, *)\noutput float:\n  b(0, 0, 0) = 1.0f\n"),
     "the program has 2 dimensions"),
    ("duplicate-outputs", lambda t: sf_program(t / "n.json", outputs=["b", "b"]), "output 'b' is listed twice"),
    ("dim-2^63", lambda t: sf_program(t / "n.json", dimensions=[2**63, 8]), "is too large"),
    ("offset-1e20", lambda t: soda_program(t / "n.soda", "a(100000000000000000000, 0)"), "does not fit in 64 bits"),
    ("offset-1e15", lambda t: soda_program(t / "n.soda", "a(1000000000000000, 0)"), "beyond ±1,048,576"),
    ("iterate-in-program", lambda t: soda_program(t / "n.soda", "a(0, 0)", "iterate: 1000000\n"), "iterate must be"),
    ("soda-octal", lambda t: soda_program(t / "n.soda", "a(0, 0) + 09"), "invalid integer literal '09'"),
    ("soda-int-65-bits", lambda t: soda_program(t / "n.soda", "a(0, 0) + 36893488147419103232"), "does not fit in 64 bits"),
    ("soda-bank", lambda t: (t / "n.soda").write_text(
        "kernel: k\ninput dram 99999 float: a(16, *)\noutput float:\n  b(0, 0) = a(0, 0)\n"), "n.soda:2:12: DRAM bank"),
    ("json-int-literal", lambda t: sf_expr(t / "n.json", "a[j, k] + 9223372036854775808", "int32"),
     "integer literal does not fit in int64"),
    ("json-int-constant", lambda t: sf_program(t / "n.json", constants={"c": 10**30}), "constants.c: integer does not fit"),
    ("syntax-warning", lambda t: sf_expr(t / "n.json", "a[j, k] + 1if(1"), "syntax error in computation string"),
    ("vectorization-2^63", lambda t: sf_program(t / "n.json", vectorization=2**63), "vectorization must be between"),
    ("unroll-factor-1e9", lambda t: soda_program(t / "n.soda", "a(0, 0)", "unroll factor: 1000000000\n"),
     "unroll factor and vectorization must be between"),
    ("long-kernel-name", lambda t: soda_program(t / "n.soda", "a(0, 0)").write_text(
        (t / "n.soda").read_text().replace("kernel: k", "kernel: " + "k" * 100_000)), "not a usable folder name"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "make", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_program_is_one_line(tmp_path: Path, label: str, make: Any, message: str) -> None:
    make(tmp_path)
    prog = next(p for p in tmp_path.iterdir() if p.name.startswith("n."))
    commands = [["run", str(prog), "--out", str(tmp_path / "out")], ["analyze", str(prog)]]
    for command in commands[:1] if label.startswith("random") else commands:  # analyze reads no data
        assert message in one_line_error(command)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", JACOBI, "--seed", "-1"], "'--seed'"),
        (["estimate", JACOBI, "--device", "ku060", "--clock-mhz", "nan"], "--clock-mhz must be a positive"),
        (["estimate", JACOBI, "--device", "ku060", "--clock-mhz", "inf"], "--clock-mhz must be a positive"),
        (["run", JACOBI, "--shape", "100000,100000"], "needs about 410,000,000,000 bytes"),
        (["analyze", JACOBI, "--shape", f"{2**63},8"], "is too large"),
        (["simulate", JACOBI, "--trace", "t.vcd", "--trace-cycles", str(10**12)], "--trace-cycles 1,000,000,000,000 needs"),
        (["analyze", HEAT, "--vector", str(10**9)], "--vector must be between 1 and 1,024"),
        (["analyze", JACOBI, "--unroll", str(10**9)], "--unroll must be between 1 and 1,024"),
        (["estimate", JACOBI, "--device", "ku060", "--unroll", str(10**9)], "--unroll must be between"),
        (["analyze", JACOBI, "--iterate", "1000000"], "--iterate must be between"),
        (["simulate", JACOBI, "--iterate", "1000"], "the simulator takes at most 20,000"),
        (["explore", JACOBI, "--device", "ku060", "--max-iterate", str(10**9)], "--max-iterate"),
        (["run"], "Missing argument 'PROGRAM'"),
        (["run", JACOBI, "--nope"], "No such option '--nope'"),
        (["nope"], "No such command 'nope'"),
    ],
)  # fmt: skip
def test_bad_option_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    assert message in one_line_error(args)
    assert time.monotonic() - start < 20
    assert files_under(tmp_path) == []


@pytest.mark.parametrize("kind", ["empty", "forged", "text"])
def test_bad_npy_input_is_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "v.npy"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "forged":
        _forged_npy(path)
    else:
        path.write_text("hello")
    line = one_line_error(["run", JACOBI, "--input", f"v={path}", "--out", str(tmp_path / "out")])
    assert "--input v=" in line and (
        "larger than the limit" in line if kind == "forged" else "not a .npy" in line
    )


def test_bad_output_paths_are_refused_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    out = str(tmp_path / "out")
    assert "is not a folder" in one_line_error(["run", JACOBI, "--out", str(tmp_path / "file")])
    assert "is not a folder" in one_line_error(["run", JACOBI, "--out", str(tmp_path / "file" / "sub")])
    assert "longer than" in one_line_error(["run", JACOBI, "--out", str(tmp_path / ("x" * 300))])
    assert "is a folder" in one_line_error(["analyze", JACOBI, "--dot", str(tmp_path)])
    assert "is not a folder" in one_line_error(["analyze", JACOBI, "--dot", str(tmp_path / "file" / "d.dot")])
    assert "is not a folder" in one_line_error(
        ["roofline", JACOBI, "--device", "ku060", "--plot", str(tmp_path / "file" / "r.png")]
    )
    line = one_line_error(["simulate", JACOBI, "--out", out, "--trace", str(tmp_path / "file" / "t.vcd")])
    assert "--trace" in line and "is not a folder" in line
    assert not (tmp_path / "out").exists()  # simulate wrote nothing: the trace was checked first


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_folder(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert "not writable" in one_line_error(["run", JACOBI, "--out", str(ro / "out")])
    finally:
        ro.chmod(0o700)


# -------------------------------------------------------------------------------------- atomicity


def test_simulate_publishes_outputs_and_trace_together(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        ["simulate", JACOBI, "--shape", "8,8", "--out", str(out), "--trace", str(tmp_path / "t.jsonl")]
    )
    assert result.exit_code == 0, result.output
    assert files_under(out) == ["w.npy"]  # no temporary folder left
    assert (tmp_path / "t.jsonl").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "t.jsonl"]


def many_outputs(path: Path, n: int = 24) -> Path:
    outs = "".join(f"output float:\n  o{i}(0, 0) = a(0, 0) * {i}.0f\n" for i in range(n))
    path.write_text(f"kernel: many\ninput float: a(1024, *)\n{outs}")
    return path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupt_while_writing_leaves_nothing(tmp_path: Path, sig: int) -> None:
    """The signal arrives once the outputs are being staged (a temporary folder inside --out exists)."""
    prog = many_outputs(tmp_path / "many.soda")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "stencilmap", "run", str(prog), "--shape", "2048,1024", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not list(out.glob(".stencilmap-*")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    left = files_under(out) if out.exists() else []
    everything = sorted(f"o{i}.npy" for i in range(24))
    if proc.returncode == 0:
        assert left == everything
    else:
        assert proc.returncode == 128 + sig
        assert err.strip().splitlines() == [f"error: interrupted ({signal.Signals(sig).name})"]
        assert left in ([], everything), left  # an interrupt during the renames waits for them


def _catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (its ``SigCgt`` mask in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (sig - 1) & 1)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupt_at_start_is_one_line(tmp_path: Path, sig: int) -> None:
    """The signal arrives as soon as the executable answers signals (``entry`` has installed its handlers,
    the package is still loading), however long that took: no fixed delay."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "stencilmap", "run", JACOBI, "--out", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    while proc.poll() is None and not _catches(proc.pid, signal.SIGTERM):  # SIGINT is installed first
        time.sleep(0.001)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 128 + sig) and "Traceback" not in err
    assert proc.returncode == 0 or err.strip().splitlines() == [
        f"error: interrupted ({signal.Signals(sig).name})"
    ]


def test_failure_while_staging_removes_every_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stencilmap.io as sio

    calls = {"n": 0}
    real = sio._save_npy

    def flaky(f: Any, arr: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(28, "No space left on device")
        real(f, arr)

    monkeypatch.setattr(sio, "_save_npy", flaky)
    prog = many_outputs(tmp_path / "many.soda", 8)
    line = one_line_error(["run", str(prog), "--shape", "8,8", "--out", str(tmp_path / "out")])
    assert "No space left on device" in line
    assert files_under(tmp_path / "out") == []
    assert set() == sio._PENDING


# ------------------------------------------------------------------------------ console width


def test_no_arguments_prints_the_help() -> None:
    result = invoke([])
    assert result.exit_code == 0 and "Commands:" in result.stdout and result.stderr == ""


def test_tables_are_not_cut_when_piped() -> None:
    result = invoke(["devices"])
    assert result.exit_code == 0
    assert "…" not in result.stdout
    assert "xeon" in result.stdout


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus absent")
def test_missing_data_file_says_the_shape_and_dtype(tmp_path: Path) -> None:
    line = one_line_error(
        ["run", str(CORPUS / "stencilflow" / "horidiff_min.json"), "--out", str(tmp_path / "o")]
    )
    assert "(input 'inA': float32, shape [10])" in line and "--input inA=FILE.npy" in line
