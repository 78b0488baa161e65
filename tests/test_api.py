"""The Python API (``import stencilmap as sm``): objects in, objects out, ``sm.Error`` worded for it."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import stencilmap as sm
from tests.conftest import EXAMPLES

BLUR = """kernel: blur
burst width: 512
unroll factor: 2
input dram 0 float: a(32, *)
output dram 1 float: b(0, 0) = (a(-1, 0) + a(0, 0) + a(1, 0)) / 3
iterate: 1
border: ignore
"""


def test_load_from_path_or_text() -> None:
    assert sm.load(EXAMPLES / "heat3d.json").name == "heat3d"
    prog = sm.load(BLUR, shape=(8, 32))
    assert prog.name == "blur" and prog.shape == (8, 32)
    assert sm.load(str(EXAMPLES / "jacobi2d.soda")).format == "soda"


def test_run_simulate_and_codegen_agree_with_the_reference(tmp_path: Path) -> None:
    prog = sm.load(BLUR, shape=(8, 32))
    a = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    ref = sm.run(prog, {"a": a})
    design = sm.build(prog, "soda", unroll=4)
    assert design.program is not None and dict(design.parameters)["k"] == 4
    sim = sm.simulate(prog, design, {"a": a})
    assert sim.valid and sim.status == "done" and sim.cycles > 0
    assert abs(sim.cycles - sim.predicted_cycles) <= 3
    mask = ref.defined["b"]
    assert np.array_equal(sim.outputs["b"][mask], ref.outputs["b"][mask])
    assert set(sim.stalls) == {m.name for m in design.modules}
    code = sm.codegen(design, "hls", tmp_path / "code", inputs={"a": a}, verify=True)
    assert code.verification is not None and code.verification.valid
    assert (tmp_path / "code" / "kernel.cpp").is_file() and (tmp_path / "code" / "csim" / "b.npy").is_file()


def test_simulate_builds_the_default_design_and_takes_a_device() -> None:
    sim = sm.simulate(sm.load(EXAMPLES / "jacobi2d.soda", shape=(32, 32)), device="ku060")
    assert sim.valid and sim.design.arch == "soda" and sim.device is not None


def test_estimate_and_explore_take_programs() -> None:
    prog = sm.load(EXAMPLES / "jacobi2d.soda", shape=(256, 256))
    est = sm.estimate(prog, "ku060", "soda", unroll=4, iterate=2, iterations=10)
    assert est.predicted_seconds > 0 and est.launches == 5
    res = sm.explore(prog, "ku060", iterations=10, simulate=False)
    assert res.best is not None and res.best.fits


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: sm.build(sm.load(BLUR), "soda", unroll=0), "unroll must be"),
        (lambda: sm.run(sm.load(BLUR), {"nope": np.zeros(3)}), "inputs['nope']"),
        (lambda: sm.load(BLUR, shape=(4, 4, 4)), "shape has 3 dimensions"),
        (lambda: sm.build(sm.load(BLUR), "nosuch"), "unknown architecture"),
        (lambda: sm.estimate(sm.load(BLUR), "ku060", iterations=0), "iterations must be"),
        (lambda: sm.load("kernel: x\n???"), "syntax error"),
    ],
)
def test_errors_are_sm_error_naming_no_cli_option(call: object, words: str) -> None:
    with pytest.raises(sm.Error) as info:
        call()  # type: ignore[operator]
    assert words in str(info.value) and "--" not in str(info.value)


def test_the_example_session_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["api_session.py", str(tmp_path)])
    runpy.run_path(str(EXAMPLES / "api_session.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "cpu backend equals the reference: True" in out and "simulated: valid=True" in out
    assert "C simulation valid=True" in out and (tmp_path / "compile" / "report.html").is_file()


def test_split_builds_simulates_and_estimates_over_devices(tmp_path: Path) -> None:
    prog = sm.load(EXAMPLES / "heat3d.json", shape=(4, 8, 8))
    split = sm.split(prog, "stratix10", devices=2, iterate=4)
    assert [len(p.stencils) for p in split.partition.parts] == [2, 2]
    sim = sm.simulate(prog, split.design, device="stratix10")
    assert sim.valid
    design = sm.build(
        prog, "stencilflow", iterate=4, device="stratix10", partition=[["T1@1"], ["T1@2", "T1@3", "T1@4"]]
    )
    assert design.count("network") == 1
    report = sm.estimate(prog, "stratix10", iterate=4, devices=2)
    assert report.partition is not None and report.partition.streams_cut == 1
    with pytest.raises(sm.Error, match="give devices or partition, not both"):
        sm.split(prog, "stratix10", devices=2, partition=[["T1"]])
    code = sm.codegen(split.design, "opencl", tmp_path / "code", verify=True)  # one SMI program per device
    assert code.verification is not None and code.verification.valid
    assert {"kernels/heat3d_stencilflow_rank0.cl", "kernels/heat3d_stencilflow_rank1.cl"} <= set(code.files)
    with pytest.raises(sm.Error, match="needs target opencl"):
        sm.codegen(split.design, "hls", tmp_path / "hls")


def test_run_results_are_mappings_of_the_outputs_with_short_reprs() -> None:
    prog = sm.load(BLUR, shape=(8, 32))
    res = sm.run(prog, {"a": np.ones((8, 32), np.float32)})
    assert list(res) == ["b"] and "b" in res and len(res) == 1
    assert res["b"] is res.outputs["b"] and dict(res) == dict(res.outputs)
    with pytest.raises(KeyError, match="'nope' is not an output"):
        res["nope"]
    design = sm.build(prog, "soda", unroll=2)
    sim = sm.simulate(prog, design)
    for obj in (res, design, sim, sm.estimate(prog, "ku060")):
        assert len(repr(obj)) < 300 and "\n" not in repr(obj)
    assert repr(sim).startswith("Simulation('blur' on soda: done, valid")


@pytest.mark.parametrize(
    ("arch", "option"), [("soda", {"vector": 2}), ("stencilflow", {"unroll": 2}), ("pcm", {"vector": 2})]
)
def test_build_refuses_the_options_the_command_line_refuses(arch: str, option: dict[str, int]) -> None:
    with pytest.raises(sm.Error, match=f"{next(iter(option))} does not apply to the {arch} design"):
        sm.build(sm.load(BLUR, shape=(8, 32)), arch, **option)  # type: ignore[arg-type]


def test_inputs_convert_without_loss_and_name_the_parameter_otherwise() -> None:
    prog = sm.load(BLUR, shape=(8, 32))
    a = np.arange(8 * 32, dtype=np.int16).reshape(8, 32)
    res = sm.run(prog, {"a": a})
    assert np.array_equal(res["b"], sm.run(prog, {"a": a.astype(np.float32)})["b"], equal_nan=True)
    with pytest.raises(
        sm.Error, match=r"inputs\['a'\]: has dtype float64, expected float32 \(the conversion"
    ):
        sm.run(prog, {"a": a.astype(np.float64)})
