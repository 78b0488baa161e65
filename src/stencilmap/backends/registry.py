"""Host backends by name, behind one small interface; each backend module is imported only when used.

``numpy`` is the reference (the oracle, the default); ``cpu`` generated C + OpenMP with temporal blocking;
``dask`` the same compiled kernel applied chunk by chunk with ``map_overlap`` (local or a cluster);
``gpu`` generated CUDA through CuPy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from stencilmap.errors import StencilmapError, param
from stencilmap.program.ir import Program

from .reference import Result, run_reference

Array = npt.NDArray[Any]

BACKENDS = ("numpy", "cpu", "dask", "gpu")


@dataclass(frozen=True, slots=True)
class HostOptions:
    """How to execute: the backend and its knobs (``threads`` and ``block`` are ignored by backends they do
    not concern; dask's ``chunks`` and ``scheduler`` are refused for the others: ``check_options``)."""

    backend: str = "numpy"
    threads: int | None = None  # cpu, dask workers' kernels
    chunks: tuple[int, ...] | None = None  # dask
    scheduler: str | None = None  # dask: address of a distributed scheduler
    block: int | None = None  # cpu/dask: time steps fused per tile (per exchange for dask)
    scheduler_file: str | None = None  # dask: a scheduler file (``dask scheduler --scheduler-file``)
    #: numpy: ``progress(done, total)`` after each stencil of each time step (the CLI's progress bar)
    progress: Callable[[int, int], None] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Execution:
    """A run's result and where its time went; ``compile_seconds`` is None for the reference."""

    result: Result
    compute_seconds: float
    compile_seconds: float | None = None
    compiled: bool = False  # True: code was built now (not found in the cache)


def check_options(options: HostOptions, rank: int) -> None:
    """Reject bad options before anything runs (one-line errors, exit status 2 from the CLI)."""
    if options.backend not in BACKENDS:
        raise StencilmapError(f"unknown backend '{options.backend}' (choose from {', '.join(BACKENDS)})")
    if options.threads is not None and not 1 <= options.threads <= 4096:
        raise StencilmapError(f"{param('threads')} must be between 1 and 4096, got {options.threads}")
    if options.chunks is not None:
        if len(options.chunks) != rank:
            raise StencilmapError(
                f"{param('chunks')} has {len(options.chunks)} sizes, the program has {rank} dimensions"
            )
        if any(c < 1 for c in options.chunks):
            raise StencilmapError(f"{param('chunks')} sizes must be positive, got {list(options.chunks)}")
    if options.block is not None and options.block < 1:
        raise StencilmapError(f"block must be ≥ 1 step, got {options.block}")
    if options.scheduler_file is not None:
        if options.backend != "dask":
            raise StencilmapError(f"{param('scheduler_file')} applies to {param('backend')} dask only")
        if options.scheduler is not None:
            raise StencilmapError(f"give {param('scheduler')} or {param('scheduler_file')}, not both")
        from .distributed import scheduler_address

        scheduler_address(options.scheduler_file)  # readable, and names an address
    for knob, value in (("chunks", options.chunks), ("scheduler", options.scheduler)):
        if value is not None and options.backend != "dask":  # the user meant a dask run: say it is not one
            raise StencilmapError(f"{param(knob)} applies to {param('backend')} dask only")


def _numpy(program: Program, inputs: Mapping[str, Array], options: HostOptions) -> Execution:
    start = time.perf_counter()
    result = run_reference(program, inputs, options.progress)
    return Execution(result, time.perf_counter() - start)


def _cpu(program: Program, inputs: Mapping[str, Array], options: HostOptions) -> Execution:
    from .cpu import run_cpu

    result, timing = run_cpu(program, inputs, threads=options.threads, block=options.block)
    return Execution(result, timing.compute_seconds, timing.compile_seconds, timing.compiled)


def _dask(program: Program, inputs: Mapping[str, Array], options: HostOptions) -> Execution:
    from .distributed import run_dask

    return run_dask(program, inputs, options)


def _gpu(program: Program, inputs: Mapping[str, Array], options: HostOptions) -> Execution:
    from .gpu import run_gpu

    return run_gpu(program, inputs)


_RUNNERS: dict[str, Callable[[Program, Mapping[str, Array], HostOptions], Execution]] = {
    "numpy": _numpy,
    "cpu": _cpu,
    "dask": _dask,
    "gpu": _gpu,
}


def execute(program: Program, inputs: Mapping[str, Array], options: HostOptions) -> Execution:
    """Run a shape-bound program on the chosen backend."""
    check_options(options, program.rank)
    return _RUNNERS[options.backend](program, inputs, options)
