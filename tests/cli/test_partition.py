"""``--devices`` / ``--partition`` on analyze, simulate and estimate: the JSON ``partition`` object, the
text table, and exit status 2 with a one-line error on a bad partition file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from stencilmap.cli.analyze import analyze_cmd
from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.simulate import simulate_cmd
from tests.conftest import EXAMPLES

runner = CliRunner()
DAG = str(EXAMPLES / "dag_listing1.json")
HEAT = [str(EXAMPLES / "heat3d.json"), "--shape", "4,8,8", "--iterate", "4"]


def _json(command: click.Command, args: list[str]) -> dict[str, Any]:
    result = runner.invoke(command, [*args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def _check_partition(p: dict[str, Any], devices: int) -> None:
    assert p["devices"] == devices == len(p["parts"])
    assert [part["device"] for part in p["parts"]] == list(range(devices))
    for part in p["parts"]:
        assert part["stencils"] and part["fits"] is True
        assert set(part["resources"]) >= {"alm", "dsp"}
    assert len(p["network_channels"]) == p["streams_cut"]
    for c in p["network_channels"]:
        assert set(c) == {
            "name",
            "producer",
            "src",
            "dst",
            "rate",
            "latency_cycles",
            "required_gbs",
            "link_gbs",
        }
        assert c["src"] < c["dst"] and 0 < c["rate"] <= 1 and c["latency_cycles"] >= 1


@pytest.mark.parametrize("devices", [1, 2, 4])
def test_estimate_json_has_the_partition(devices: int) -> None:
    out = _json(estimate_cmd, [*HEAT, "--device", "stratix10", "--devices", str(devices)])
    _check_partition(out["partition"], devices)
    assert out["partition"]["streams_cut"] == devices - 1  # a chain: one cut between neighbours


def test_more_devices_take_longer_by_the_links() -> None:
    one = _json(estimate_cmd, [*HEAT, "--device", "stratix10", "--devices", "1"])
    two = _json(estimate_cmd, [*HEAT, "--device", "stratix10", "--devices", "2"])
    link = two["partition"]["network_channels"][0]["latency_cycles"]
    assert two["latency_cycles"] == one["latency_cycles"] + link + 1


def test_simulate_and_analyze_json(tmp_path: Path) -> None:
    sim = _json(simulate_cmd, [*HEAT, "--device", "stratix10", "--devices", "2", "--out", str(tmp_path)])
    assert sim["valid"] is True
    _check_partition(sim["partition"], 2)
    assert sim["design"]["modules"]["network"] == 1
    ana = _json(analyze_cmd, [DAG, "--device", "stratix10", "--devices", "2"])
    _check_partition(ana["partition"], 2)


def test_user_partition_and_text_table(tmp_path: Path) -> None:
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"parts": [["b0", "b1"], ["b2", "b3", "b4"]]}))
    out = _json(estimate_cmd, [DAG, "--device", "stratix10", "--partition", str(f)])
    assert out["partition"]["chosen"] == "user"
    assert [p["stencils"] for p in out["partition"]["parts"]] == [["b0", "b1"], ["b2", "b3", "b4"]]
    text = runner.invoke(
        simulate_cmd, [DAG, "--device", "stratix10", "--partition", str(f), "--out", str(tmp_path)]
    )
    assert text.exit_code == 0, text.output
    assert "partition over 2 × stratix10 (user's parts" in text.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"parts": [["b0", "b1"], ["b2", "b3", "b9"]]}', "parts[1][2]: unknown stencil 'b9'"),
        ('{"parts": [["b0", "b1"], ["b1", "b2", "b3", "b4"]]}', "parts[1][0]: stencil 'b1' is already in"),
        ('{"parts": [["b0", "b1"], ["b2", "b3"]]}', "no part holds stencil 'b4'"),
        ('{"parts": [["b0"]', "line 1, column"),
        ('{"parts": {"b0": 0}}', "parts: expected a non-empty list"),
    ],
)
def test_bad_partition_files_exit_2(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "p.json"
    f.write_text(content)
    for command, extra in ((estimate_cmd, []), (simulate_cmd, ["--out", str(tmp_path)]), (analyze_cmd, [])):
        result = runner.invoke(command, [DAG, "--device", "stratix10", "--partition", str(f), *extra])
        assert result.exit_code == 2, result.output
        assert message in result.output and str(f) in result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([DAG, "--devices", "2"], "need --device"),
        ([DAG, "--device", "stratix10", "--devices", "9"], "cannot split 5 stencils over 9 devices"),
        ([DAG, "--device", "stratix10", "--arch", "soda", "--devices", "2"], "split stencilflow designs"),
        ([DAG, "--device", "ku060", "--arch", "stencilflow", "--devices", "2"], "no 'network'"),
    ],
)
def test_bad_requests_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(simulate_cmd, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_links_slower_than_the_stream_are_noted() -> None:
    out = _json(estimate_cmd, [*HEAT, "--vector", "16", "--device", "stratix10", "--devices", "2"])
    rate = out["partition"]["network_channels"][0]["rate"]
    assert rate < 1
    assert any(n.startswith("network-bound: ") for n in out["notes"])
    fast = _json(estimate_cmd, [*HEAT, "--vector", "4", "--device", "stratix10", "--devices", "2"])
    assert not any(n.startswith("network-bound") for n in fast["notes"])
