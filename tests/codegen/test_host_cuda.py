"""The cuda target's folder is complete (issue 25): ``kernel.cu`` with ``main.cu``, a ``Makefile`` (nvcc,
``--fmad=false``) and ``README.md``, written the same twice. No GPU or nvcc here: g++ compiles ``main.cu``
(which includes ``kernel.cu``) against a stand-in ``cuda_runtime.h`` (``standins/cuda``, marked as such),
whose host definitions run every thread in turn, so the host program's buffers, ping-pong, masks and NaN
are checked against the reference bit for bit on the programs ``test_host_c`` runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from tests.codegen.test_host_c import CASES, runs_like_the_reference
from tests.conftest import EXAMPLES

STANDIN = Path(__file__).parent / "standins" / "cuda"
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="needs g++")


def _generate(name: str, shape: tuple[int, ...] | None, out: Path) -> None:
    args = ["codegen", str(EXAMPLES / name), "--target", "cuda", "--out", str(out)]
    result = CliRunner().invoke(main, args + (["--shape", ",".join(map(str, shape))] if shape else []))
    assert result.exit_code == 0, result.output


def _gxx(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert GXX is not None
    command = [GXX, "-std=c++14", "-Wall", "-Werror", "-Wno-unused-function", "-Wno-unused-variable"]
    command += ["-Wno-unknown-pragmas"]  # nvcc's ``#pragma unroll``
    command += ["-ffp-contract=off", f"-I{STANDIN}", "-x", "c++", "main.cu", *extra]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True)


def test_the_folder_is_complete_and_deterministic(tmp_path: Path) -> None:
    _generate("fdtd2d_iterate.json", None, tmp_path / "a")
    _generate("fdtd2d_iterate.json", None, tmp_path / "b")
    files = {p.name for p in (tmp_path / "a").iterdir() if not p.name.startswith(".")}
    assert {"kernel.cu", "main.cu", "Makefile", "README.md"} <= files
    for name in ("kernel.cu", "main.cu", "Makefile", "README.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    make = (tmp_path / "a" / "Makefile").read_text()
    assert "nvcc" in make and "--fmad=false" in make and "main.cu" in make
    readme = (tmp_path / "a" / "README.md").read_text()
    assert "`main.cu`" in readme and "make" in readme and "| `Ez.bin` | input | float32 | 64×128 |" in readme


@needs_gxx
def test_main_compiles_against_the_declarations_alone(tmp_path: Path) -> None:
    """Without SM_STANDIN_RUN the stand-in only declares: the host program uses nothing else."""
    _generate("dag_listing1.json", (8, 8, 8), tmp_path)
    done = _gxx(tmp_path, "-fsyntax-only")
    assert done.returncode == 0, done.stderr


@needs_gxx
@pytest.mark.parametrize(("name", "shape"), CASES, ids=[c[0] for c in CASES])
def test_the_host_program_equals_the_reference(
    name: str, shape: tuple[int, ...] | None, tmp_path: Path
) -> None:
    out = tmp_path / "code"
    _generate(name, shape, out)
    done = _gxx(out, "-O1", "-DSM_STANDIN_RUN", "-o", "stencil", "-lm")
    assert done.returncode == 0, done.stderr
    runs_like_the_reference(out, name, shape, ["./stencil", "in", "res"])


@needs_gxx
def test_a_missing_input_file_is_one_line_and_status_2(tmp_path: Path) -> None:
    _generate("jacobi2d.soda", (8, 16), tmp_path)
    assert _gxx(tmp_path, "-DSM_STANDIN_RUN", "-o", "stencil").returncode == 0
    done = subprocess.run(["./stencil", "nowhere", "res"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip() == "cannot open nowhere/v.bin"
