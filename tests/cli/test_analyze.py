"""``stencilmap analyze``: every example and corpus program under each builder that applies."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, EXAMPLES

runner = CliRunner()
PROGRAMS = EXAMPLE_FILES + CORPUS_SODA + CORPUS_STENCILFLOW
#: Keep the large corpus grids small for the test run (the run-time SODA dimension and StencilFlow's
#: 16×1024×1024 delay_buffer_e0 program).
SHAPES = {"blur.soda": "64,64", "contrast.soda": "64,64", "delay_buffer_e0.json": "4,32,32"}
REQUIRED = {
    "reuse_buffers", "delay_buffers", "latency_cycles", "runtime_cycles", "operational_intensity", "ops",
    "modules", "total_buffer_elements",
}  # fmt: skip


def analyze(path: Path, *args: str) -> dict:  # type: ignore[type-arg]
    extra = ["--shape", SHAPES[path.name]] if path.name in SHAPES else []
    result = runner.invoke(main, ["analyze", str(path), "--json", *extra, *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_every_program_under_every_builder(path: Path, arch: str) -> None:
    report = analyze(path, "--arch", arch)
    assert set(report) >= REQUIRED
    assert report["arch"] == arch
    assert report["runtime_cycles"] >= report["points"] // max(1, report["unroll"] * report["vector"])
    assert sum(report["modules"].values()) > 0


def test_soda_worked_example_in_json(tmp_path: Path) -> None:
    prog = tmp_path / "j.soda"
    prog.write_text(
        "kernel: j\ninput float: a(9, *)\n"
        "output float: b(0, 0) = a(0, -1) + a(-1, 0) + a(0, 0) + a(1, 0) + a(0, 1)\nunroll factor: 3\n"
    )
    report = analyze(prog, "--shape", "20,9")
    buf = report["reuse_buffers"]["b"]["a"]
    m = 9
    assert buf["size"] == 2 * m + 3
    assert sorted(sorted(c) for c in buf["chains"]) == sorted(
        sorted(c) for c in ([-m, 0, 3, m], [-m + 1, 1, m + 1], [-m + 2, -1, 2, m + 2])
    )
    assert report["modules"]["pe"] == 3


def test_delay_buffers_keyed_by_edges() -> None:
    report = analyze(EXAMPLE_FILES[0].parent / "dag_listing1.json")
    assert set(report["delay_buffers"]) >= {"a0->b0", "b0->b1", "b1->b3", "b3->b4", "b2->b4", "a2->b1"}
    assert min(v for k, v in report["delay_buffers"].items() if k.endswith("->b4")) == 0
    assert report["operational_intensity"] > 0


def test_intensity_of_a_five_coefficient_stencil(tmp_path: Path) -> None:
    prog = tmp_path / "c.soda"
    prog.write_text(
        "kernel: c\ninput float: a(16, *)\noutput float: b(0, 0) = 0.1f * a(0, -1) + 0.2f * a(-1, 0)"
        " + 0.3f * a(0, 0) + 0.2f * a(1, 0) + 0.1f * a(0, 1)\n"
    )
    assert analyze(prog)["operational_intensity"] == pytest.approx(9 / 8)


def test_readable_report_and_dot(tmp_path: Path) -> None:
    dot = tmp_path / "d.dot"
    result = runner.invoke(
        main, ["analyze", str(EXAMPLE_FILES[0].parent / "jacobi2d.soda"), "--dot", str(dot)]
    )
    assert result.exit_code == 0, result.output
    for text in ("reuse buffers", "pipeline latency", "operational intensity", "modules", "DOT written"):
        assert text in result.stdout
    assert dot.read_text().startswith("digraph")


def test_bad_parameters_are_one_line_errors() -> None:
    result = runner.invoke(main, ["analyze", str(EXAMPLE_FILES[0].parent / "jacobi2d.soda"), "--unroll", "0"])
    assert result.exit_code == 2 and "--unroll must be between 1 and 1,024" in result.output
    result = runner.invoke(main, ["analyze", str(EXAMPLE_FILES[0].parent / "fdtd2d.json"), "--iterate", "2"])
    assert result.exit_code == 2 and "iterate/preserve need outputs matching inputs" in result.output


def test_csv_is_one_row_per_field_a_stencil_reads() -> None:
    dag = str(EXAMPLE_FILES[0].parent / "dag_listing1.json")
    result = runner.invoke(main, ["analyze", dag, "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    facts = json.loads(runner.invoke(main, ["analyze", dag, "--json"]).stdout)
    assert rows[0][:3] == ["stencil", "field", "window"]
    assert len(rows) - 1 == sum(len(s["reads"]) for s in facts["stencils"].values())


def test_tile_builds_the_tiled_design_and_is_refused_where_it_does_not_apply() -> None:
    jacobi = str(EXAMPLE_FILES[0].parent / "jacobi2d.soda")
    result = runner.invoke(main, ["analyze", jacobi, "--shape", "128,128", "--tile", "32", "--json"])
    assert result.exit_code == 0, result.output
    params = json.loads(result.stdout)["design_parameters"]
    assert params["tile"] == [32] and params["tiles_total"] > 1
    result = runner.invoke(main, ["analyze", jacobi, "--arch", "pcm", "--tile", "32"])
    assert result.exit_code == 2 and result.output == "error: --tile does not apply to the pcm design\n"


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_buffers_are_the_built_designs_and_the_analysis_facts_are_named_as_such(arch: str) -> None:
    report = analyze(EXAMPLES / "jacobi2d.soda", "--arch", arch)
    total = report["reuse_buffer_elements"] + report["delay_buffer_elements"]
    assert report["total_buffer_elements"] == total > 0
    facts = report["analysis_buffer_elements"]
    assert set(facts) == {"reuse_per_consumer", "internal", "delay", "total"}
    assert "internal_buffer_elements" not in report


@pytest.mark.parametrize(
    ("arch", "device"),
    [("soda", "ku060"), ("stencilflow", "stratix10"), ("pcm", "de5"), ("cgra", "cgra-tia"), ("emax", "emax")],
)
def test_device_applies_to_every_architecture(arch: str, device: str) -> None:
    path = EXAMPLES / ("laplace2d.soda" if arch == "emax" else "jacobi2d.soda")
    result = runner.invoke(main, ["analyze", str(path), "--arch", arch, "--device", device])
    assert result.exit_code == 0, result.output
    assert f"on {arch} for {device}" in result.output.replace("\n", " ")


def test_device_latencies_reach_the_facts() -> None:
    a = analyze(EXAMPLES / "jacobi2d.soda", "--arch", "stencilflow", "--device", "stratix10")
    b = analyze(EXAMPLES / "jacobi2d.soda", "--arch", "stencilflow", "--device", "ku060")
    assert a["latency_cycles"] != b["latency_cycles"]
