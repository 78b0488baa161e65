"""``stencilmap simulate``: every example simulates and validates from the command line; the JSON report's
keys; exit status 0 (valid), 1 (mismatch, deadlock, cycle limit), 2 (bad input, one line on stderr)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

from stencilmap.cli.simulate import ProgressBar, simulate_cmd
from tests.conftest import EXAMPLE_FILES, EXAMPLES

runner = CliRunner()
KEYS = {
    "cycles",
    "valid",
    "max_abs_error",
    "offchip_bytes_read",
    "offchip_bytes_written",
    "deadlock",
    "stalls",
}
DAG = str(EXAMPLES / "dag_listing1.json")


def invoke(args: list[str]) -> tuple[int, str, str]:
    result = runner.invoke(simulate_cmd, args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_every_example_simulates_and_validates(path: Path, tmp_path: Path) -> None:
    shape = ["--shape", "16,32"] if path.suffix == ".soda" and "3d" not in path.name else []
    code, out, _ = invoke([str(path), *shape, "--out", str(tmp_path), "--json"])
    assert code == 0, out
    r = json.loads(out)
    assert set(r) >= KEYS
    assert r["valid"] is True and r["status"] == "done" and r["deadlock"] is None and r["cycles"] > 0
    assert r["max_abs_error"] == 0 and r["bit_exact"] is True and r["first_mismatch"] is None
    assert r["offchip_bytes_read"] and all(
        isinstance(n, int) and n > 0 for n in r["offchip_bytes_read"].values()
    )
    assert set(r["offchip_bytes_written"]) == set(r["outputs"])
    assert all(set(s) == {"kind", "busy", "starved", "blocked"} for s in r["stalls"].values())
    assert set(r["channel_peaks"]) and r["bandwidth"]["unlimited"] is True
    for name, file in r["outputs"].items():
        assert np.load(file).shape == tuple(r["shape"]), name


def test_text_report(tmp_path: Path) -> None:
    code, out, _ = invoke(
        [str(EXAMPLES / "jacobi2d.soda"), "--shape", "16,32", "--unroll", "2", "--out", str(tmp_path)]
    )
    assert code == 0
    for text in ("as soda", "cycles per output point", "predicted", "valid: bit-exact", "stalls: most in",
                 "off-chip: ", "available unlimited", "outputs written to"):  # fmt: skip
        assert text in out, text
    assert len(out.splitlines()) <= 8, out  # issue 13 §3: the report was ~50 lines of near-identical rows


def test_verbose_report_has_every_table_in_full(tmp_path: Path) -> None:
    args = [str(EXAMPLES / "jacobi2d.soda"), "--shape", "16,32", "--unroll", "2", "--out", str(tmp_path)]
    code, out, _ = invoke([*args, "--verbose"])
    _, js, _ = invoke([*args, "--json"])
    assert code == 0
    for text in ("simulation", "predicted (as estimate)", "stalls (", "channel peaks (",
                 "off-chip traffic (memory unlimited: no --device)"):  # fmt: skip
        assert text in out, text
    for module in json.loads(js)["stalls"]:
        assert f"│ {module} " in out


def test_csv_is_one_row_per_module(tmp_path: Path) -> None:
    args = [str(EXAMPLES / "jacobi2d.soda"), "--shape", "16,32", "--out", str(tmp_path)]
    code, out, _ = invoke([*args, "--format", "csv"])
    _, js, _ = invoke([*args, "--json"])
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    stalls = json.loads(js)["stalls"]
    assert rows[0] == ["module", "kind", "busy", "starved", "blocked"] and len(rows) == len(stalls) + 1
    assert all(int(r[3]) == stalls[r[0]]["starved"] for r in rows[1:])


def test_device_limits_bandwidth(tmp_path: Path) -> None:
    args = [str(EXAMPLES / "heat3d.json"), "--vector", "16", "--shape", "8,32,32", "--out", str(tmp_path)]
    _, free, _ = invoke([*args, "--json"])
    code, bound, _ = invoke([*args, "--device", "ku060", "--json"])
    f, b = json.loads(free), json.loads(bound)
    assert code == 0 and b["device"] == "ku060" and b["bandwidth"]["unlimited"] is False
    # the design uses one of ku060's two banks: half its 21.5 GB/s practical bandwidth is available
    assert b["bandwidth"]["banks"] == [0] and b["bandwidth"]["available_gbs"] == pytest.approx(21.504 / 2)
    assert b["bandwidth"]["achieved_gbs"] <= b["bandwidth"]["available_gbs"]
    assert b["cycles"] > 2 * f["cycles"]  # 128 B per beat on one bank of 43 B per cycle
    _, text, _ = invoke([*args, "--device", "ku060", "--verbose"])
    assert "ku060: 43.01 B/cycle per bank at 250 MHz" in text and "GB/s" in text
    _, short, _ = invoke([*args, "--device", "ku060"])
    assert "available 43.01 B/cycle (10.75 GB/s) on 1 bank" in short


def test_deadlock_exits_1_and_names_modules_and_channels(tmp_path: Path) -> None:
    code, out, _ = invoke([DAG, "--delay-buffers", "min", "--out", str(tmp_path), "--json"])
    assert code == 1
    r = json.loads(out)
    assert r["valid"] is False and r["status"] == "deadlock"
    dl = r["deadlock"]
    assert (
        dl["cycle"] == r["cycles"] and dl["waiting"] and dl["cycle_of_waits"][0] == dl["cycle_of_waits"][-1]
    )
    assert {"module", "reason", "channel", "on"} == set(dl["waiting"][0])
    code, text, _ = invoke([DAG, "--delay-buffers", "min", "--out", str(tmp_path)])
    assert code == 1 and "INVALID" in text and f"deadlock at cycle {dl['cycle']}" in text
    assert "b4.b2.delay waits on b4.b2.buf (full output: b4.b2.delay->b4.b2.buf)" in text
    assert "wait-for cycle: " in text
    assert "first" not in text  # no "first mismatch" in outputs a deadlock left incomplete
    assert len(text.splitlines()) < 25 and "more waiting off the cycle" in text


def test_computed_delay_buffers_exit_0(tmp_path: Path) -> None:
    code, out, _ = invoke([DAG, "--out", str(tmp_path), "--json"])
    assert code == 0 and json.loads(out)["valid"] is True


def test_cycle_limit_exits_1(tmp_path: Path) -> None:
    code, out, _ = invoke([DAG, "--max-cycles", "100", "--out", str(tmp_path), "--json"])
    assert code == 1 and json.loads(out)["status"] == "limit"


def test_trace_option(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    code, out, _ = invoke([DAG, "--shape", "4,8,8", "--trace", str(trace), "--trace-cycles", "20",
                           "--out", str(tmp_path), "--json"])  # fmt: skip
    assert code == 0 and json.loads(out)["trace"] == str(trace)
    assert len(trace.read_text().splitlines()) == 21


def test_input_option(tmp_path: Path) -> None:
    np.save(tmp_path / "v.npy", np.ones((8, 16), np.float32))
    code, out, _ = invoke([str(EXAMPLES / "jacobi2d.soda"), "--input", f"v={tmp_path / 'v.npy'}",
                           "--iterate", "1", "--out", str(tmp_path), "--json"])  # fmt: skip
    assert code == 0 and json.loads(out)["shape"] == [8, 16]


@pytest.mark.parametrize(
    "args",
    [
        ["missing.soda"],
        [DAG, "--unroll", "0"],
        [DAG, "--trace", "t.txt"],
        [DAG, "--device", "nonesuch"],
        [DAG, "--input", "no-equals-sign"],
        [DAG, "--shape", "0,1,1"],
        [DAG, "--arch", "cgra", "--workers", "0"],
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], tmp_path: Path) -> None:
    code, out, err = invoke([*args, "--out", str(tmp_path)])
    assert code == 2 and out == ""
    assert "Traceback" not in err and (err.startswith("error: ") or "Error:" in err)


def test_progress_bar_appears_only_on_a_terminal_after_the_delay() -> None:
    quiet = ProgressBar(after=0.0, console=Console(file=io.StringIO()))
    quiet.update(10, 100)
    assert quiet.bar is None  # not a terminal
    late = ProgressBar(after=60.0, console=Console(file=io.StringIO(), force_terminal=True))
    late.update(10, 100)
    assert late.bar is None  # not yet a second
    buffer = io.StringIO()
    with ProgressBar(after=0.0, console=Console(file=buffer, force_terminal=True)) as bar:
        bar.update(10, 100)
        bar.update(150, 100)
        assert bar.bar is not None
        assert bar.bar.tasks[0].completed == 150 and bar.bar.tasks[0].total == 150
    assert "simulating" in buffer.getvalue()


@pytest.mark.parametrize(
    "design",
    [
        ["--tile", "64"],
        ["--tile", "48", "--iterate", "2", "--unroll", "2"],
        ["--arch", "pcm", "--iterate", "3", "--unroll", "4"],
    ],
    ids=["soda-tiled", "soda-tiled-q2", "pcm"],
)
def test_simulate_and_estimate_predict_the_same_cycles(design: list[str], tmp_path: Path) -> None:
    """Issue 13 §3: one prediction everywhere. A tiled design was predicted 263,308 cycles by simulate
    (C = L + N/k, blind to tiling) and 311,788 by estimate (``model.timing``), simulated 311,786."""
    from stencilmap.cli.estimate import estimate_cmd

    args = [str(EXAMPLES / "jacobi2d.soda"), "--device", "ku060", "--shape", "128,256", *design]
    code, out, _ = invoke([*args, "--json", "--out", str(tmp_path)])
    assert code == 0, out
    sim = json.loads(out)
    est = runner.invoke(estimate_cmd, [*args, "--json"])
    assert est.exit_code == 0, est.output
    assert sim["predicted"]["cycles"] == json.loads(est.stdout)["predicted_cycles"]
    assert abs(sim["predicted"]["cycles"] - sim["cycles"]) / sim["cycles"] < 0.01


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arch", "soda", "--vector", "2"], "--vector does not apply to the soda design"),
        (["--arch", "pcm", "--tile", "32"], "--tile does not apply to the pcm design"),
        (["--arch", "pcm", "--delay-buffers", "min"], "--delay-buffers does not apply to the pcm design"),
        (["--arch", "stencilflow", "--unroll", "2"], "--unroll does not apply to the stencilflow design"),
        (["--arch", "emax", "--tile", "8"], "--tile does not apply to the emax design"),
    ],
)
def test_options_that_do_not_apply_are_refused(args: list[str], message: str, tmp_path: Path) -> None:
    """Issue 13 §3: ``simulate --arch soda --vector 2`` simulated, ignoring --vector."""
    code, out, err = invoke([str(EXAMPLES / "jacobi2d.soda"), *args, "--out", str(tmp_path / "o")])
    assert code == 2 and out == "" and err == f"error: {message}\n"
    assert not (tmp_path / "o").exists()


def test_interleaved_device_says_so(tmp_path: Path) -> None:
    """de5 interleaves a program that pins no bank: the traffic header shows all banks together."""
    source = (EXAMPLES / "jacobi2d.soda").read_text()
    unpinned = tmp_path / "j.soda"
    unpinned.write_text(re.sub(r"dram \d+ ", "", source))
    args = [str(unpinned), "--device", "de5", "--out", str(tmp_path / "out")]
    _, text, _ = invoke([*args, "--verbose"])
    assert "de5: 75.85 B/cycle over all 2 banks, interleaved at 270 MHz" in text
    assert "available (2 banks interleaved)" in text
    _, short, _ = invoke(args)
    assert "on 2 banks interleaved" in short


def test_a_64_bit_mismatch_names_the_simulators_float64_limit(tmp_path: Path) -> None:
    """An int64 sum past 2⁵³ (the largest int64 added) is not exact in the simulator (values travel as
    float64): the verdict says so instead of looking like a design's bug (docs/guide/simulation.md, Limits)."""
    text = (EXAMPLES / "jacobi2d.soda").read_text(encoding="utf-8")
    text = text.replace("float", "int64").replace("* 0.2f", "+ 9223372036854775807")
    (tmp_path / "j64.soda").write_text(text, encoding="utf-8")
    code, out, _ = invoke([str(tmp_path / "j64.soda"), "--shape", "16,32", "--out", str(tmp_path / "o")])
    assert code == 1 and "INVALID" in out and "64-bit integers are exact up to 2⁵³ in the simulator" in out
