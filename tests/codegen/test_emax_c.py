"""The EMAX library's C entry point (codegen/emax_c.py, codegen/include/emax.h; EMAX §4.1, §4.2, Figs. 5,
6): ``stencil_<name>(A, B, C, size_X, size_Y, size_Z)`` holding the mnemonics compiles here with the
system C compiler, and — the header's macros executing the mnemonics — computes what the EMAX simulator
computes, bit for bit, and so the reference's values; an edited dist or coefficient in the C changes it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.backends.reference import run_reference
from stencilmap.cli.codegen import codegen_cmd
from stencilmap.codegen.emax_c import c_files, c_source, coefficients, compile_and_run, entry_name
from stencilmap.design.emax import EmaxMapping, map_emax
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim.emax import simulate_emax
from stencilmap.sim.validate import validate
from tests.conftest import EXAMPLES

DEVICE = load_device("emax")


def _setup(name: str, p: int, shape: tuple[int, ...]) -> tuple[Program, EmaxMapping, np.ndarray]:
    program = bind_shape(load_program(EXAMPLES / name), {}, shape)
    values = make_inputs(program, {}, 0)
    m = map_emax(program, BuildConfig(unroll=p))
    return program, m, values[m.field]


@pytest.mark.parametrize(
    ("name", "p", "shape"),
    [
        ("jacobi3d.soda", 1, (8, 12, 20)),
        ("jacobi3d.soda", 4, (9, 12, 20)),
        ("star3d_degree2.soda", 2, (8, 12, 20)),
        ("star3d_degree3.soda", 1, (8, 12, 20)),
        ("laplace2d.soda", 1, (16, 32)),
        ("jacobi3d.soda", 2, (4, 6, 4100)),  # X split into chunks (§4.2 (3), Fig. 7)
    ],
)
def test_compiled_library_computes_the_stencil(name: str, p: int, shape: tuple[int, ...]) -> None:
    program, m, grid = _setup(name, p, shape)
    out = compile_and_run(m, c_files(m), grid)
    sim = simulate_emax(m, grid, DEVICE)
    assert np.array_equal(out, sim.output)  # -ffp-contract=off: the same roundings as the simulator
    values = make_inputs(program, {}, 0)
    ref = run_reference(program, values)
    got = {m.output: out.reshape(ref.outputs[m.output].shape)}
    v = validate("done", got, ref.outputs, ref.defined)
    assert v.valid, v.first_mismatch


def test_the_source_holds_the_papers_call_and_mnemonics() -> None:
    _, m, _ = _setup("jacobi3d.soda", 1, (8, 12, 20))
    text = c_source(m)
    assert '#include "emax.h"' in text
    assert (
        "int stencil_jacobi3d(const float *A, float *B, const float *C, int size_X, int size_Y, int size_Z)"
        in text
    )
    assert sum(
        1 for line in text.splitlines() if re.match(r"\s+(LD|ST|FIFO|FMUL|FMA|FADD)\s*\(", line)
    ) == len(m.instructions)
    assert coefficients(m) == (0.1, 0.2, 0.15)
    assert "stencil_jacobi3d_C[3] = {0.1f, 0.2f, 0.15f}" in text


def _edited(m: EmaxMapping, old: str, new: str) -> tuple[tuple[str, str], ...]:
    files = dict(c_files(m))
    src = files[f"{entry_name(m)}.c"]
    assert old in src
    files[f"{entry_name(m)}.c"] = src.replace(old, new)
    return tuple(files.items())


def test_an_edited_dist_in_the_c_changes_the_result() -> None:
    _, m, grid = _setup("jacobi3d.soda", 1, (8, 12, 20))
    base = compile_and_run(m, c_files(m), grid)
    # the Y column's three loads shift by 2 rows instead of 1: the kept LMMs hold stale streams
    edited = _edited(m, ", 1, 1),\n", ", 1, 2),\n")
    assert not np.array_equal(compile_and_run(m, edited, grid), base)


def test_an_edited_coefficient_in_the_c_changes_the_result() -> None:
    _, m, grid = _setup("jacobi3d.soda", 1, (8, 12, 20))
    base = compile_and_run(m, c_files(m), grid)
    edited = _edited(m, "{0.1f, 0.2f, 0.15f}", "{0.1f, 0.25f, 0.15f}")
    assert not np.array_equal(compile_and_run(m, edited, grid), base)


def test_two_loads_on_one_lmm_are_refused_by_the_c_too() -> None:
    _, m, grid = _setup("jacobi3d.soda", 1, (8, 12, 20))
    edited = _edited(m, "r_A_zm1_y, -1, 0, 1, 0)", "r_A_zm1_y, -1, 0, 1, 1)")
    with pytest.raises(StencilmapError, match="one port"):
        compile_and_run(m, edited, grid)


def test_hostile_program_names_stay_in_comments_and_identifiers() -> None:
    _, m, grid = _setup("jacobi3d.soda", 1, (8, 12, 20))
    hostile = replace(m, program='x */ #include "/etc/passwd"\n int evil;')
    text = c_source(hostile)
    assert "*/ #include" not in text and "\n int evil" not in text
    assert entry_name(hostile).isidentifier()
    out = compile_and_run(hostile, c_files(hostile), grid)
    assert np.array_equal(out, compile_and_run(m, c_files(m), grid))


def test_a_compile_error_is_one_line(tmp_path: Path) -> None:
    _, m, grid = _setup("jacobi3d.soda", 1, (8, 12, 20))
    with pytest.raises(StencilmapError, match="the C compiler") as caught:
        compile_and_run(m, _edited(m, "FADD(", "FSUB("), grid)
    assert "\n" not in str(caught.value)


def test_codegen_verify_compiles_and_runs_the_written_c(tmp_path: Path) -> None:
    """``codegen --target emax --verify``: the simulator runs emax.asm, the written C runs here, the same."""
    out = tmp_path / "gen"
    args = [str(EXAMPLES / "jacobi3d.soda"), "--target", "emax", "--shape", "8,12,20", "--unroll", "2"]
    r = CliRunner().invoke(codegen_cmd, [*args, "--out", str(out), "--verify"])
    assert r.exit_code == 0, r.output
    assert "stencil_jacobi3d.c compiled and run here: the same values bit for bit" in r.output
    assert (out / "emax.h").is_file() and "LD  (" in (out / "stencil_jacobi3d.c").read_text()
