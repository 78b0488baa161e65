"""``--arch cgra`` from the command line: analyze (--asm, --dot, --json), simulate, estimate; every example
and corpus program either maps and simulates valid or is refused with one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli import analyze_cmd
from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.program import load_program
from tests.conftest import (
    CORPUS_SODA,
    CORPUS_STENCILFLOW,
    EXAMPLE_FILES,
    EXAMPLES,
    UNPUBLISHED_DATA,
    corpus_or_skip,
)

runner = CliRunner()
S1D = str(EXAMPLES / "stencil1d_r8.json")


def test_analyze_writes_assembly_dot_and_json(tmp_path: Path) -> None:
    asm, dot = tmp_path / "s.asm", tmp_path / "s.dot"
    result = runner.invoke(
        analyze_cmd, [S1D, "--arch", "cgra", "--asm", str(asm), "--dot", str(dot), "--json"]
    )
    assert result.exit_code == 0, result.output
    c = json.loads(result.stdout)["cgra"]
    assert c["workers"] == 6 and c["pes"]["MUL"] == 6 and c["pes"]["MAC"] == 96 and c["strips"] == 1
    assert c["grid"][1] == 32 and set(c["pes"]) >= {"FILTER", "LOAD", "AGEN", "STORE", "COUNT", "DONE"}
    lines = [line for line in asm.read_text().splitlines() if not line.startswith(("#", "."))]
    assert len(lines) == sum(c["pes"].values())
    assert dot.read_text().startswith("digraph") and "fillcolor=red" in dot.read_text()


def test_analyze_workers_and_strip(tmp_path: Path) -> None:
    args = [
        str(EXAMPLES / "stencil2d_r12.json"),
        "--arch",
        "cgra",
        "--workers",
        "2",
        "--strip",
        "300",
        "--json",
    ]
    c = json.loads(runner.invoke(analyze_cmd, args).stdout)["cgra"]
    assert c["workers"] == 2 and c["strips"] == 4 and c["roofline_workers"] == 5


def test_refused_program_writes_nothing(tmp_path: Path) -> None:
    asm, program = tmp_path / "x.asm", tmp_path / "i.soda"
    program.write_text(
        "kernel: i\nburst width: 64\nunroll factor: 1\ninput dram 0 int16: a(16, *)\n"
        "output dram 1 int16:\n  b(0, 0) = a(0, 0) + a(40, 0)\niterate: 1\nborder: ignore\ncluster: none\n"
    )
    args = [str(program), "--arch", "cgra", "--shape", "16,16", "--asm", str(asm)]
    result = runner.invoke(analyze_cmd, args)
    assert result.exit_code == 2 and not asm.exists()
    assert result.output.startswith("error: the CGRA mapping cannot serve") and result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([S1D, "--arch", "soda", "--workers", "2"], "need --arch cgra"),
        ([S1D, "--arch", "soda", "--asm", "x.asm"], "--arch emax or cgra"),
        ([S1D, "--arch", "cgra", "--workers", "0"], "--workers must be"),
        ([S1D, "--arch", "cgra", "--workers", "40"], "cannot serve"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], message: str) -> None:
    result = runner.invoke(analyze_cmd, args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_simulate_and_estimate_agree(tmp_path: Path) -> None:
    args = [S1D, "--arch", "cgra", "--shape", "40000", "--json"]
    sim = json.loads(runner.invoke(simulate_cmd, [*args, "--out", str(tmp_path)]).stdout)
    assert sim["valid"] and set(sim["cgra"]) >= {"gflops", "percent_of_roofline", "strips"}
    est = json.loads(runner.invoke(estimate_cmd, [*args, "--device", "cgra-tia"]).stdout)
    assert est["parameters"] == {"layers": 1, "strips": 1, "workers": 6}
    assert abs(est["predicted_cycles"] - sim["cycles"]) <= 0.02 * sim["cycles"]


def _shape(path: Path) -> list[str]:
    """A SODA program's run-time dimension set to 48 (StencilFlow programs keep their own shape)."""
    shape = load_program(path).shape
    if all(n is not None for n in shape):
        return []
    return ["--shape", ",".join(str(n or 48) for n in shape)]


@pytest.mark.parametrize(
    "path",
    EXAMPLE_FILES + corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW),
    ids=lambda p: p.name if p else "-",
)
def test_every_program_maps_and_simulates_valid_or_is_refused(path: Path, tmp_path: Path) -> None:
    args = [str(path), "--arch", "cgra", *_shape(path), "--json", "--out", str(tmp_path)]
    result = runner.invoke(simulate_cmd, args)
    if result.exit_code == 2:
        err = result.output.strip()
        assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
        assert "cannot serve" in err or path.name in UNPUBLISHED_DATA, err
        return
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["valid"]


def test_unroll_names_the_workers_and_vector_is_refused() -> None:
    args = [str(EXAMPLES / "laplace2d.soda"), "--arch", "cgra", "--json"]
    c = json.loads(runner.invoke(analyze_cmd, [*args, "--unroll", "3"]).stdout)["cgra"]
    assert c["workers"] == 3
    result = runner.invoke(analyze_cmd, [*args, "--vector", "2"])
    assert result.exit_code == 2 and "--vector does not apply" in result.output


def test_text_report_names_the_mapping_and_the_assembly(tmp_path: Path) -> None:
    asm = tmp_path / "h.asm"
    result = runner.invoke(analyze_cmd, [str(EXAMPLES / "heat3d.json"), "--arch", "cgra", "--asm", str(asm)])
    assert result.exit_code == 0 and "CGRA mapping: " in result.output
    assert f"CGRA assembly written to {asm}" in result.output.replace("\n", "")
    assert "outside the grid: the centre's value" in asm.read_text()  # heat3d's copy boundaries
