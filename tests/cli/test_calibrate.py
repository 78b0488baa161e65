"""``stencilmap calibrate``: the table, ``--json``, the written device used by ``estimate``, and one-line
errors with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from stencilmap.cli.calibrate import calibrate_cmd
from stencilmap.cli.estimate import estimate_cmd
from tests.model.helpers import example

runner = CliRunner()
ARGS = [
    str(example("laplace2d.soda")), "--device", "de5", "--arch", "pcm", "--shape", "32768,4096",
    "--reports", str(example("calibration/de5_laplace_table2.csv")),
]  # fmt: skip


def test_table_and_device_file(tmp_path: Path) -> None:
    out = tmp_path / "de5_fitted.json"
    result = runner.invoke(calibrate_cmd, [*ARGS, "--holdout", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 design(s) fitted, 2 predicted" in result.output and "R² check" in result.output
    est = runner.invoke(
        estimate_cmd,
        [str(example("laplace2d.soda")), "--device", str(out), "--arch", "pcm", "--unroll", "8",
         "--iterate", "21", "--shape", "32768,4096", "--json"],
    )  # fmt: skip
    assert est.exit_code == 0, est.output
    report = json.loads(est.stdout)
    assert report["device"] == "de5" and report["resources"]["alm"]["used"] > 0


def test_json_reports_every_resource() -> None:
    result = runner.invoke(calibrate_cmd, [*ARGS, "--holdout", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["resources"]) == {"alm", "register", "memory_bits", "dsp"}
    assert [r["fitted"] for r in data["rows"]] == [True, True, True, True, False]
    assert data["resources"]["alm"]["check_max_relative_error"] is not None


def test_registered_in_the_group() -> None:
    assert runner.invoke(main, ["calibrate", "--help"]).exit_code == 0


def test_bad_csv_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "r.csv"
    bad.write_text("unroll,iterate,alm\n1,146,211248\n2,80,lots\n")
    out = tmp_path / "d.json"
    args = [*ARGS[:-1], str(bad), "--out", str(out)]
    result = runner.invoke(calibrate_cmd, args)
    assert result.exit_code == 2
    assert f"{bad}:3:6: alm: not a number" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_unidentifiable_rows_exit_2(tmp_path: Path) -> None:
    csv = tmp_path / "r.csv"
    csv.write_text("unroll,iterate,alm\n2,10,1\n2,20,2\n2,30,3\n2,40,4\n")
    result = runner.invoke(calibrate_cmd, [*ARGS[:-1], str(csv)])
    assert result.exit_code == 2 and "vary unroll" in result.output


def test_leave_one_out_table_and_json() -> None:
    result = runner.invoke(calibrate_cmd, [*ARGS, "--leave-one-out"])
    assert result.exit_code == 0, result.output
    assert "leave-one-out: each fitted row predicted by a fit without it" in result.output
    assert "leave-one-out max error: alm 2.11%" in result.output
    data = json.loads(runner.invoke(calibrate_cmd, [*ARGS, "--leave-one-out", "--json"]).stdout)
    assert [r["unroll"] for r in data["leave_one_out"]] == [1, 2, 4, 8, 16]
    first = data["leave_one_out"][0]
    assert first["error"]["alm"] == pytest.approx(
        first["predicted"]["alm"] / first["measured"]["alm"] - 1, abs=1e-5
    )
    assert data["resources"]["alm"]["loo_max_relative_error"] == pytest.approx(0.021134, abs=1e-5)
    plain = json.loads(runner.invoke(calibrate_cmd, [*ARGS, "--json"]).stdout)
    assert "leave_one_out" not in plain and "loo_r2" not in plain["resources"]["alm"]
