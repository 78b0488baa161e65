"""The ``simulate`` job: outputs written like ``run``'s, the trace, the prediction, traffic, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stencilmap.errors import StencilmapError
from stencilmap.jobs.run import RunConfig, run
from stencilmap.jobs.simulate import SimulateConfig, lanes_of, simulate
from stencilmap.point import DesignPoint
from tests.conftest import EXAMPLES

JACOBI = EXAMPLES / "jacobi2d.soda"
HEAT = EXAMPLES / "heat3d.json"


def test_outputs_are_written_like_run(tmp_path: Path) -> None:
    dag = EXAMPLES / "dag_listing1.json"  # shrink boundaries: b4 is undefined on the i-faces
    report = simulate(
        SimulateConfig(program=dag, point=DesignPoint(), shape=(4, 8, 8), out_dir=tmp_path / "sim")
    )
    reference = run(RunConfig(dag, {}, 0, (4, 8, 8), tmp_path / "run"))
    assert report.valid and set(report.outputs) == set(reference.outputs) == {"b4"}
    got, want = np.load(report.outputs["b4"]), np.load(reference.outputs["b4"])
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)  # undefined points: NaN too
    assert np.isnan(got).any()


def test_default_output_folder_is_out_program_name_sim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 §3: simulate wrote to run's folder, so a failed simulation overwrote the reference."""
    monkeypatch.chdir(tmp_path)
    reference = run(RunConfig(JACOBI, {}, 0, (8, 16), None))
    before = np.load(reference.outputs["w"])
    report = simulate(
        SimulateConfig(program=JACOBI, point=DesignPoint(), shape=(8, 16), max_cycles=10)
    )  # stops early: wrong outputs
    assert not report.valid
    assert report.outputs == {}  # issue 19 §9: a run cut short publishes nothing
    assert reference.outputs["w"] == Path("out") / "jacobi2d" / "w.npy"
    assert np.array_equal(np.load(reference.outputs["w"]), before, equal_nan=True)
    report = simulate(SimulateConfig(program=JACOBI, point=DesignPoint(), shape=(8, 16)))
    assert report.valid
    assert report.outputs["w"] == Path("out") / "jacobi2d" / "sim" / "w.npy" and report.outputs["w"].is_file()
    assert np.array_equal(np.load(reference.outputs["w"]), before, equal_nan=True)


def test_supplied_inputs_are_used(tmp_path: Path) -> None:
    v = np.full((8, 16), 2.0, np.float32)
    np.save(tmp_path / "v.npy", v)
    report = simulate(
        SimulateConfig(
            program=JACOBI, point=DesignPoint(iterate=1), inputs={"v": tmp_path / "v.npy"}, out_dir=tmp_path
        )
    )
    w = np.load(report.outputs["w"])
    assert report.valid and report.program.shape == (8, 16)
    assert np.allclose(w[1:-1, 1:-1], 2.0)  # the average of five 2.0s


def test_prediction_uses_the_design_lanes(tmp_path: Path) -> None:
    soda = simulate(
        SimulateConfig(
            program=JACOBI, point=DesignPoint(unroll=2, iterate=1), shape=(16, 32), out_dir=tmp_path
        )
    )
    flow = simulate(
        SimulateConfig(program=HEAT, point=DesignPoint(vector=4), shape=(8, 16, 16), out_dir=tmp_path)
    )
    assert lanes_of(soda.design) == soda.facts.lanes == 2
    assert lanes_of(flow.design) == flow.facts.lanes == 4
    for report in (soda, flow):
        assert report.facts.runtime_cycles == report.facts.latency_cycles + -(
            -report.facts.points // report.facts.lanes
        )
        assert report.predicted_cycles == report.facts.runtime_cycles  # unlimited memory: no slowdown
        assert abs(report.result.cycles - report.predicted_cycles) / report.result.cycles < 0.25


def test_traffic_per_port(tmp_path: Path) -> None:
    report = simulate(
        SimulateConfig(program=HEAT, point=DesignPoint(vector=2), shape=(4, 8, 8), out_dir=tmp_path)
    )
    b = report.bandwidth
    assert [(p.field, p.direction) for p in b.ports] == [("T", "read"), ("T1", "write")]
    assert [p.bytes for p in b.ports] == [4 * 256, 4 * 256]
    assert [p.required_bytes_per_cycle for p in b.ports] == [8, 8]  # W = 2 float32 per beat
    assert b.total_bytes == 2048 and b.achieved_bytes_per_cycle == pytest.approx(2048 / report.result.cycles)
    assert b.available_bytes_per_cycle is None and b.gbs(1.0) is None


@pytest.mark.parametrize("suffix", [".jsonl", ".vcd"])
def test_trace_files(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"trace{suffix}"
    report = simulate(
        SimulateConfig(
            program=JACOBI, point=DesignPoint(), shape=(8, 16), trace=path, trace_cycles=50, out_dir=tmp_path
        )
    )
    assert report.trace == path and path.is_file()
    text = path.read_text()
    if suffix == ".jsonl":
        lines = text.splitlines()
        assert json.loads(lines[0])["cycles"] == 50 and len(lines) == 51
        assert json.loads(lines[0])["total_cycles"] == report.result.cycles
    else:
        assert text.startswith("$comment") and "#0\n" in text


def test_the_cycle_limit_is_a_result_not_an_error(tmp_path: Path) -> None:
    report = simulate(
        SimulateConfig(program=JACOBI, point=DesignPoint(), shape=(16, 32), max_cycles=50, out_dir=tmp_path)
    )
    assert report.result.status == "limit" and report.result.cycles == 50 and not report.valid


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"unroll": 0}, "--unroll must be between 1 and 1,024"),
        ({"iterate": 0}, "--iterate must be between 1 and 1,024"),
        ({"vector": -1}, "--vector must be between 1 and 1,024"),
        ({"trace": Path("t.txt")}, "must end in .jsonl"),
        ({"device": "nonesuch"}, "nonesuch"),
        ({"program": Path("missing.soda")}, "missing.soda"),
        ({"inputs": {"nope": Path("x.npy")}}, "x.npy"),
    ],
)
def test_bad_input_is_a_stencilmap_error(tmp_path: Path, change: dict[str, object], message: str) -> None:
    config = {"program": JACOBI, "shape": (8, 16), "out_dir": tmp_path, **change}
    fields = ("unroll", "iterate", "vector", "device")
    point = DesignPoint(**{k: v for k, v in config.items() if k in fields})  # type: ignore[arg-type]
    rest = {k: v for k, v in config.items() if k not in fields}
    with pytest.raises(StencilmapError, match=message):
        simulate(SimulateConfig(point=point, **rest))  # type: ignore[arg-type]
