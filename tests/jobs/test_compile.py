"""``stencilmap compile``: every kind of device gets its flow, its code run here, its report; bad input
writes nothing and says why in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.backends.nvrtc import nvrtc_missing, nvrtc_version
from stencilmap.cli import main
from stencilmap.design.serialize import design_from_json
from stencilmap.jobs.codegen import MARKER
from stencilmap.jobs.codegen_checks import gpu_present
from stencilmap.jobs.compile import CompileConfig, compile_program
from stencilmap.point import DesignPoint
from tests.conftest import EXAMPLES

JACOBI = str(EXAMPLES / "jacobi2d.soda")


def _compile(args: list[str]) -> tuple[int, dict[str, object]]:
    res = CliRunner().invoke(main, ["compile", *args, "--json"])
    return res.exit_code, (json.loads(res.output) if res.exit_code in (0, 1) else {"error": res.output})


@pytest.mark.parametrize(
    ("device", "arch", "target"),
    [("ku060", "soda", "hls"), ("de5", "pcm", "opencl")],
)
def test_fpga_devices_get_their_vendors_code_verified_and_simulated(
    tmp_path: Path, device: str, arch: str, target: str
) -> None:
    if target == "opencl":
        pytest.importorskip("pyopencl")
        if not Path("/etc/OpenCL/vendors/pocl.icd").exists():
            pytest.skip("PoCL is not installed (make opencl)")
    out = tmp_path / "job"
    # the architecture named: on this small grid stencilflow ties with them and, using less of the chip,
    # would win (explore's tie rule); the soda → HLS and pcm → OpenCL paths are what this test covers
    args = [JACOBI, "--device", device, "--arch", arch, "--shape", "32,48", "--out", str(out)]
    code, r = _compile(args)
    assert code == 0, r
    assert r["best"]["arch"] == arch and r["target"] == target  # type: ignore[index]
    assert r["csim"]["valid"] is True  # type: ignore[index]
    sim = r["simulation"]
    assert sim["valid"] is True and sim["scaled"] is False  # type: ignore[index]
    assert abs(sim["cycles"] - sim["predicted_cycles"]) <= 0.03 * sim["cycles"]  # type: ignore[index]
    assert r["predicted_seconds"] > 0  # type: ignore[operator]
    for name in ("design.json", "design.dot", "roofline.png", "design_space.png", "report.md", "report.html"):
        assert (out / name).is_file(), name
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {MARKER}  # stencilmap's mark
    assert set(r["files"]) == on_disk  # type: ignore[arg-type]
    design = design_from_json(json.loads((out / "design.json").read_text()))
    assert design.arch == arch


def test_large_grids_are_verified_and_simulated_scaled_down(tmp_path: Path) -> None:
    report = compile_program(
        CompileConfig(
            program=Path(JACOBI),
            point=DesignPoint(device="ku060"),
            out_dir=tmp_path / "big",
            shape=(512, 384),
            iterations=20,
            sim_points=1 << 13,
            csim_points=1 << 11,
        )
    )
    assert report.simulation is not None and report.simulation.scaled and report.simulation.valid
    assert report.csim.scaled and report.csim.valid
    assert (tmp_path / "big" / "verify").is_dir()  # the code checked, for the smaller grid
    assert report.choice.shape == (512, 384)
    text = (tmp_path / "big" / "report.md").read_text()
    assert "scaled down" in text and "--shape 512,384" in text


def test_emax_gets_mnemonics_run_by_its_simulator(tmp_path: Path) -> None:
    out = tmp_path / "e"
    code, r = _compile(
        [str(EXAMPLES / "jacobi3d.soda"), "--device", "emax", "--shape", "8,16,16", "--out", str(out)]
    )
    assert code == 0, r
    assert r["best"]["arch"] == "emax" and r["csim"]["valid"] is True  # type: ignore[index]
    assert "LD" in (out / "code" / "emax.asm").read_text()
    assert r["simulation"]["emax"]["lmm_streams"] > 0  # type: ignore[index]


@pytest.mark.parametrize(("device", "file"), [("xeon-e5-2690v3", "kernel.c"), ("v100", "kernel.cu")])
def test_cpus_and_gpus_get_host_code(tmp_path: Path, device: str, file: str) -> None:
    out = tmp_path / "h"
    code, r = _compile([JACOBI, "--device", device, "--shape", "40,40", "--out", str(out)])
    assert code == 0, r
    assert (out / "code" / file).is_file() and r["simulation"] is None
    csim = r["csim"]
    if device.startswith("xeon"):
        assert csim["valid"] is True  # type: ignore[index]
    else:  # no CuPy or GPU in CI: said, not hidden
        assert csim["valid"] is True or (csim["valid"] is None and "CuPy" in csim["message"])  # type: ignore[index]


@pytest.mark.skipif(gpu_present() or bool(nvrtc_missing()), reason="a GPU runs the code, or no NVRTC here")
@pytest.mark.parametrize(
    ("device", "said"),
    [
        ("v100", "NVRTC 12.9 compiled kernel.cu for sm_70 (registers a thread: st_0 "),
        ("gtx760", "NVRTC does not compile for the gtx760's sm_30"),
    ],
)
def test_without_a_gpu_nvrtc_compiles_for_the_devices_architecture(
    tmp_path: Path, device: str, said: str
) -> None:
    code, r = _compile([JACOBI, "--device", device, "--shape", "40,40", "--out", str(tmp_path / "g")])
    csim = r["csim"]
    assert code == 0 and csim["valid"] is None and csim["how"].endswith("compiled by NVRTC alone")  # type: ignore[index]
    assert said.replace("12.9", nvrtc_version()) in csim["message"]  # type: ignore[index]


def test_cuda_that_nvrtc_refuses_fails_the_compile_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel.cu NVRTC does not compile is a failed check (valid false, NVRTC's error), not "not run"."""
    if gpu_present() or nvrtc_missing():
        pytest.skip("a GPU runs the code, or no NVRTC here")
    import stencilmap.backends.gpu as gpu

    real = gpu.cuda_source
    monkeypatch.setattr(gpu, "cuda_source", lambda plan, *tuning: real(plan, *tuning) + "\nbroken;\n")
    code, r = _compile([JACOBI, "--device", "v100", "--shape", "40,40", "--out", str(tmp_path / "g")])
    assert r["csim"]["valid"] is False and "kernel.cu:" in r["csim"]["message"]  # type: ignore[index]
    assert "error" in r["csim"]["message"] and code != 0  # type: ignore[index]


