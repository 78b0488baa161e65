"""``stencilmap devices``, ``estimate`` and ``roofline`` on every example; user errors are one line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli.devices import devices_cmd
from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.roofline import roofline_cmd
from stencilmap.device.catalog import device_names
from tests.conftest import EXAMPLE_FILES

runner = CliRunner()
ESTIMATE_KEYS = {
    "predicted_seconds", "predicted_cycles", "scenario", "required_bandwidth_gbs", "resources",
    "binding_resource", "gops",
}  # fmt: skip
ROOFLINE_KEYS = {"operational_intensity", "peak_gops", "bandwidth_gbs", "attainable_gops"}
#: one device of each model: FPGA (SODA / StencilFlow by format), PCM on DE5, CGRA, a GPU
DEVICES = [("ku060", None), ("de5", "pcm"), ("stratix10", "stencilflow"), ("cgra-tia", None), ("v100", None)]


def _json(args: list[str], command: object) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(command, [*args, "--json"])  # type: ignore[arg-type]
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("device", "arch"), DEVICES, ids=[d for d, _ in DEVICES])
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_estimate_every_example(path: Path, device: str, arch: str | None) -> None:
    args = [str(path), "--device", device] + (["--arch", arch] if arch else [])
    if device == "cgra-tia":  # the CGRA model estimates the worker mapping, which refuses some programs
        refused = runner.invoke(estimate_cmd, [*args, "--json"])
        if refused.exit_code == 2:
            assert refused.output.startswith("error: the CGRA mapping cannot serve this program")
            return
    r = _json(args, estimate_cmd)
    assert set(r) >= ESTIMATE_KEYS
    assert r["predicted_seconds"] > 0 and r["predicted_cycles"] >= 0 and r["gops"] > 0
    assert r["scenario"] in ("compute", "bandwidth")
    for usage in r["resources"].values():
        assert set(usage) >= {"used", "available"}
    if r["resources"]:
        assert r["binding_resource"] in r["resources"]


@pytest.mark.parametrize("device", ["ku060", "cgra-tia", "emax", "xeon-e5-2690v3"])
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_roofline_every_example(path: Path, device: str) -> None:
    r = _json([str(path), "--device", device], roofline_cmd)
    assert set(r) >= ROOFLINE_KEYS
    assert 0 < r["attainable_gops"] <= r["peak_gops"]
    assert r["attainable_gops"] <= r["operational_intensity"] * r["bandwidth_gbs"] + 1e-9
    assert ("workers" in r) and (r["workers"] is not None) == (device in ("cgra-tia", "emax"))


def test_estimate_every_3d_example_on_emax() -> None:
    for path in EXAMPLE_FILES:
        result = runner.invoke(estimate_cmd, [str(path), "--device", "emax", "--json"])
        if result.exit_code == 0:
            assert json.loads(result.stdout)["arch"] == "emax"
        else:
            assert result.exit_code == 2 and "3-D" in result.output


def test_devices_lists_the_catalog() -> None:
    rows = _json([], devices_cmd)
    assert isinstance(rows, list) and [d["name"] for d in rows] == list(device_names())
    assert all({"bandwidth_gbs", "mem_efficiency", "practical_bandwidth_gbs", "kind"} <= set(d) for d in rows)
    text = runner.invoke(devices_cmd, [])
    assert text.exit_code == 0 and "ku060" in text.output and "device catalog" in text.output


def test_readable_reports(tmp_path: Path) -> None:
    jacobi = str(EXAMPLE_FILES[0].parent / "jacobi2d.soda")
    est = runner.invoke(estimate_cmd, [jacobi, "--device", "ku060"])
    assert est.exit_code == 0, est.output
    for text in ("prediction", "predicted time", "resources", "binding", "bram18"):
        assert text in est.output
    plot = tmp_path / "r.png"
    roof = runner.invoke(roofline_cmd, [jacobi, "--device", "ku060", "--plot", str(plot)])
    assert roof.exit_code == 0, roof.output
    assert "attainable" in roof.output and "plot written" in roof.output and plot.is_file()


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        (estimate_cmd, ["--device", "nope"], "unknown device 'nope' (known: 395-ab"),
        (roofline_cmd, ["--device", "nope"], "unknown device 'nope'"),
        (estimate_cmd, ["--device", "ku060", "--unroll", "0"], "--unroll must be between 1 and 1,024"),
        (
            estimate_cmd,
            ["--device", "ku060", "--iterations", "0"],
            "--iterations must be in 1..9,007,199,254,740,992",
        ),
        (
            estimate_cmd,
            ["--device", "ku060", "--iterations", str(10**23)],
            "--iterations must be in 1..9,007,",
        ),
        (estimate_cmd, ["--device", "ku060", "--clock-mhz", "-5"], "--clock-mhz must be a positive number"),
        (estimate_cmd, ["--device", "ku060", "--vector", "4"], "--vector does not apply to the soda model"),
        (estimate_cmd, ["--device", "ku060", "--arch", "cgra"], "models soda, stencilflow, pcm, not 'cgra'"),
        (
            estimate_cmd,
            ["--device", "v100", "--unroll", "2"],
            "--unroll does not apply to the roofline model",
        ),
        (estimate_cmd, ["--device", "ku060", "--shape", "8,8,8"], "--shape has 3 dimensions"),
        (roofline_cmd, ["--device", "ku060", "--iterate", "0"], "--iterate must be in 1..1,024, got 0"),
        (
            roofline_cmd,
            ["--device", "ku060", "--iterate", "100000"],
            "--iterate must be in 1..1,024, got 100000",
        ),
        (roofline_cmd, ["--device", "ku060", "--plot", "x.gif"], ".png or .svg"),
    ],
)
def test_bad_input_is_one_line_exit_2(command: object, args: list[str], message: str) -> None:
    jacobi = str(EXAMPLE_FILES[0].parent / "jacobi2d.soda")
    result = runner.invoke(command, [jacobi, *args])  # type: ignore[arg-type]
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_missing_program_is_one_line() -> None:
    result = runner.invoke(estimate_cmd, ["missing.soda", "--device", "ku060"])
    assert (
        result.exit_code == 2 and result.output.strip().count("\n") == 0 and "no such file" in result.output
    )


def test_estimate_takes_the_tile_and_refuses_it_where_it_does_not_apply() -> None:
    jacobi = str(EXAMPLE_FILES[0].parent / "jacobi2d.soda")
    base = [jacobi, "--device", "ku060", "--shape", "512,512"]
    untiled, tiled = _json(base, estimate_cmd), _json([*base, "--tile", "128"], estimate_cmd)
    assert tiled["parameters"]["tile"] == [128] and tiled["parameters"]["tiles_total"] > 1
    assert tiled["predicted_cycles"] > untiled["predicted_cycles"]  # halos re-read, tile transitions
    result = runner.invoke(estimate_cmd, [*base, "--arch", "pcm", "--tile", "128"])
    assert (
        result.exit_code == 2 and result.output == "error: tile sizes apply to the soda model, not to 'pcm'\n"
    )


@pytest.mark.parametrize("command", [estimate_cmd, roofline_cmd])
def test_csv_is_one_quantity_a_row(command: object) -> None:
    jacobi = str(EXAMPLE_FILES[0].parent / "jacobi2d.soda")
    result = runner.invoke(command, [jacobi, "--device", "ku060", "--format", "csv"])  # type: ignore[arg-type]
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["quantity", "value"] and all(len(r) == 2 for r in rows)
    assert rows[1] == ["program", "jacobi2d"]
