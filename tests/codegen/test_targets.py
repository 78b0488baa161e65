"""The codegen targets besides HLS and OpenCL (``codegen.registry``): emax, cgra, dot, c-openmp and cuda —
their files are the texts ``analyze`` and ``compile`` write, and ``--verify`` runs each here (the EMAX and
CGRA simulators, the cpu backend; CUDA only on a GPU, DOT never)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import stencilmap as sm
from stencilmap.backends.nvrtc import nvrtc_missing
from stencilmap.cli.codegen import codegen_cmd
from stencilmap.codegen.cgra import assembly, cgra_dot
from stencilmap.codegen.dot import to_dot
from stencilmap.codegen.emax import mnemonics
from stencilmap.codegen.emax_c import c_files
from stencilmap.codegen.registry import HOST, emit, program_design, target, targets
from stencilmap.design.cgra.mapping import map_cgra
from stencilmap.design.emax import map_emax
from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError
from stencilmap.jobs.codegen import MARKER
from stencilmap.jobs.codegen_checks import NO_GPU, gpu_present
from stencilmap.model.cgra import roofline_workers_of
from tests.conftest import EXAMPLES
from tests.design.helpers import bound

runner = CliRunner()
STAR = EXAMPLES / "star3d_degree2.soda"
R8 = EXAMPLES / "stencil1d_r8.json"
JACOBI = EXAMPLES / "jacobi2d.soda"


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(codegen_cmd, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_every_artifact_is_a_target() -> None:
    assert set(targets()) == {"hls", "opencl", "emax", "cgra", "dot", "c-openmp", "cuda"}
    assert target("c-openmp").archs == (HOST,) and target("cuda").archs == (HOST,)
    assert set(target("dot").archs) == {"soda", "stencilflow", "pcm", "emax", "cgra"}


def test_emax_target_writes_the_mnemonics_of_the_design() -> None:
    program = bound(STAR)
    design = build("emax", program, BuildConfig(unroll=2))
    gen = emit("emax", design, program, {})
    assert gen.runner == "emax-sim"
    mapping = map_emax(program, BuildConfig(unroll=2))
    assert dict(gen.files) == {"emax.asm": mnemonics(mapping), **dict(c_files(mapping))}
    assert set(dict(gen.files)) == {"emax.asm", "emax.h", "stencil_star3d_degree2.c"}


def test_cgra_target_writes_the_assembly_and_the_dfg() -> None:
    program = bound(R8)
    design = build("cgra", program, BuildConfig(workers=2, strip=60_000), roofline=roofline_workers_of)
    mapping = map_cgra(program, BuildConfig(workers=2, strip=60_000), roofline_workers_of)
    assert len(mapping.strips) > 1  # the rebuilt mapping finds the strips the design was built with
    gen = emit("cgra", design, program, {})
    assert gen.runner == "cgra-sim"
    assert dict(gen.files) == {"cgra.asm": assembly(mapping), "cgra_dfg.dot": cgra_dot(mapping)}


def test_dot_target_is_the_designs_graph() -> None:
    program = bound(JACOBI)
    design = build("soda", program, BuildConfig(unroll=2))
    gen = emit("dot", design, program, {})
    assert dict(gen.files) == {"design.dot": to_dot(design)} and gen.runner == "none"


def test_host_targets_take_no_design() -> None:
    program = bound(JACOBI)
    with pytest.raises(StencilmapError, match="cannot express a 'soda' design"):
        emit("c-openmp", build("soda", program, BuildConfig()), program, {})
    gen = emit("c-openmp", program_design(program), program, {})
    assert "sm_block" in dict(gen.files)["kernel.c"]
    assert "__global__" in dict(emit("cuda", program_design(program), program, {}).files)["kernel.cu"]


@pytest.mark.parametrize(
    ("target_name", "program", "files", "runner_words"),
    [
        ("emax", STAR, {"emax.asm", "emax.h", "stencil_star3d_degree2.c"}, "the EMAX simulator"),
        ("cgra", R8, {"cgra.asm", "cgra_dfg.dot"}, "the CGRA simulator"),
        ("c-openmp", JACOBI, {"kernel.c", "main.c", "Makefile", "README.md"}, "the cpu backend"),
    ],
)
def test_verify_runs_each_target_here(
    target_name: str, program: Path, files: set[str], runner_words: str, tmp_path: Path
) -> None:
    out = tmp_path / "gen"
    code, text, err = invoke(program, "--target", target_name, "--out", out, "--verify")
    assert code == 0, text + err
    assert f"verified by {runner_words}: valid" in text
    written = {p.name for p in out.iterdir() if p.is_file()} - {MARKER}  # stencilmap's own mark
    assert written == files and [p.name for p in (out / "csim").iterdir()]


def test_a_deadlock_lists_the_waiting_kernels_by_name(tmp_path: Path) -> None:
    """Delay buffers of depth 1 deadlock the DAG's channels; the report is sorted, so it reads the same every run
    although the kernels run as threads."""
    dag = EXAMPLES / "dag_listing1.json"
    code, text, _ = invoke(
        dag, "--target", "opencl", "--delay-buffers", "min", "--out", tmp_path / "o", "--verify"
    )
    assert code == 1 and "INVALID (deadlock)" in text
    waits = text.split("waits on a channel: ", 1)[1].split("\n", 1)[0].rstrip(";").split("; ")
    assert len(waits) > 2 and waits == sorted(waits)


def test_verify_that_cannot_run_says_why(tmp_path: Path) -> None:
    code, text, _ = invoke(JACOBI, "--target", "dot", "--out", tmp_path / "d", "--verify", "--json")
    assert code == 0 and json.loads(text)["verified"] == "not run: a drawing has nothing to run"
    if gpu_present():
        pytest.skip("a GPU is here: the cuda check runs (test_cuda_runs_on_the_gpu)")
    code, text, _ = invoke(JACOBI, "--target", "cuda", "--out", tmp_path / "c", "--verify")
    assert code == 0 and f"verify: {NO_GPU}" in text and (tmp_path / "c" / "kernel.cu").is_file()
    if not nvrtc_missing():  # NVRTC compiled what was written
        assert "; NVRTC 12." in text and "compiled kernel.cu for sm_90 (registers a thread: st_0 " in text


@pytest.mark.skipif(bool(nvrtc_missing()), reason=nvrtc_missing() or "NVRTC is here")
def test_cuda_that_nvrtc_refuses_fails_the_check() -> None:
    from stencilmap.jobs.codegen_checks import _nvrtc

    result = _nvrtc('extern "C" __global__ void st_0() { undeclared(); }\n')
    assert not isinstance(result, str) and result.status == "failed"
    assert (
        result.message
        == 'NVRTC did not compile kernel.cu: kernel.cu:1: error: identifier "undeclared" is undefined'
    )


@pytest.mark.skipif(not gpu_present(), reason="no CuPy and GPU here")
def test_cuda_runs_on_the_gpu(tmp_path: Path) -> None:
    code, text, err = invoke(JACOBI, "--target", "cuda", "--out", tmp_path / "c", "--verify")
    assert code == 0 and "verified by CuPy on the GPU: valid" in text, text + err


def test_a_wrong_result_is_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check compares with the reference: a simulator that computes wrongly fails the run."""
    import stencilmap.sim.emax as sim_emax

    real = sim_emax.simulate_emax

    def wrong(*args: object, **kwargs: object) -> object:
        run = real(*args, **kwargs)  # type: ignore[arg-type]
        run.output[...] += 1.0
        return run

    monkeypatch.setattr(sim_emax, "simulate_emax", wrong)
    code, text, _ = invoke(STAR, "--target", "emax", "--out", tmp_path / "e", "--verify")
    assert code == 1 and "INVALID" in text


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--target", "c-openmp", "--unroll", "2"], "--unroll does not apply to target 'c-openmp'"),
        (["--target", "cuda", "--arch", "soda"], "--arch does not apply to target 'cuda'"),
        (["--target", "emax", "--arch", "soda"], "target 'emax' cannot express a 'soda' design"),
        (["--target", "c-openmp", "--devices", "2"], "target 'c-openmp' emits one device's kernels"),
    ],
)
def test_bad_input_is_one_line(args: list[str], reason: str, tmp_path: Path) -> None:
    code, out, err = invoke(JACOBI, *args, "--out", tmp_path / "g")
    assert code == 2, out + err
    assert err.count("\n") == 1 and reason in err and not (tmp_path / "g").exists()


def test_the_api_reaches_the_targets(tmp_path: Path) -> None:
    program = sm.load(STAR)
    design = sm.build(program, "emax", unroll=1)
    report = sm.codegen(design, "emax", tmp_path / "e", verify=True)
    assert report.verification is not None and report.verification.valid
    report = sm.codegen(design, "c-openmp", tmp_path / "c", verify=True)  # from the program, any design
    assert report.design.arch == HOST and report.verification is not None and report.verification.valid
    shape = tuple(int(n or 0) for n in report.program.shape)
    assert np.load(tmp_path / "c" / "csim" / "w.npy").shape == shape
