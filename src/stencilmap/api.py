"""The Python API: ``import stencilmap as sm``.

    >>> import stencilmap as sm
    >>> prog = sm.load("examples/jacobi2d.soda", shape=(64, 64))
    >>> design = sm.build(prog, "soda", unroll=2)
    >>> sim = sm.simulate(prog, design, device="ku060")
    >>> sim.valid, sim.cycles, sim.predicted_cycles  # doctest: +SKIP
    (True, 2118, 2118)

Every function takes objects and arrays (a Program, a Design, NumPy arrays, a device name), never paths
of inputs or command-line options, and raises ``stencilmap.Error`` (one line saying what is wrong, naming
the function's parameters, never a CLI option: the stages name parameters with ``errors.param``, which
says ``unroll`` here and ``--unroll`` on the command line) on bad input. The command line is a layer over these
functions. Heavy imports happen inside the calls, so ``import stencilmap`` stays instant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from stencilmap.errors import StencilmapError, api_naming

if TYPE_CHECKING:
    import numpy.typing as npt

    from stencilmap.backends.reference import Result
    from stencilmap.design.ir import Design
    from stencilmap.device.catalog import Device
    from stencilmap.explore.report import ExploreResult
    from stencilmap.jobs.calibrate import CalibrationReport
    from stencilmap.jobs.codegen import CodegenReport
    from stencilmap.jobs.compile import CompileReport
    from stencilmap.jobs.simulate import Simulation
    from stencilmap.model.partition import Partitioned
    from stencilmap.model.report import EstimateReport
    from stencilmap.program.ir import Program

    Array = npt.NDArray[Any]

__all__ = [
    "Simulation",
    "build",
    "calibrate",
    "codegen",
    "compile",
    "estimate",
    "explore",
    "load",
    "run",
    "simulate",
    "split",
]


def __getattr__(name: str) -> Any:
    """``Simulation`` (the result of ``simulate``), imported on first use with the simulate job."""
    if name == "Simulation":
        from stencilmap.jobs.simulate import Simulation

        return Simulation
    raise AttributeError(f"module 'stencilmap.api' has no attribute '{name}'")


# --------------------------------------------------------------------------------------- errors


@contextmanager
def _api_errors() -> Iterator[None]:
    """Run a stage naming its parameters as this API does (``errors.api_naming``: ``unroll``, not the
    command line's ``--unroll``) in the errors it raises."""
    with api_naming():
        yield


# -------------------------------------------------------------------------------------- programs


def load(
    source: str | Path | Callable[..., Any] | Sequence[Callable[..., Any]],
    shape: tuple[int, ...] | None = None,
) -> Program:
    """A verified Program from a ``.soda`` / ``.json`` / ``.py`` file, from program text (SODA, or StencilFlow
    JSON when it starts with ``{``), or from Python stencil functions (one or a list, read from their source,
    never called); bound to ``shape`` (C order) when given."""
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape
    from stencilmap.program.python import parse_functions
    from stencilmap.program.soda import parse_soda
    from stencilmap.program.stencilflow import parse_stencilflow
    from stencilmap.program.verify import verify

    with _api_errors():
        if not isinstance(source, str | Path):
            program = parse_functions(source, shape)
            verify(program)
        elif isinstance(source, Path) or ("\n" not in source and source.endswith((".soda", ".json", ".py"))):
            program = load_program(source)
        else:
            text = source.lstrip()
            program = parse_stencilflow(text) if text.startswith("{") else parse_soda(text)
            verify(program)
        return bind_shape(program, {}, shape) if shape is not None else program


def _program(program: str | Path | Program) -> Program:
    from stencilmap.program.ir import Program as ProgramIR
    from stencilmap.program.verify import verify

    if isinstance(program, ProgramIR):
        with _api_errors():
            verify(program)
        return program
    return load(program)


def _arrays(inputs: Mapping[str, Any] | None) -> dict[str, Array]:
    import numpy as np

    return {str(k): np.asarray(v) for k, v in (inputs or {}).items()}


def run(
    program: str | Path | Program,
    inputs: Mapping[str, Any] | None = None,
    *,
    backend: str = "numpy",
    iterate: int | None = None,
    threads: int | None = None,
    shape: tuple[int, ...] | None = None,
    seed: int = 0,
    chunks: tuple[int, ...] | None = None,
    scheduler: str | None = None,
) -> Result:
    """Run a program on a host backend (``numpy``: the reference; ``cpu``, ``dask``, ``gpu``).

    ``inputs`` maps input (and param) names to arrays in C order; the others are generated from ``seed``
    as ``stencilmap run`` does. Returns the outputs (undefined points NaN or 0) and their definedness masks.

    >>> import stencilmap as sm
    >>> res = sm.run("examples/jacobi2d.soda", backend="cpu", iterate=10)  # doctest: +SKIP
    >>> res.outputs["w"].shape  # doctest: +SKIP
    (64, 64)
    """
    from stencilmap.backends.registry import HostOptions, execute
    from stencilmap.jobs.run import with_iterate
    from stencilmap.program.data import bind_shape, make_inputs

    prog = _program(program)
    supplied = _arrays(inputs)
    with _api_errors():
        prog = bind_shape(with_iterate(prog, iterate), supplied, shape)
        values = make_inputs(prog, supplied, seed)
        return execute(prog, values, HostOptions(backend, threads, chunks, scheduler)).result


# --------------------------------------------------------------------------------------- designs


def build(
    program: str | Path | Program,
    arch: str | None = None,
    *,
    unroll: int | None = None,
    iterate: int | None = None,
    vector: int | None = None,
    tile: tuple[int, ...] | None = None,
    device: str | None = None,
    delay_buffers: Literal["computed", "min"] = "computed",
    devices: int | None = None,
    partition: Sequence[Sequence[str]] | None = None,
) -> Design:
    """Build the design of ``arch`` (``soda``, ``stencilflow``, ``pcm``, ``emax``, ...; default: the
    program's own format) for the program bound to its shape (``load(..., shape=...)``) and chained
    ``iterate`` times. ``unroll``: k / P_cell / p; ``vector``: W; ``tile``: SODA tile sizes of the inner
    axes. ``devices`` / ``partition``: a StencilFlow design split over that many ``device`` boards
    (fewest streams cut) or as the lists of stencil nodes say (see ``split``). The design remembers its
    program (``design.program``) for ``simulate`` and ``codegen``."""
    if devices is not None or partition is not None:
        return split(
            program,
            device or "",
            devices=devices,
            partition=partition,
            iterate=iterate,
            vector=vector,
            delay_buffers=delay_buffers,
        ).design
    from stencilmap.arch import arch as arch_of
    from stencilmap.arch import default_arch
    from stencilmap.design.common import check_parameters, or_hint, with_iterate
    from stencilmap.point import DesignPoint
    from stencilmap.program.data import bind_shape

    prog = _program(program)
    with _api_errors():
        check_parameters(unroll, iterate, vector)
        prog = bind_shape(prog, {}, None)
        prog = with_iterate(prog, or_hint(iterate, prog.iterate))
        point = DesignPoint(
            unroll=unroll,
            iterate=iterate,
            vector=vector,
            delay_buffers=delay_buffers,
            device=device,
            tile=tile,
        )
        chosen = arch_of(arch or default_arch(prog))
        chosen.check(point)  # the options its builder would ignore are refused, as on the command line
        design = chosen.build(prog, point)
    return replace(design, program=prog)


def split(
    program: str | Path | Program,
    device: str,
    *,
    devices: int | None = None,
    partition: Sequence[Sequence[str]] | None = None,
    iterate: int | None = None,
    vector: int | None = None,
    delay_buffers: Literal["computed", "min"] = "computed",
) -> Partitioned:
    """The StencilFlow design of ``program`` split over ``devices`` boards of ``device`` cutting the
    fewest streams under each board's resources, or over the given ``partition`` (one list of stencil
    nodes per device, ``name@copy`` when chained): ``.design`` (simulate it like any design) and
    ``.partition`` (per device its stencils and resources, the network channels; ``.to_json()``)."""
    from stencilmap.design.common import check_parameters, or_hint, with_iterate
    from stencilmap.jobs.partition import PartitionRequest, partitioned
    from stencilmap.point import DesignPoint
    from stencilmap.program.data import bind_shape

    prog = _program(program)
    with _api_errors():
        check_parameters(None, iterate, vector)
        prog = with_iterate(bind_shape(prog, {}, None), or_hint(iterate, prog.iterate))
        parts = None if partition is None else tuple(tuple(str(n) for n in p) for p in partition)
        dev = _device(device) if device else None
        config = DesignPoint(iterate=iterate, vector=vector, delay_buffers=delay_buffers)
        result = partitioned(
            prog, config=config, arch="stencilflow", device=dev, request=PartitionRequest(devices, parts)
        )
    return replace(result, design=replace(result.design, program=prog))


# ------------------------------------------------------------------------------------ simulation


def simulate(
    program: str | Path | Program,
    design: Design | None = None,
    inputs: Mapping[str, Any] | None = None,
    device: str | Device | None = None,
    *,
    seed: int = 0,
    max_cycles: int | None = None,
    trace_cycles: int = 0,
    progress: Callable[[int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> Simulation:
    """Simulate ``design`` (default: ``build(program)``) cycle by cycle on ``inputs`` (the others
    generated from ``seed``), memory limited to ``device``'s bandwidth when one is named, and validate
    the outputs against the reference. ``trace_cycles``: record module activity and channel occupancy
    of the first cycles (``.result.trace``); ``progress(cycle, expected)`` between chunks of cycles;
    ``notify(line)`` before anything is compiled."""
    from stencilmap.arch import arch
    from stencilmap.jobs.simulate import simulate_dataflow
    from stencilmap.program.data import make_inputs

    supplied = _arrays(inputs)
    if design is None:
        design = build(_bind(program, supplied))
    prog = design.program if design.program is not None else _bind(program, supplied)
    dev = _device(device)
    with _api_errors():
        simulator = arch(design.arch).simulator
    if simulator != "dataflow":
        raise StencilmapError(
            f"sm.simulate runs dataflow designs (soda, stencilflow, pcm); {design.arch} mappings run on their own "
            f"simulator (stencilmap.sim.{design.arch}.simulate_{design.arch})"
        )
    with _api_errors():
        values = make_inputs(prog, supplied, seed)
        return simulate_dataflow(
            prog,
            design,
            values,
            dev,
            max_cycles=max_cycles,
            trace_cycles=trace_cycles,
            progress=progress,
            notify=notify,
        )


def _bind(program: str | Path | Program, supplied: Mapping[str, Array]) -> Program:
    from stencilmap.program.data import bind_shape

    with _api_errors():
        return bind_shape(_program(program), supplied, None)


def _device(device: str | Device | None) -> Device | None:
    from stencilmap.device.catalog import load_device

    if device is None or not isinstance(device, str):
        return device
    with _api_errors():
        return load_device(device)


# ------------------------------------------------------------------------- models and exploration


def estimate(
    program: str | Path | Program,
    device: str,
    arch: str | None = None,
    *,
    unroll: int | None = None,
    iterate: int | None = None,
    vector: int | None = None,
    tile: tuple[int, ...] | None = None,
    iterations: int | None = None,
    clock_mhz: float | None = None,
    devices: int | None = None,
    partition: Sequence[Sequence[str]] | None = None,
) -> EstimateReport:
    """Predicted time, bandwidth scenario and resources of one configuration on ``device``, for all
    ``iterations`` time steps (default: the program's ``iterate``); ``devices`` / ``partition``: a
    StencilFlow design split over several boards (see ``split``; ``.partition`` of the report)."""
    from stencilmap.jobs.estimate import EstimateConfig
    from stencilmap.jobs.estimate import estimate as estimate_job
    from stencilmap.point import DesignPoint

    prog = _program(program)
    parts = None if partition is None else tuple(tuple(str(n) for n in p) for p in partition)
    point = DesignPoint(
        arch=arch,
        unroll=unroll,
        iterate=iterate,
        vector=vector,
        tile=tile,
        device=device,
        devices=devices,
        partition=parts,
    )
    config = EstimateConfig(program=prog, point=point, iterations=iterations, clock_mhz=clock_mhz)
    with _api_errors():
        return estimate_job(config)


def explore(
    program: str | Path | Program,
    device: str,
    *,
    archs: tuple[str, ...] | None = None,
    iterations: int | None = None,
    clock_mhz: float | None = None,
    top: int = 10,
    simulate: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> ExploreResult:
    """Search unroll, iterate, tiles and W of the FPGA builders under ``device``'s resources; the best
    candidates come sorted by predicted time (``.best``), the winner simulated unless ``simulate`` is off."""
    from stencilmap.explore.search import explore as explore_job
    from stencilmap.explore.space import ExploreConfig

    prog = _program(program)
    config = ExploreConfig(  # shape: the program's (bind it with load(..., shape=...))
        program=prog,
        device=device,
        archs=archs,
        iterations=iterations,
        clock_mhz=clock_mhz,
        top=top,
        simulate=simulate,
    )
    with _api_errors():
        return explore_job(config, progress, notify)


def calibrate(
    program: str | Path | Program,
    device: str,
    arch: Literal["pcm", "soda"],
    reports: str | Path,
    *,
    out: str | Path | None = None,
    holdout: int = 0,
    check: str | Path | None = None,
    leave_one_out: bool = False,
) -> CalibrationReport:
    """Fit ``device``'s resource model to synthesized ``arch`` designs of ``program`` (``reports``: a CSV
    of ``unroll,iterate,<resource>...`` rows, OpenCL §4.2 phase 1 / SODA §4.3); write the fitted device
    file to ``out`` when given (usable as ``device=str(out)``). ``holdout``: the last rows are predicted,
    not fitted; ``check``: a CSV of more rows to predict; ``leave_one_out``: refit without each fitted row in
    turn and predict it (``.left_out``). ``.resources`` says how good the fit is."""
    from stencilmap.jobs.calibrate import CalibrateConfig
    from stencilmap.jobs.calibrate import calibrate as calibrate_job

    prog = _program(program)
    config = CalibrateConfig(
        program=prog,
        device=device,
        arch=arch,
        reports=Path(reports),
        out=None if out is None else Path(out),
        holdout=holdout,
        check=None if check is None else Path(check),
        leave_one_out=leave_one_out,
    )
    with _api_errors():
        return calibrate_job(config)


# ---------------------------------------------------------------------------------- generated code


def codegen(
    design: Design,
    target: str,
    out_dir: str | Path,
    *,
    program: Program | None = None,
    inputs: Mapping[str, Any] | None = None,
    seed: int = 0,
    verify: bool = False,
    hls_include: str | Path | None = None,
) -> CodegenReport:
    """Write ``target``'s code (``hls``, ``opencl``, ``emax``, ``cgra``, ``dot``, ``c-openmp``, ``cuda``:
    ``codegen.registry``) for ``design`` into ``out_dir`` (all files or none), with the input data its
    host reads; ``verify`` runs it here (C simulation, PoCL, the channel emulation, the EMAX or CGRA
    simulator, the cpu backend, CuPy) and compares it with the reference (``report.not_run`` says why
    nothing ran: a drawing, no GPU). ``c-openmp`` and ``cuda`` generate from the program alone. ``program``: the design's (``build`` remembers it).
    A StencilFlow design split over devices (``build(..., devices=N)``) takes ``opencl``: a folder per
    device joined by SMI channels, verified in one emulation of all devices."""
    from stencilmap.jobs.codegen import write_code

    prog = program if program is not None else design.program
    if prog is None:
        raise StencilmapError("the design does not know its program: pass program=")
    with _api_errors():
        return write_code(
            prog,
            design,
            target,
            Path(out_dir),
            _arrays(inputs),
            seed=seed,
            verify=verify,
            hls_include=Path(hls_include) if hls_include is not None else None,
        )


def compile(
    program: str | Path | Program,
    device: str,
    out_dir: str | Path,
    *,
    arch: str | None = None,
    iterations: int | None = None,
    shape: tuple[int, ...] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> CompileReport:
    """The main job end to end: analyze, explore the best design under ``device``'s resources, build
    it, generate its code for the device's vendor flow, verify the code in C simulation, simulate the
    design cycle by cycle (on a scaled-down grid when the real one is large), and write everything —
    code, ``design.json``, DOT/SVG, plots, ``report.md``, ``report.html`` — into ``out_dir``."""
    from stencilmap.jobs.compile import CompileConfig
    from stencilmap.jobs.compile import compile_program as compile_job

    path = Path(program) if isinstance(program, str | Path) and "\n" not in str(program) else None
    source = path if path is not None and path.is_file() else _program(program)
    from stencilmap.point import DesignPoint

    point = DesignPoint(arch=arch, device=device)
    config = CompileConfig(
        program=source, point=point, out_dir=Path(out_dir), iterations=iterations, shape=shape
    )
    with _api_errors():
        return compile_job(config, progress, notify)
