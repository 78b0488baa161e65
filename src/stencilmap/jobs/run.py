"""The ``run`` job: load a program, bind its inputs, execute it on a host backend, save outputs.

The backends (``backends.registry``): ``numpy`` (the reference, default), ``cpu`` (compiled, temporal
blocking), ``dask`` (chunks with halos, local or on a cluster; streams ``.npy`` inputs and outputs through
memory maps), ``gpu`` (CuPy).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from stencilmap.backends.reference import defined_region
from stencilmap.backends.registry import Execution, HostOptions, check_options, execute
from stencilmap.errors import StencilmapError, input_param, param
from stencilmap.io import Array, check_output_dir, read_npy, write_arrays_atomically
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, check_memory, field_shape, make_inputs, run_bytes
from stencilmap.program.ir import DataSource
from stencilmap.program.verify import verify


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
    backend: str = "numpy"
    compute_seconds: float = 0.0  # the kernel alone: no compilation, no I/O (dask: includes chunk I/O)
    compile_seconds: float | None = None  # compiled backends: build or cache load

    @property
    def gcells_per_s(self) -> float:
        """Grid points updated per second by the kernel, all iterations counted."""
        cells = int(np.prod([int(n or 0) for n in self.program.shape])) * self.program.iterate
        return cells / self.compute_seconds / 1e9 if self.compute_seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything ``stencilmap run`` was asked to do."""

    program: Path
    inputs: Mapping[str, Path]
    seed: int = 0
    shape: tuple[int, ...] | None = None
    out_dir: Path | None = None
    data_dir: Path | None = None  # where data files a program names may be (default: its folder)
    host: HostOptions = field(default_factory=HostOptions)
    iterate: int | None = None  # overrides the program's number of time steps


def run(config: RunConfig) -> RunReport:
    start = time.perf_counter()
    program = load_program(config.program)
    program = with_iterate(program, config.iterate)
    check_options(config.host, program.rank)
    if config.host.backend == "dask":
        from stencilmap.backends.distributed import lazy_inputs

        supplied = {name: lazy_inputs(name, path) for name, path in config.inputs.items()}
    else:
        supplied = {name: read_npy(name, path) for name, path in config.inputs.items()}
    program = bind_shape(program, supplied, config.shape)
    out_dir = config.out_dir if config.out_dir is not None else Path("out") / program.name
    check_output_dir(out_dir)
    if config.host.backend == "dask":
        from stencilmap.backends.distributed import run_dask_to_files

        values = dask_values(program, supplied, config.seed, config.data_dir)
        written, regions, execution = run_dask_to_files(program, values, config.host, out_dir)
    else:
        values = host_values(program, supplied, config.seed, config.data_dir)
        execution = execute(program, values, config.host)
        written = write_arrays_atomically(out_dir, execution.result.outputs)
        regions = {name: _region(mask) for name, mask in execution.result.defined.items()}
    seconds = time.perf_counter() - start
    fields = [_input_report(program, name, arr, name in supplied) for name, arr in values.items()]
    shape = tuple(int(n or 0) for n in program.shape)
    for name in program.outputs:
        dtype = program.field_dtype(name)
        region, count = regions[name]
        fields.append(
            FieldReport(
                name,
                role="output",
                shape=shape,
                dtype=dtype,
                source=str(written[name]),
                defined=region,
                defined_points=count,
            )
        )
    return _report(program, fields, written, seconds, config.host.backend, execution)


def _region(mask: npt.NDArray[np.bool_]) -> tuple[tuple[tuple[int, int], ...] | None, int]:
    """An output's defined region and point count; a wholly defined output (the usual case) is answered by
    one pass over its mask instead of one per axis."""
    if mask.size and mask.all():
        return tuple((0, n) for n in mask.shape), mask.size
    return defined_region(mask), int(np.count_nonzero(mask))