def test_report_html_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "r"
    compile_program(
        CompileConfig(program=Path(JACOBI), point=DesignPoint(device="ku060"), out_dir=out, shape=(32, 32))
    )
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page
    sources = re.findall(r'src="([^"]+)"', page)
    assert sources and all(s.startswith("data:image/") for s in sources)
    assert "stencilmap simulate" in page  # the commands that reproduce the numbers


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--device", "nosuch"], "unknown device"),
        (["--device", "ku060", "--arch", "emax"], "not 'emax'"),
        (["--device", "ku060", "--iterations", "0"], "--iterations must be"),
        (["--device", "emax"], "EMAX"),  # a 2-D 5-point program on EMAX maps, the 9-point one does not
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args: list[str], reason: str) -> None:
    program = JACOBI if args[1] != "emax" else str(EXAMPLES / "jacobi2d_9pt.soda")
    out = tmp_path / "never"
    res = CliRunner().invoke(main, ["compile", program, *args, "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and reason in lines[0], res.output
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_grid_too_large_to_ship_data_for_compiles_scaled(tmp_path: Path) -> None:
    out = tmp_path / "huge"
    code, r = _compile([JACOBI, "--device", "ku060", "--shape", "100000,100000", "--out", str(out)])
    assert code == 0, r
    assert r["simulation"]["scaled"] and r["csim"]["scaled"] and r["csim"]["valid"]  # type: ignore[index]
    assert (out / "code" / "kernel.cpp").is_file() and not (out / "code" / "data").exists()
    assert "100000" in (out / "code" / "kernel.cpp").read_text()  # the real grid's code


def test_the_cgra_gets_its_assembly_run_by_its_simulator(tmp_path: Path) -> None:
    out = tmp_path / "c"
    code, r = _compile(
        [str(EXAMPLES / "stencil1d_r8.json"), "--device", "cgra-tia", "--shape", "65536", "--out", str(out)]
    )
    assert code == 0, r
    assert r["best"]["arch"] == "cgra" and r["best"]["workers"] == 6  # the paper's §VI choice  # type: ignore[index]
    assert r["csim"]["valid"] is True and r["simulation"]["valid"] is True  # type: ignore[index]
    sim = r["simulation"]
    assert abs(sim["cycles"] - sim["predicted_cycles"]) <= 0.02 * sim["cycles"]  # type: ignore[index]
    assert "MAC" in (out / "code" / "cgra.asm").read_text() and (out / "code" / "cgra_dfg.dot").is_file()


def test_a_device_file_by_path(tmp_path: Path) -> None:
    doc = json.loads(
        (Path(__file__).resolve().parents[2] / "src/stencilmap/device/files/ku060.json").read_text()
    )
    doc["clock_mhz"] = 300.0
    path = tmp_path / "my_ku060.json"
    path.write_text(json.dumps(doc))
    code, r = _compile([JACOBI, "--device", str(path), "--shape", "32,32", "--out", str(tmp_path / "o")])
    assert code == 0, r
    assert f"--device {path}" in r["commands"]["estimate"]  # type: ignore[index]


def test_input_data_from_the_command_line(tmp_path: Path) -> None:
    """A program whose data file is not at hand compiles with --input (issue 25): the checks read the
    user's array (cut to their grids) and the reproducing commands name it."""
    import shutil

    import numpy as np

    from tests.conftest import CORPUS

    source = CORPUS / "stencilflow" / "horidiff_min.json"
    if not source.is_file():
        pytest.skip("the corpus is not beside this checkout")
    program = tmp_path / "horidiff_min.json"
    shutil.copy(source, program)  # without its inA_float32.dat
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["compile", str(program), "--device", "ku060", "--out", str(out)])
    assert res.exit_code == 2 and "--input inA=FILE.npy" in res.output and not out.exists()
    np.save(tmp_path / "short.npy", np.zeros(9, np.float32))
    res = CliRunner().invoke(
        main, ["compile", str(program), "--device", "ku060", "--input", f"inA={tmp_path / 'short.npy'}"]
    )
    assert res.exit_code == 2 and "--input inA: has shape [9], expected [10]" in res.output
    np.save(tmp_path / "inA.npy", np.linspace(-1, 1, 10, dtype=np.float32))
    given = f"inA={tmp_path / 'inA.npy'}"
    code, r = _compile([str(program), "--device", "ku060", "--input", given, "--out", str(out)])
    assert code == 0, r
    assert r["csim"]["valid"] and r["simulation"]["valid"]  # type: ignore[index]
    lines = (out / "report.md").read_text().splitlines()
    for verb in ("simulate", "codegen"):
        assert any(f"stencilmap {verb}" in ln and f"--input {given}" in ln for ln in lines), verb
