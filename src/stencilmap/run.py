"""The ``run`` job: load a program, bind its inputs, execute it with the reference executor, save outputs."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stencilmap.backends.reference import defined_region, run_reference
from stencilmap.io import Array, check_output_dir, read_npy, write_arrays_atomically
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.ir import DataSource


@dataclass(frozen=True, slots=True)
class FieldReport:
    name: str
    role: str  # input | param | output
    shape: tuple[int, ...]
    dtype: str
    source: str
    defined: tuple[tuple[int, int], ...] | None  # outputs: bounding box of defined points
    defined_points: int


@dataclass(frozen=True, slots=True)
class RunReport:
    program: Program
    fields: tuple[FieldReport, ...]
    outputs: Mapping[str, Path]
    seconds: float


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything ``stencilmap run`` was asked to do."""

    program: Path
    inputs: Mapping[str, Path]
    seed: int = 0
    shape: tuple[int, ...] | None = None
    out_dir: Path | None = None
    data_dir: Path | None = None  # where data files a program names may be (default: its folder)


def run(config: RunConfig) -> RunReport:
    start = time.perf_counter()
    program = load_program(config.program)
    supplied = {name: read_npy(name, path) for name, path in config.inputs.items()}
    program = bind_shape(program, supplied, config.shape)
    out_dir = config.out_dir if config.out_dir is not None else Path("out") / program.name
    check_output_dir(out_dir)
    values = make_inputs(program, supplied, config.seed, config.data_dir)
    result = run_reference(program, values)
    written = write_arrays_atomically(out_dir, result.outputs)
    seconds = time.perf_counter() - start
    fields = [_input_report(program, name, arr, name in supplied) for name, arr in values.items()]
    for name, arr in result.outputs.items():
        mask = result.defined[name]
        fields.append(
            FieldReport(
                name, "output", tuple(arr.shape), str(arr.dtype), str(written[name]),
                defined_region(mask), int(np.count_nonzero(mask)),
            )
        )  # fmt: skip
    return RunReport(program, tuple(fields), written, seconds)


def _input_report(program: Program, name: str, arr: Array, supplied: bool) -> FieldReport:
    inp = program.input(name)
    role = "input" if inp is not None else "param"
    if supplied:
        source = "--input"
    elif inp is not None and inp.source is not None:
        source = describe_source(inp.source)
    else:
        source = "generated (seeded)"
    full = tuple((0, n) for n in arr.shape)
    return FieldReport(name, role, tuple(arr.shape), str(arr.dtype), source, full, int(arr.size))


def describe_source(s: DataSource) -> str:
    if s.kind == "file":
        return f"file {s.path}"
    if s.kind == "random":
        return f"random {s.low:g}..{s.high:g}"
    if s.kind == "inline":
        return f"inline ({len(s.values)} values)"
    return f"{s.kind} {s.value:g}"