def _report(
    program: Program,
    fields: list[FieldReport],
    written: Mapping[str, Path],
    seconds: float,
    backend: str,
    execution: Execution,
) -> RunReport:
    return RunReport(
        program,
        fields=tuple(fields),
        outputs=written,
        seconds=seconds,
        backend=backend,
        compute_seconds=execution.compute_seconds,
        compile_seconds=execution.compile_seconds,
    )


def with_iterate(program: Program, iterate: int | None) -> Program:
    """The program with its number of time steps overridden (``--iterate``), checked like the program's."""
    if iterate is None:
        return program
    if iterate < 1:
        raise StencilmapError(f"{param('iterate')} must be ≥ 1, got {iterate}")
    changed = replace(program, iterate=iterate)
    verify(changed)
    return changed


def host_values(
    program: Program, supplied: Mapping[str, Array], seed: int, data_dir: Path | None = None
) -> dict[str, Array]:
    """``make_inputs``, without its copy of the arrays read from ``--input`` files that already are C-order
    arrays of the declared dtype and shape (this job owns them: nothing else holds them; a 4096² float
    input's copy was 0.16 s of a run). The others, converted or refused, go through ``make_inputs`` as
    before; the memory check counts the whole program."""
    ready = {
        name: arr
        for name, arr in supplied.items()
        if (inp := program.input(name)) is not None
        and arr.flags.c_contiguous
        and str(arr.dtype) == inp.dtype
        and tuple(arr.shape) == field_shape(program, inp)
    }
    if not ready:
        return make_inputs(program, supplied, seed, data_dir)
    check_memory(run_bytes(program), f"shape {list(program.shape)}")
    rest = replace(program, inputs=tuple(i for i in program.inputs if i.name not in ready))
    others = make_inputs(rest, {n: a for n, a in supplied.items() if n not in ready}, seed, data_dir)
    return {
        **{i.name: (ready[i.name] if i.name in ready else others[i.name]) for i in program.inputs},
        **{p.name: others[p.name] for p in program.params},
    }


def dask_values(
    program: Program, supplied: Mapping[str, Array], seed: int, data_dir: Path | None = None
) -> dict[str, Array]:
    """Inputs for the dask backend: supplied arrays stay memory-mapped; the others are generated."""
    for name, arr in supplied.items():
        inp = program.input(name)
        want = (
            tuple(int(program.shape[a] or 0) for a in inp.axes)
            if inp is not None
            else next((p.shape for p in program.params if p.name == name), None)
        )
        dtype = (
            inp.dtype if inp is not None else next((p.dtype for p in program.params if p.name == name), None)
        )
        if want is None:
            raise StencilmapError(f"{input_param(name)}: the program has no input named '{name}'")
        if tuple(arr.shape) != tuple(want) or str(arr.dtype) != dtype:
            raise StencilmapError(
                f"has shape {list(arr.shape)} and dtype {arr.dtype}, expected {list(want)} {dtype}",
                f"--input {name}",
            )
    rest = replace(
        program,
        inputs=tuple(i for i in program.inputs if i.name not in supplied),
        params=tuple(p for p in program.params if p.name not in supplied),
    )
    generated = make_inputs(rest, {}, seed, data_dir)
    return {
        **{i.name: (supplied[i.name] if i.name in supplied else generated[i.name]) for i in program.inputs},
        **{p.name: (supplied[p.name] if p.name in supplied else generated[p.name]) for p in program.params},
    }


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
    return FieldReport(
        name,
        role=role,
        shape=tuple(arr.shape),
        dtype=str(arr.dtype),
        source=source,
        defined=full,
        defined_points=int(arr.size),
    )


def describe_source(s: DataSource) -> str:
    if s.kind == "file":
        return f"file {s.path}"
    if s.kind == "random":
        return f"random {s.low:g}..{s.high:g}"
    if s.kind == "inline":
        return f"inline ({len(s.values)} values)"
    return f"{s.kind} {s.value:g}"
