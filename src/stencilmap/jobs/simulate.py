"""The ``simulate`` job: build a design of a program, execute it cycle by cycle, validate it against the
reference executor, and report cycles, stalls, channel peaks, off-chip traffic and bandwidth.

Steps (one call each in ``simulate``): bind the program and its inputs → build the design → simulate it
(with the device's bandwidth per bank, if one is named) → run the reference → validate → write the
outputs and the trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from math import ceil, prod
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from stencilmap.analysis import ProgramAnalysis, analyze_program
from stencilmap.arch import arch as arch_of
from stencilmap.arch import default_arch
from stencilmap.backends.reference import run_reference, undefined_value
from stencilmap.design.common import check_parameters, memory_bank, or_hint, with_iterate
from stencilmap.design.ir import Design, Module
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.io import Array, OutputSet, check_output_dir, check_output_file, read_npy
from stencilmap.jobs.partition import PartitionRequest, partitioned
from stencilmap.model.timing import memory_rate, pins_banks, predicted_cycles
from stencilmap.point import DesignPoint
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, check_memory, field_shape, make_inputs
from stencilmap.sim import SimResult
from stencilmap.sim.trace import Trace, trace_format, trace_text
from stencilmap.sim.validate import Validation, validate
from stencilmap.transform.fusion import fuse_if

if TYPE_CHECKING:
    from stencilmap.arch.simulate import CgraSimulation, EmaxSimulation
    from stencilmap.backends.reference import Result
    from stencilmap.design.cgra.mapping import CgraMapping
    from stencilmap.design.emax import EmaxMapping
    from stencilmap.model.partition import Partition

#: ``progress(cycle, total)``: called between chunks of simulated cycles; ``total`` is an estimate.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulateConfig:
    """Everything ``stencilmap simulate`` was asked to do (None: the program's own hint)."""

    program: Path
    point: DesignPoint = field(default_factory=DesignPoint)
    inputs: Mapping[str, Path] = field(default_factory=dict)
    seed: int = 0
    shape: tuple[int, ...] | None = None
    out_dir: Path | None = None
    trace: Path | None = None
    trace_cycles: int = 10_000
    max_cycles: int | None = None
    data_dir: Path | None = None  # where data files a program names may be (default: its folder)
    from_asm: Path | None = None  # run this mapping text (CGRA assembly, EMAX mnemonics) (_FROM_ASM)


@dataclass(frozen=True, slots=True)
class PortTraffic:
    """Off-chip traffic of one memory port: the field, its direction and bank, bytes moved, and the bytes
    per cycle it needs to stream one beat per cycle."""

    field: str
    direction: Literal["read", "write"]
    bank: int
    bytes: float
    required_bytes_per_cycle: float


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """Achieved versus available off-chip bandwidth (OpenCL paper eqs. 2, 3 and 6).

    ``bytes_per_cycle_per_bank`` is None without a device: memory is then unlimited. ``interleaved``: how
    many physical banks stand behind one bank number (all of them on a device that interleaves a program
    pinning no bank, else 1).
    """

    ports: tuple[PortTraffic, ...]
    cycles: int
    bytes_per_cycle_per_bank: float | None
    clock_mhz: float | None
    interleaved: int = 1

    @property
    def banks(self) -> tuple[int, ...]:
        """The DRAM banks the design's memory ports use."""
        return tuple(sorted({p.bank for p in self.ports}))

    @property
    def total_bytes(self) -> float:
        return sum(p.bytes for p in self.ports)

    @property
    def achieved_bytes_per_cycle(self) -> float:
        return self.total_bytes / max(1, self.cycles)

    @property
    def required_bytes_per_cycle(self) -> float:
        """B_req (OpenCL eq. 2): what every port together moves per cycle at one beat per cycle."""
        return sum(p.required_bytes_per_cycle for p in self.ports)

    @property
    def available_bytes_per_cycle(self) -> float | None:
        """B_prac of the banks used (OpenCL eq. 3): banks × bytes per cycle per bank."""
        if self.bytes_per_cycle_per_bank is None:
            return None
        return len(self.banks) * self.bytes_per_cycle_per_bank

    @property
    def banks_label(self) -> str:
        """The banks behind ``available_bytes_per_cycle``, in words."""
        if self.interleaved > 1:
            return f"{self.interleaved} banks interleaved"
        return f"{len(self.banks)} bank(s)"

    def bank_required(self, bank: int) -> float:
        return sum(p.required_bytes_per_cycle for p in self.ports if p.bank == bank)

    @property
    def slowdown(self) -> float:
        """B_req / B_prac of the busiest bank, at least 1 (OpenCL eq. 6: scenario 2 runs this much slower)."""
        if self.bytes_per_cycle_per_bank is None or not self.ports:
            return 1.0
        worst = max(self.bank_required(b) for b in self.banks)
        return max(1.0, worst / self.bytes_per_cycle_per_bank)

    def gbs(self, bytes_per_cycle: float | None) -> float | None:
        """Bytes per cycle as GB/s at the clock (None without a clock)."""
        if bytes_per_cycle is None or self.clock_mhz is None:
            return None
        return bytes_per_cycle * self.clock_mhz * 1e6 / 1e9


@dataclass(frozen=True, slots=True)
class SimulateReport:
    """A simulation with its validation, the analytical prediction, traffic, and the files written."""

    program: Program
    arch: str
    design: Design
    device: Device | None
    result: SimResult
    validation: Validation
    facts: ProgramAnalysis
    bandwidth: Bandwidth
    outputs: Mapping[str, Path]
    trace: Path | None
    seconds: float
    emax: EmaxSimulation | None = None  # --arch emax: the EMAX simulation (LMM streams, five-state timeline)
    predicted_cycles: int = 0  # the model's cycles for this design on this memory (``predict``)
    fused: tuple[tuple[str, str], ...] = ()  # --fuse: (producer, consumer) pairs fused (transform.fusion)
    cgra: CgraSimulation | None = None  # --arch cgra: the CGRA simulation (GFLOPS, % of the roofline)
    partition: Partition | None = None  # --devices / --partition: the split over devices

    @property
    def valid(self) -> bool:
        return self.validation.valid


def simulate(
    config: SimulateConfig, progress: Progress | None = None, notify: Callable[[str], None] | None = None
) -> SimulateReport:
    """Run the whole job; see the module docstring. ``notify(line)``: said before anything compiles."""
    start = time.perf_counter()
    if config.max_cycles is not None and config.max_cycles < 1:
        raise StencilmapError(f"--max-cycles must be ≥ 1, got {config.max_cycles}")
    if config.trace is not None:
        trace_format(config.trace)  # a bad suffix is a usage error: say so before simulating
        check_output_file(config.trace, "--trace")
    device = load_device(config.point.device) if config.point.device is not None else None
    program, values = bind(config)
    fusion = fuse_if(program, config.point.fuse, config.point.arch or default_arch(program))
    program = fusion.program
    out_dir = config.out_dir if config.out_dir is not None else default_out_dir(program)
    check_output_dir(out_dir)
    arch = config.point.arch or default_arch(program)
    a = arch_of(arch)
    a.check(config.point)
    if config.from_asm is not None and arch not in _FROM_ASM:
        raise StencilmapError(
            f"{param('from_asm')} reads back the mapping text of {param('arch')} "
            f"{' or '.join(sorted(_FROM_ASM))}; {param('arch')} {arch} has none to read"
        )
    request = PartitionRequest(config.point.devices, config.point.partition)
    split = (
        partitioned(program, config=config.point, arch=arch, device=device, request=request)
        if request.wanted
        else None
    )
    design = a.build(program, config.point) if split is None else split.design
    check_simulation_size(design, config.trace_cycles if config.trace is not None else 0)
    facts = prediction(program, design)
    emax_run = cgra_run = None
    own = _OWN_SIMULATORS.get(a.simulator or "")
    if own is not None:  # EMAX and CGRA mappings: their own simulators
        from stencilmap.arch.simulate import CgraSimulation, EmaxSimulation

        result, run, device = own(config, program, values, design)
        design = result.design  # --from-asm: the design of the text run
        emax_run = run if isinstance(run, EmaxSimulation) else None
        cgra_run = run if isinstance(run, CgraSimulation) else None
        reference = run_reference(program, values)
        validation = validate(result.status, result.outputs, reference.outputs, reference.defined)
        outputs: Mapping[str, Array] = masked_outputs(result, reference.defined)
    else:  # what the Python API's simulate runs: the command is a layer over it
        trace_cycles = config.trace_cycles if config.trace is not None else 0
        sim = simulate_dataflow(
            program,
            replace(design, program=program),
            values,
            device,
            max_cycles=config.max_cycles,
            trace_cycles=trace_cycles,
            progress=_scaled(progress, facts),
            notify=notify,
        )
        result, validation, outputs = sim.result, sim.validation, sim.outputs
    if result.status != "done":
        outputs = {}  # issue 19 §9: a deadlocked or cut-short run has no outputs to publish
    with OutputSet() as files:
        written = files.add_arrays(out_dir, outputs)
        trace = _stage_trace(files, config, design, result)
        files.publish()
    bandwidth = _bandwidth(program, design, result, device)
    return SimulateReport(
        program,
        arch=arch,
        design=design,
        device=device,
        result=result,
        validation=validation,
        facts=facts,
        bandwidth=bandwidth,
        outputs=written,
        trace=trace,
        seconds=time.perf_counter() - start,
        emax=emax_run,
        predicted_cycles=predict(program, design, facts, bandwidth),
        fused=fusion.fused,
        cgra=cgra_run,
        partition=None if split is None else split.partition,
    )


@dataclass(frozen=True)
class Simulation:
    """A cycle-level simulation validated against the NumPy reference.

    ``outputs``: the simulated outputs (points the reference leaves undefined are NaN or 0, as ``run``
    writes them); ``stalls``: per module, the cycles it was starved (an input empty) and blocked (an
    output full); ``predicted_cycles``: the analytical model's cycles of the same design."""

    program: Program
    design: Design
    device: Device | None
    result: SimResult
    validation: Validation
    reference: Result
    outputs: Mapping[str, Array]
    predicted_cycles: int

    @property
    def valid(self) -> bool:
        return self.validation.valid

    @property
    def status(self) -> str:
        """``done``, ``deadlock`` or ``limit``."""
        return self.result.status

    @property
    def cycles(self) -> int:
        return self.result.cycles

    @property
    def stalls(self) -> dict[str, tuple[int, int]]:
        return {m.name: (m.starved, m.blocked) for m in self.result.modules}

    def __repr__(self) -> str:
        """One line (the design, the verdict, the cycles); the fields hold the details."""
        verdict = "valid" if self.valid else "INVALID"
        return (
            f"Simulation({self.design.name!r} on {self.design.arch}: {self.status}, {verdict}, "
            f"{self.cycles} cycles, predicted {self.predicted_cycles})"
        )


def simulate_dataflow(
    program: Program,
    design: Design,
    values: Mapping[str, Array],
    device: Device | None,
    *,
    max_cycles: int | None = None,
    trace_cycles: int = 0,
    progress: Progress | None = None,
    notify: Callable[[str], None] | None = None,
) -> Simulation:
    """Simulate a dataflow design (SODA, StencilFlow, PCM) of the shape-bound, chained ``program`` on
    ``values`` with the memory of ``device`` (unlimited without one), and validate it against the
    reference: what ``stencilmap simulate`` and ``sm.simulate`` run."""
    from stencilmap.sim import SimConfig
    from stencilmap.sim import simulate as simulate_design

    rate = memory_rate(device, program, design=design) if device is not None else None
    a = arch_of(design.arch)
    predicted = predicted_cycles(design, program, rate, lanes=a.lanes) if a.timed else 0
    config = SimConfig(
        bytes_per_cycle_per_bank=rate,
        clock_mhz=device.clock_mhz if device is not None else None,
        max_cycles=max_cycles,
        predicted_cycles=predicted,
        trace_cycles=trace_cycles,
    )
    result = simulate_design(program, design, values, config, progress, notify)
    reference = run_reference(program, values)
    validation = validate(result.status, result.outputs, reference.outputs, reference.defined)
    outputs = masked_outputs(result, reference.defined)
    return Simulation(
        program,
        design=design,
        device=device,
        result=result,
        validation=validation,
        reference=reference,
        outputs=outputs,
        predicted_cycles=predicted,
    )


def default_out_dir(program: Program) -> Path:
    """Where simulated outputs go without ``--out``: ``out/<program>/sim/``, beside (never over) the
    reference outputs ``run`` writes to ``out/<program>/``."""
    return Path("out") / program.name / "sim"


def _simulate_emax(
    config: SimulateConfig, program: Program, values: Mapping[str, Array], design: Design
) -> tuple[SimResult, EmaxSimulation, Device]:
    """EMAX designs run on their own simulator (``sim.emax``): LMMs, FIFOs and the five-state timeline."""
    from stencilmap.arch.simulate import simulate_emax
    from stencilmap.design.emax import emax_device, map_emax

    if config.trace is not None:
        raise StencilmapError(f"{param('arch')} emax simulates one time step without {param('trace')}")
    mapping = map_emax(program, config.point)
    device = emax_device(config.point)
    if config.from_asm is not None:  # the mnemonics as written (``design.emax.asm``), on their device
        from stencilmap.design.emax import design_of

        mapping = _FROM_ASM["emax"](config.from_asm, program)
        device, design = load_device(mapping.device), design_of(mapping)
    paired = simulate_emax(mapping, values[mapping.field], device)
    run = paired.run
    shape = tuple(int(n or 0) for n in program.shape)
    result = SimResult(
        design=design,
        status="done",
        cycles=run.cycles,
        outputs={mapping.output: run.output.reshape(shape)},
        modules=(),
        channel_peaks={},
        bytes_read={mapping.field: float(run.bytes_in)},
        bytes_written={mapping.output: float(run.bytes_out)},
        firings=len(mapping.instructions) * len(run.executions),
        seconds=run.sim_seconds,
        output_points=prod(shape),
        sim_seconds=run.sim_seconds,
    )
    return result, paired, device


def _simulate_cgra(
    config: SimulateConfig, program: Program, values: Mapping[str, Array], design: Design
) -> tuple[SimResult, CgraSimulation, Device]:
    """CGRA worker mappings run on their own simulator (``sim.cgra``): PEs, queues, loads and stores."""
    from stencilmap.arch.simulate import simulate_cgra
    from stencilmap.design.cgra.mapping import design_of, fabric, map_cgra
    from stencilmap.model.cgra import roofline_workers_of
    from stencilmap.model.roofline import roofline_of

    if config.trace is not None or config.point.tile is not None:
        raise StencilmapError(
            f"{param('arch')} cgra simulates without {param('trace')} or {param('tile')} (strips: {param('strip')})"
        )
    if config.point.tiles is not None and config.point.tiles > 1:
        return _simulate_cgra_tiles(config, program, values, design)
    if config.from_asm is not None:
        mapping = _FROM_ASM["cgra"](config.from_asm, program)
        design = design_of(mapping)
    else:
        mapping = map_cgra(program, config.point, roofline_workers_of)
    device = fabric(mapping.device).device
    shape = tuple(int(n or 0) for n in program.shape)
    roofline = roofline_of(program, shape, device, mapping.layers).attainable_gops
    paired = simulate_cgra(mapping, dict(values), device, roofline, config.max_cycles)
    run = paired.run
    size = np.dtype(mapping.dtype).itemsize
    return _cgra_result(design, program, run, size, run.bytes_written // size), paired, device


def _cgra_result(design: Design, program: Program, run: Any, size: int, output_points: int) -> SimResult:
    """The dataflow simulator's report of a CGRA run (one fabric's or the tiles' stitched): its outputs in
    the fields' types, bytes moved, firings; ``size`` the element's bytes."""
    return SimResult(
        design=design,
        status=run.status,
        cycles=run.cycles,
        outputs={k: as_field_dtype(v, program.field_dtype(k)) for k, v in run.outputs.items()},
        modules=(),
        channel_peaks=run.peaks,
        bytes_read={k: float(v) for k, v in run.bytes_read.items()},
        bytes_written={k: float(np.count_nonzero(~np.isnan(v))) * size for k, v in run.outputs.items()},
        firings=run.firings,
        seconds=run.sim_seconds,
        output_points=output_points,
        sim_seconds=run.sim_seconds,
    )


def _simulate_cgra_tiles(
    config: SimulateConfig, program: Program, values: Mapping[str, Array], design: Design
) -> tuple[SimResult, CgraSimulation, Device]:
    """``--tiles n`` (CGRA §VIII-A): every tile mapped and simulated on its slab (``jobs.cgra_tiles``)."""
    from stencilmap.arch.simulate import CgraSimulation
    from stencilmap.design.cgra.mapping import fabric
    from stencilmap.jobs.cgra_tiles import simulate_tiles
    from stencilmap.model.roofline import roofline_of

    if config.from_asm is not None:
        raise StencilmapError(f"{param('from_asm')} runs one fabric's assembly: not with {param('tiles')}")
    device = fabric(config.point.device).device
    shape = tuple(int(n or 0) for n in program.shape)
    layers = max(1, program.iterate)
    roofline = roofline_of(program, shape, device, layers).attainable_gops
    run = simulate_tiles(program, config.point, values, device, roofline, config.max_cycles)
    size = np.dtype(run.mapping.dtype).itemsize
    points = sum(int(np.count_nonzero(~np.isnan(v))) for v in run.outputs.values())
    result = _cgra_result(design, program, run, size, points)
    assert run.slowest_prediction is not None
    return result, CgraSimulation(run, run.slowest_prediction), device


def _cgra_from_asm(path: Path, program: Program) -> CgraMapping:
    """``--from-asm FILE`` for ``--arch cgra``: the mapping the assembly in FILE describes
    (``codegen.cgra_asm``), checked to be one of ``program`` (its fields, types and grid)."""
    from stencilmap.codegen.cgra_asm import read_asm
    from stencilmap.sim.cgra import TYPED_OPS

    m = read_asm(path, known_ops=TYPED_OPS)
    shape = tuple(int(n or 0) for n in program.shape)
    padded = (1,) * (3 - len(shape)) + shape
    asm_inputs = {f: d for f, d, _ in m.inputs}
    want_inputs = {i.name: i.dtype for i in program.inputs if i.name in asm_inputs}
    outputs = tuple(s.name for s in m.stages if s.output)
    problems = []
    if m.shape != padded or m.rank != program.rank:
        problems.append(f"its grid is {_dims(m.shape[3 - m.rank :])}, the program's {_dims(shape)}")
    if asm_inputs != want_inputs:
        problems.append(f"it reads {_fields(asm_inputs)}, the program has inputs {_fields(want_inputs)}")
    if sorted(outputs) != sorted(program.outputs):
        problems.append(f"it writes {', '.join(outputs)}, the program {', '.join(program.outputs)}")
    if problems:
        raise StencilmapError(f"{path}: not a mapping of {program.name}: " + "; ".join(problems))
    return m


def _dims(shape: tuple[int, ...]) -> str:
    return "×".join(str(n) for n in shape)


def _fields(fields: Mapping[str, str]) -> str:
    return ", ".join(f"{f} ({d})" for f, d in sorted(fields.items())) or "none"


#: The architectures whose mapping text ``--from-asm`` reads back (the parsed mapping is what the
#: architecture's simulator runs): one entry per architecture.
def _emax_from_asm(path: Path, program: Program) -> EmaxMapping:
    """``--from-asm FILE`` for ``--arch emax``: the mnemonics in FILE assembled against ``program``
    (``design.emax.asm``: the rules of EMAX §3–§5, FILE:LINE errors)."""
    from stencilmap.design.emax.asm import read_mnemonics

    return read_mnemonics(path, program)


_FROM_ASM: dict[str, Callable[[Path, Program], Any]] = {"cgra": _cgra_from_asm, "emax": _emax_from_asm}


#: The simulators of the architectures that have their own (``arch.Arch.simulator``); the others run on
#: the dataflow engine (``simulate_dataflow``).
_OWN_SIMULATORS: dict[
    str,
    Callable[
        [SimulateConfig, Program, Mapping[str, Array], Design],
        tuple[SimResult, EmaxSimulation | CgraSimulation, Device],
    ],
] = {"emax": _simulate_emax, "cgra": _simulate_cgra}


def as_field_dtype(values: Array, dtype: str) -> Array:
    """A simulated output (float64, NaN where nothing was stored) in its field's type (0 for integers). A 64-bit
    integer near its type's end may round past it in float64 (the simulator's documented 2⁵³ limit): the cast
    then wraps, silently, as the mismatch it causes is reported with that limit named."""
    if np.dtype(dtype).kind != "f":
        values = np.where(np.isnan(values), 0.0, values)
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(dtype)


#: Most channels the simulator is given: its cost per cycle grows with them (about 40 channels a SODA stage
#: of a 2-D 5-point stencil at k = 4, so q ≈ 450; 16,016 for the 9,602-module design of
#: tests/sim/test_engine.py). Larger designs would simulate, but not in the seconds a command should take.
MAX_SIM_CHANNELS = 20_000


def check_simulation_size(design: Design, trace_cycles: int) -> None:
    """Refuse, before simulating, a design too large to simulate in reasonable time, or whose FIFOs and
    trace need more memory than ``memory_limit()``."""
    if len(design.channels) > MAX_SIM_CHANNELS:
        raise StencilmapError(
            f"the design has {len(design.channels):,} channels; the simulator takes at most "
            f"{MAX_SIM_CHANNELS:,} (use a smaller {param('iterate')} or {param('unroll')})"
        )
    fifo = 8 * sum(c.depth * c.width for c in design.channels)
    trace = trace_cycles * (len(design.modules) + 8 * len(design.channels))
    check_memory(fifo, "the design's FIFOs")
    check_memory(fifo + trace, f"{param('trace_cycles')} {trace_cycles:,}")


def bind(config: SimulateConfig) -> tuple[Program, dict[str, Array]]:
    """The shape-bound program chained ``iterate`` times, and the values of its inputs and params."""
    check_parameters(config.point.unroll, config.point.iterate, config.point.vector)
    if config.trace_cycles < 0:
        raise StencilmapError(f"{param('trace_cycles')} must be ≥ 0, got {config.trace_cycles}")
    program = load_program(config.program)
    supplied = {name: read_npy(name, path) for name, path in config.inputs.items()}
    program = bind_shape(program, supplied, config.shape)
    program = with_iterate(program, or_hint(config.point.iterate, program.iterate))
    return program, make_inputs(program, supplied, config.seed, config.data_dir)


def lanes_of(design: Design) -> int:
    """Points the design processes per cycle: SODA's k, PCM's P_cell or StencilFlow's W."""
    return arch_of(design.arch).lanes_of(design)


def prediction(program: Program, design: Design) -> ProgramAnalysis:
    """The analysis of ``program`` at the design's lanes: L and C = L + ⌈N / (k·W)⌉ for comparison."""
    lanes = lanes_of(design)
    if arch_of(design.arch).lanes_option == "vector":
        return analyze_program(program, unroll=1, vector=lanes)
    return analyze_program(program, unroll=lanes, vector=1)


def predict(program: Program, design: Design, facts: ProgramAnalysis, bandwidth: Bandwidth) -> int:
    """The cycles the model predicts for ``design``: ``model.timing.predicted_cycles``, the prediction
    ``estimate`` reports and ``explore`` ranks by, at the bandwidth the simulation had. Designs without a
    timing model there (EMAX) get C = L + ⌈N / (k·W)⌉, its streaming part stretched by the bandwidth
    slowdown B_req / B_prac (OpenCL eq. 6)."""
    a = arch_of(design.arch)
    if a.timed:
        return predicted_cycles(design, program, bandwidth.bytes_per_cycle_per_bank, lanes=a.lanes)
    streaming = (facts.runtime_cycles - facts.latency_cycles) * bandwidth.slowdown
    return ceil(facts.latency_cycles + streaming)


def _scaled(progress: Progress | None, facts: ProgramAnalysis) -> Progress | None:
    """Report progress against the larger of the simulator's stream length and the predicted cycles."""
    if progress is None:
        return None
    predicted = facts.runtime_cycles
    report = progress

    def scaled(cycle: int, expected: int) -> None:
        report(cycle, max(expected, predicted, cycle))

    return scaled


def masked_outputs(result: SimResult, defined: Mapping[str, Array]) -> dict[str, Array]:
    """The simulated outputs with the points the reference leaves undefined set as ``run`` sets them
    (NaN for floats, 0 for integers) instead of whatever the writer left there."""
    out: dict[str, Array] = {}
    for name, mask in defined.items():
        arr = np.array(result.outputs[name], copy=True)
        arr[~mask] = undefined_value(arr.dtype)
        out[name] = arr
    return out


def _stage_trace(files: OutputSet, config: SimulateConfig, design: Design, result: SimResult) -> Path | None:
    if config.trace is None or result.trace is None:
        return None
    recorded = min(result.cycles, int(result.trace.shape[0]))
    occupancy = result.occupancy
    trace = Trace(
        design=design.name,
        arch=design.arch,
        modules=tuple(m.name for m in design.modules),
        activity=result.trace[:recorded],
        total_cycles=result.cycles,
        channels=tuple(c.name for c in design.channels) if occupancy is not None else (),
        occupancy=np.asarray(occupancy)[:recorded] if occupancy is not None else None,
    )
    files.add_text(config.trace, trace_text(config.trace, trace))
    return config.trace


def _bandwidth(program: Program, design: Design, result: SimResult, device: Device | None) -> Bandwidth:
    if arch_of(design.arch).lanes == "workers":  # a CGRA mapping: its w readers and writers
        return _cgra_bandwidth(program, design, result, device)
    ports = []
    for m in design.modules:
        if m.kind not in ("reader", "writer"):
            continue
        name = str(m.param("field"))
        moved = (result.bytes_read if m.kind == "reader" else result.bytes_written).get(name, 0.0)
        moved /= sum(1 for n in design.modules if n.kind == m.kind and n.param("field") == name)
        direction: Literal["read", "write"] = "read" if m.kind == "reader" else "write"
        full_rate = _port_bytes(program, m) / _beats(program, design, m)
        ports.append(PortTraffic(name, direction, memory_bank(m), float(moved), full_rate))
    return Bandwidth(
        tuple(ports),
        result.cycles,
        memory_rate(device, program, design=design) if device is not None else None,
        device.clock_mhz if device is not None else None,
        device.interleaved_banks(pins_banks(program)) if device is not None else 1,
    )


def _cgra_bandwidth(program: Program, design: Design, result: SimResult, device: Device | None) -> Bandwidth:
    """A CGRA mapping's traffic: its w readers of each field and w writers, each a point a cycle at most."""
    w = _int(dict(design.parameters).get("workers"), 1)
    ports = [
        PortTraffic(name, "read", 0, moved, w * np.dtype(program.field_dtype(name)).itemsize)
        for name, moved in sorted(result.bytes_read.items())
    ]
    ports += [
        PortTraffic(name, "write", 0, moved, w * np.dtype(program.field_dtype(name)).itemsize)
        for name, moved in sorted(result.bytes_written.items())
    ]
    per_cycle = device.bytes_per_cycle_per_bank() * device.dram_banks if device is not None else None
    return Bandwidth(tuple(ports), result.cycles, per_cycle, device.clock_mhz if device else None)


def _port_bytes(program: Program, port: Module) -> int:
    """Bytes a memory port moves in a whole run: its ``points`` (halos re-read when tiled; a lower-
    dimensional input once) times the field's element size."""
    name = str(port.param("field"))
    inp = program.input(name)
    default = prod(field_shape(program, inp)) if inp is not None else prod(int(n or 0) for n in program.shape)
    return _int(port.param("points"), default) * np.dtype(program.field_dtype(name)).itemsize


def _beats(program: Program, design: Design, port: Module) -> int:
    """Beats a memory port streams: every tile's points over its lanes (``design.common``: streams are
    padded to whole beats)."""
    params = dict(design.parameters)
    shape = params.get("stream_shape", tuple(int(n or 0) for n in program.shape))
    points = prod(int(n) for n in shape) if isinstance(shape, tuple) else 1
    width = max(1, _int(port.param("width"), 1))
    return max(1, ceil(points / width) * max(1, _int(params.get("tiles_total"), 1)))


def _int(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) else default
