"""Generating, running and checking code for the codegen tests (compiled executables cached per session)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from stencilmap.backends.reference import run_reference
from stencilmap.codegen.opencl_run import pocl_available
from stencilmap.codegen.registry import Generated, emit
from stencilmap.codegen.verify import CsimResult, run_csim, write_data
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.io import Array
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from stencilmap.sim.validate import Validation, validate
from tests.sim.helpers import built, inputs_for, load_small

#: Examples bound to smaller grids than their own (same rank): the emulation runs a thread per kernel; and
#: corpus programs whose ``load_small`` grid leaves every output point undefined (nothing to compare).
SHAPES: dict[str, tuple[int, ...]] = {
    "tridiagonal_solve.json": (16, 8, 16),
    "dag_listing1.json": (8, 16, 16),
    "fdtd2d.json": (16, 32),
    "fdtd2d_iterate.json": (16, 32),
    "heat3d.json": (8, 16, 16),
    "jacobi2d.soda": (24, 32),
    "jacobi2d_9pt.soda": (24, 32),
    "jacobi3d.soda": (8, 12, 16),
    "laplace2d.soda": (24, 32),
    "star3d_degree2.soda": (10, 12, 16),
    "star3d_degree3.soda": (12, 12, 16),
    "stencil1d_r8.json": (512,),
}

#: (arch, target) pairs code generation supports.
PAIRS = (
    ("soda", "hls"),
    ("stencilflow", "hls"),
    ("pcm", "hls"),
    ("pcm", "opencl"),
    ("stencilflow", "opencl"),
)


@dataclass(frozen=True)
class CodeRun:
    program: Program
    design: Design
    generated: Generated
    result: CsimResult
    validation: Validation


def load_example(path: Path) -> Program:
    """A program at its codegen test shape (``SHAPES``), else at ``load_small``'s."""
    program = load_small(path)
    return bind_shape(program, {}, SHAPES[path.name]) if path.name in SHAPES else program


def needs_runtime(arch: str, target: str) -> None:
    if arch == "pcm" and target == "opencl" and not pocl_available():
        pytest.skip("no OpenCL CPU runtime (PoCL): `make opencl` installs it")


def write(gen: Generated, folder: Path) -> None:
    for name, text in gen.files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_generated(
    program: Program,
    design: Design,
    target: str,
    folder: Path,
    cache: Path,
    values: dict[str, Array] | None = None,
) -> CodeRun:
    """Emit, write, run (C simulation / emulation / PoCL) and validate against the reference."""
    values = values if values is not None else inputs_for(program)
    gen = emit(target, design, program, values)
    write(gen, folder)
    write_data(folder / "data", gen.ports, values)
    shape = tuple(int(n or 0) for n in program.shape)
    if gen.runner == "pocl":
        from stencilmap.codegen.opencl_run import run_pocl

        result = run_pocl(gen, folder, folder / "data", shape)
    else:
        result = run_csim(gen, folder, folder / "data", shape, cache=cache)
    ref = run_reference(program, values)
    got = result.outputs if result.status == "done" else {k: np.zeros_like(v) for k, v in ref.outputs.items()}
    return CodeRun(program, design, gen, result, validate(result.status, got, ref.outputs, ref.defined))


def generate_and_run(
    program: Program, arch: str, target: str, config: BuildConfig, folder: Path, cache: Path
) -> CodeRun:
    program, design = built(program, arch, config)
    return run_generated(program, design, target, folder, cache)


def explain(run: CodeRun) -> str:
    v = run.validation
    return f"status {run.result.status} ({run.result.message}); first mismatch {v.first_mismatch}"
