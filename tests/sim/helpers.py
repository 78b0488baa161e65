"""Building, simulating and validating designs for the simulator tests."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from pathlib import Path

import numpy as np

from stencilmap.backends.reference import run_reference
from stencilmap.design.common import or_hint, with_iterate
from stencilmap.design.ir import Design, Module
from stencilmap.design.registry import BuildConfig, build
from stencilmap.io import Array
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, field_shape, make_inputs
from stencilmap.program.ir import Program
from stencilmap.program.soda import parse_soda
from stencilmap.sim import SimConfig, SimResult, simulate
from stencilmap.sim.validate import Validation, validate
from tests.conftest import UNPUBLISHED_DATA

#: Corpus programs too big for a fast test, bound to a smaller shape (same rank).
SMALL_SHAPES: dict[str, tuple[int, ...]] = {
    "blur.soda": (64, 64),
    "contrast.soda": (64, 64),
    "erosion.soda": (64, 64),
    "xcorr.soda": (64, 64),
    "denoise3d.soda": (16, 16, 16),
    "delay_buffer_e0.json": (4, 32, 32),
    "jacobi3d_32x32x32_8itr.json": (16, 16, 16),
    "jacobi3d_32x32x32_8itr_4vec.json": (16, 16, 16),
    "jacobi3d_32x32x32_8itr_8vec.json": (16, 16, 16),
    "solver_example.json": (1, 64, 64),
    "tridiagonal_solve.json": (32, 1, 32),
    "heat3d.json": (16, 32, 32),
    "fdtd2d_iterate.json": (16, 48),
}


@dataclass(frozen=True)
class Run:
    """A simulated design with its program, inputs, result and validation."""

    program: Program
    design: Design
    values: dict[str, Array]
    result: SimResult
    validation: Validation


def load_small(path: Path) -> Program:
    """A corpus program or example bound to its own shape, or to a small one from ``SMALL_SHAPES``."""
    return bind_shape(load_program(path), {}, SMALL_SHAPES.get(path.name))


def soda(text: str, shape: tuple[int, ...]) -> Program:
    return bind_shape(parse_soda(text), {}, shape)


def inputs_for(program: Program, seed: int = 0) -> dict[str, Array]:
    """Input values; programs whose data files were never published get seeded arrays of the right
    shape and dtype instead (their own sources cannot be read)."""
    supplied: dict[str, Array] = {}
    if Path(program.path or "").name in UNPUBLISHED_DATA:
        rng = np.random.default_rng(seed)
        for inp in program.inputs:
            supplied[inp.name] = np.asarray(rng.random(field_shape(program, inp)), dtype=inp.dtype)
    return make_inputs(program, supplied, seed)


DEFAULT_BUILD = BuildConfig()
DEFAULT_SIM = SimConfig()


def built(program: Program, arch: str, config: BuildConfig = DEFAULT_BUILD) -> tuple[Program, Design]:
    """The program chained ``config.iterate`` times (or its own), and its design."""
    program = with_iterate(program, or_hint(config.iterate, program.iterate))
    return program, build(arch, program, config)


def run_design(program: Program, design: Design, sim: SimConfig = DEFAULT_SIM) -> Run:
    """Simulate a design on seeded inputs and validate it against the reference."""
    values = inputs_for(program)
    result = simulate(program, design, values, sim)
    ref = run_reference(program, values)
    return Run(
        program, design, values, result, validate(result.status, result.outputs, ref.outputs, ref.defined)
    )


def simulated(
    program: Program, arch: str, config: BuildConfig = DEFAULT_BUILD, sim: SimConfig = DEFAULT_SIM
) -> Run:
    """Build, simulate and validate."""
    return run_design(*built(program, arch, config), sim)


def lanes_config(arch: str, lanes: int, **extra: object) -> BuildConfig:
    """k PEs (SODA, PCM) or vector width W (StencilFlow)."""
    if arch == "stencilflow":
        return BuildConfig(vector=lanes, **extra)  # type: ignore[arg-type]
    return BuildConfig(unroll=lanes, **extra)  # type: ignore[arg-type]


def int_param(m: Module, key: str, default: int) -> int:
    """An integer module parameter (``default`` when absent)."""
    value = m.param(key, default)
    assert isinstance(value, int), (m.name, key, value)
    return value


def points(program: Program) -> int:
    return prod(int(n or 0) for n in program.shape)


def explain(run: Run) -> str:
    """What went wrong, for an assertion message."""
    r, v = run.result, run.validation
    text = f"status {r.status} after {r.cycles} cycles; first mismatch {v.first_mismatch}"
    if r.deadlock is not None:
        text += f"; waiting {[(w.module, w.channel) for w in r.deadlock.waiting][:6]}"
    return text
