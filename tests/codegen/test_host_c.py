"""The c-openmp target's folder builds and runs as it is (issue 25): ``make`` compiles ``main.c`` with the
cpu backend's ``kernel.c``; the program, run on raw input files, writes outputs equal to the reference bit
for bit (undefined points NaN), on programs with iteration, preserve, copy boundaries, masks, a
lower-dimensional input and several outputs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.backends.reference import run_reference
from stencilmap.cli import main
from stencilmap.names import identifier
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from tests.conftest import EXAMPLES

CASES = [
    ("jacobi2d.soda", (40, 64)),  # 4 time steps, border: preserve
    ("heat3d.json", (6, 10, 12)),  # copy boundaries, a temporary
    ("fdtd2d_iterate.json", None),  # three fields fed back, coefficient fields
    ("dag_listing1.json", (8, 8, 8)),  # shrink margins (masks), a lower-dimensional input
]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="needs make and gcc")
@pytest.mark.parametrize(("name", "shape"), CASES, ids=[c[0] for c in CASES])
def test_the_folder_builds_and_equals_the_reference(
    name: str, shape: tuple[int, ...] | None, tmp_path: Path
) -> None:
    out = tmp_path / "code"
    args = ["codegen", str(EXAMPLES / name), "--target", "c-openmp", "--out", str(out)]
    result = CliRunner().invoke(main, args + (["--shape", ",".join(map(str, shape))] if shape else []))
    assert result.exit_code == 0, result.output
    assert {"kernel.c", "main.c", "Makefile", "README.md"} <= {p.name for p in out.iterdir()}
    subprocess.run(["make", "-s", "CC=gcc"], cwd=out, check=True, capture_output=True)
    runs_like_the_reference(out, name, shape, ["./stencil", "in", "res", "2"])


def runs_like_the_reference(out: Path, name: str, shape: tuple[int, ...] | None, command: list[str]) -> None:
    """Write the example's seeded inputs as raw files under ``out/in``, run ``command`` in ``out`` and compare
    every ``out/res/<output>.bin`` with the NumPy reference, bit for bit (undefined points NaN on both sides)."""
    program = bind_shape(load_program(EXAMPLES / name), {}, shape)
    values = make_inputs(program, {}, 0)
    (out / "in").mkdir()
    (out / "res").mkdir()
    for field, array in values.items():
        np.ascontiguousarray(array).tofile(out / "in" / f"{identifier(field)}.bin")
    subprocess.run(command, cwd=out, check=True, capture_output=True)
    reference = run_reference(program, values)
    for o, want in reference.outputs.items():
        got = np.fromfile(out / "res" / f"{identifier(o)}.bin", dtype=want.dtype).reshape(want.shape)
        assert np.array_equal(got, want, equal_nan=True), o


def test_a_missing_input_file_is_one_line_and_status_2(tmp_path: Path) -> None:
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("needs make and gcc")
    out = tmp_path / "code"
    args = [
        "codegen",
        str(EXAMPLES / "jacobi2d.soda"),
        "--target",
        "c-openmp",
        "--shape",
        "8,16",
        "--out",
        str(out),
    ]
    assert CliRunner().invoke(main, args).exit_code == 0
    subprocess.run(["make", "-s", "CC=gcc"], cwd=out, check=True, capture_output=True)
    done = subprocess.run(["./stencil", "nowhere", "res"], cwd=out, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip() == "cannot open nowhere/v.bin"
