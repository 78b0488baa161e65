"""``stencilmap explore``: the table, ``--json`` keys, ``--plot``, and errors as one line."""

from __future__ import annotations

import csv
import io
import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from stencilmap.cli.explore import explore_cmd
from stencilmap.design.serialize import design_from_json
from tests.conftest import EXAMPLE_FILES, EXAMPLES

runner = CliRunner()
SMALL = [str(EXAMPLES / "jacobi2d.soda"), "--device", "ku060", "--shape", "256,1024", "--iterations", "64"]


def test_json_keys() -> None:
    result = runner.invoke(explore_cmd, [*SMALL, "--json", "--top", "3", "--max-iterate", "64"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert r["points_evaluated"] == r["space_size"] > 0
    assert r["points_checked"] + r["points_pruned"] == r["points_evaluated"]
    best = r["best"]
    for key in ("arch", "unroll", "vector", "iterate", "tile", "predicted_seconds", "prediction_error"):
        assert key in best
    assert best["simulation"]["status"] == "done"
    assert abs(best["prediction_error"]) < 0.05
    assert len(r["top"]) == 3 and r["top"][0]["predicted_seconds"] == best["predicted_seconds"]
    assert [t["predicted_seconds"] for t in r["top"]] == sorted(t["predicted_seconds"] for t in r["top"])


def test_table_and_plot(tmp_path: Path) -> None:
    plot = tmp_path / "space.png"
    result = runner.invoke(explore_cmd, [*SMALL, "--no-simulate", "--arch", "pcm", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "best 10 configurations" in result.output and "pruned by the bound" in result.output
    assert "winner simulated" not in result.output and f"plot written to {plot}" in result.output
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_no_simulation_gives_no_error() -> None:
    result = runner.invoke(explore_cmd, [*SMALL, "--no-simulate", "--json", "--arch", "stencilflow"])
    r = json.loads(result.stdout)
    assert r["best"]["arch"] == "stencilflow" and r["best"]["prediction_error"] is None
    assert r["best"]["vector"] == r["best"]["lanes"] and r["best"]["unroll"] is None


def test_errors_are_one_line() -> None:
    result = runner.invoke(explore_cmd, [str(EXAMPLES / "jacobi2d.soda"), "--device", "v100"])
    assert result.exit_code == 2 and "explore needs an FPGA" in result.output
    result = runner.invoke(explore_cmd, [*SMALL, "--plot", "space.pdf", "--no-simulate"])
    assert result.exit_code == 2 and ".png or .svg" in result.output


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_every_example(path: Path) -> None:
    """``explore`` works on every bundled program (their own shapes and time steps)."""
    result = runner.invoke(
        explore_cmd, [str(path), "--device", "ku060", "--no-simulate", "--json", "--top", "3"]
    )
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert r["points_evaluated"] == r["space_size"] > 0 and r["best"]["fits"]


def test_csv_lists_the_ranked_configurations_whole() -> None:
    result = runner.invoke(explore_cmd, [*SMALL, "--no-simulate", "--top", "4", "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0][:5] == ["rank", "arch", "unroll", "vector", "iterate"] and len(rows) == 5
    assert {r[1] for r in rows[1:]} <= {"soda", "stencilflow", "pcm"}
    assert "…" not in result.stdout
    seconds = [float(r[rows[0].index("predicted_seconds")]) for r in rows[1:]]
    assert seconds == sorted(seconds)


def test_save_writes_the_winner_and_the_commands_that_reproduce_it(tmp_path: Path) -> None:
    """Issue 13 §3: explore's winner can be re-estimated and re-simulated, with the same numbers."""
    save = tmp_path / "winner"
    result = runner.invoke(explore_cmd, [*SMALL, "--json", "--save", str(save)])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    best, sim = r["best"], r["best"]["simulation"]
    assert sorted(p.name for p in save.iterdir()) == ["commands.txt", "design.dot", "design.json"]
    design = design_from_json(json.loads((save / "design.json").read_text()))
    assert design.arch == best["arch"] and (save / "design.dot").read_text().startswith("digraph")
    commands = [shlex.split(line)[1:] for line in (save / "commands.txt").read_text().splitlines()
                if line.startswith("stencilmap ")]  # fmt: skip
    assert [c[0] for c in commands] == ["estimate", "simulate"]
    est = runner.invoke(main, [*commands[0], "--json"])
    assert est.exit_code == 0, est.output
    assert json.loads(est.stdout)["predicted_seconds"] == pytest.approx(best["predicted_seconds"], rel=1e-9)
    simulated = runner.invoke(main, [*commands[1], "--json", "--out", str(tmp_path / "sim")])
    assert simulated.exit_code == 0, simulated.output
    s = json.loads(simulated.stdout)
    assert s["cycles"] == sim["simulated_cycles"]
    assert s["predicted"]["cycles"] == round(sim["predicted_cycles"])


def test_save_refuses_an_unwritable_folder_before_exploring(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = runner.invoke(explore_cmd, [*SMALL, "--save", str(tmp_path / "file")])
    assert result.exit_code == 2 and result.output.startswith("error: ") and "--save" in result.output


def test_saved_commands_read_a_program_named_like_an_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program file ``-o.soda`` (given after ``--``) is written ``./-o.soda`` in commands.txt, which a
    shell then runs as it is (was: "No such option '-o'")."""
    (tmp_path / "-o.soda").write_text(
        (EXAMPLES / "jacobi2d.soda").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    args = ["--device", "ku060", "--shape", "64,64", "--iterations", "4", "--no-simulate", "--save", "w"]
    assert runner.invoke(explore_cmd, [*args, "--", "-o.soda"]).exit_code == 0
    line = (tmp_path / "w" / "commands.txt").read_text().splitlines()
    estimate = next(s for s in line if s.startswith("stencilmap estimate"))
    assert " ./-o.soda " in estimate
    assert runner.invoke(main, shlex.split(estimate)[1:]).exit_code == 0
