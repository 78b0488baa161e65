"""The simulator's small interface: ``simulate(program, design, inputs, config) -> SimResult``.

The engine (``engine.py``, C compiled by the system compiler and cached) runs in chunks of cycles;
between chunks control returns here for progress reporting. Results: the values the writers stored, cycles, per-module
busy / starved / blocked counts, peak channel occupancy, off-chip traffic, and on a deadlock the
modules waiting and the cycle of waits between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from stencilmap.design.ir import Design
from stencilmap.program.ir import Program
from stencilmap.sim import memory as K
from stencilmap.sim.engine import Notify, load_engine
from stencilmap.sim.layout import Packed, pack
from stencilmap.sim.model import SimModel, lower

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class SimConfig:
    """How to simulate: memory bandwidth per bank and cycle (None: unlimited), limits, tracing."""

    bytes_per_cycle_per_bank: float | None = None
    clock_mhz: float | None = None
    max_cycles: int | None = None  # None: ``default_cycle_limit``
    #: The model's cycles for this design (0: none): the default limit allows twice as many.
    predicted_cycles: int = 0
    chunk_cycles: int = 200_000
    trace_cycles: int = 0  # record per-module activity for the first N cycles
    #: PE expressions: compiled to straight-line C when the run repays the compilation ("auto"), or
    #: always / never. Results are identical either way; only the speed differs.
    evaluators: Literal["auto", "compile", "interpret"] = "auto"
    #: Run each SODA reuse chain (taps and FIFOs linked by ``next``) as one ring buffer while it is
    #: steady, or every module by itself. Results are identical either way; only the speed differs.
    fuse_chains: bool = True


#: "auto" compiles the PE expressions from this many expected PE firings on (~0.3 s of interpretation).
COMPILE_EVALUATORS_FROM = 3_000_000


@dataclass(frozen=True, slots=True)
class ModuleStats:
    name: str
    kind: str
    busy: int
    starved: int
    blocked: int


@dataclass(frozen=True, slots=True)
class Waiting:
    """A module that cannot fire on a deadlock, and the channel (and module across it) it waits on."""

    module: str
    reason: str  # "empty input" | "full output"
    channel: str
    on: str


@dataclass(frozen=True, slots=True)
class Deadlock:
    cycle: int
    waiting: tuple[Waiting, ...]
    cycle_of_waits: tuple[str, ...]  # modules in a wait-for cycle (closed: first == last), if any


@dataclass(frozen=True)
class SimResult:
    design: Design
    status: str  # "done" | "deadlock" | "limit"
    cycles: int
    outputs: Mapping[str, Array]
    modules: tuple[ModuleStats, ...]
    channel_peaks: Mapping[str, tuple[int, int]]  # channel -> (peak occupancy, depth)
    bytes_read: Mapping[str, float]
    bytes_written: Mapping[str, float]
    firings: int
    seconds: float
    deadlock: Deadlock | None = None
    trace: Array | None = field(default=None, repr=False)
    output_points: int = 0
    occupancy: Array | None = field(default=None, repr=False)  # [cycles, channels]: beats at cycle end
    sim_seconds: float = 0.0  # the cycle loop alone
    sim_cpu_seconds: float = 0.0  # the cycle loop's processor time (its measure on a shared, loaded machine)
    compile_seconds: float = 0.0  # compiling the engine or the evaluators in this call (0: cached)

    @property
    def cycles_per_output(self) -> float:
        per = max(1, self.output_points)
        return self.cycles / per


def simulate(
    program: Program,
    design: Design,
    inputs: Mapping[str, Array],
    config: SimConfig = SimConfig(),
    progress: Callable[[int, int], None] | None = None,
    notify: Notify | None = None,
) -> SimResult:
    """Execute ``design`` (built from the shape-bound ``program``) on ``inputs`` cycle by cycle.

    ``progress(cycle, expected_cycles)`` is called between chunks; ``notify(line)`` before anything
    is compiled.
    """
    start_time = time.perf_counter()
    model = lower(design, program, inputs, config.bytes_per_cycle_per_bank)
    packed = pack(model, config.fuse_chains)
    n_mod = len(model.module_names)
    trace = np.zeros((max(0, config.trace_cycles), n_mod), np.int8)
    occupancy = np.zeros((max(0, config.trace_cycles), len(design.channels)), np.int64)
    expected = _expected_cycles(model)
    engine = load_engine(packed, _compile_evaluators(config, model, expected), notify)
    limit = config.max_cycles if config.max_cycles is not None else default_cycle_limit(expected, config)
    now, firings, status = 0, 0, K.RUNNING
    loop_start, loop_cpu = time.perf_counter(), time.process_time()
    while status == K.RUNNING and now < limit:
        chunk = min(config.chunk_cycles, limit - now)
        status, now, fired, _, _ = engine.run(packed, trace, occupancy, 0, now, chunk)
        firings += fired
        if progress is not None:
            progress(now, expected)
    sim_seconds, sim_cpu_seconds = time.perf_counter() - loop_start, time.process_time() - loop_cpu
    seconds = time.perf_counter() - start_time
    result = _result(packed, status, now, firings, seconds, trace if trace.size else None)
    result = replace(
        result,
        sim_seconds=sim_seconds,
        sim_cpu_seconds=sim_cpu_seconds,
        compile_seconds=engine.compile_seconds,
    )
    if config.trace_cycles > 0:
        result = replace(result, occupancy=occupancy[: min(now, config.trace_cycles)])
    return result


def _compile_evaluators(config: SimConfig, model: SimModel, expected_cycles: int) -> bool:
    if config.evaluators != "auto":
        return config.evaluators == "compile"
    pes = int((model.arrays["kind"] == K.K_PE).sum())
    return pes * expected_cycles >= COMPILE_EVALUATORS_FROM


def default_cycle_limit(stream: int, config: SimConfig) -> int:
    """The cycles a simulation may take unless told (``max_cycles``): 10× the stream length or twice the
    model's prediction, whichever is more, plus 100,000 — a long chain fills for longer than its stream
    lasts (300 3-D stencils of 4,096 points: 168,000 cycles predicted)."""
    return max(10 * stream, 2 * config.predicted_cycles) + 100_000


def _expected_cycles(model: SimModel) -> int:
    """Stream length in beats of the longest reader: a progress-bar scale, not a prediction."""
    a = model.arrays
    beats = [int(a["ip"][i, 1] // max(1, a["ip"][i, 2])) for i in model.readers.values()]
    return max(beats, default=1)


def _result(
    packed: Packed, status: int, now: int, firings: int, seconds: float, trace: Array | None
) -> SimResult:
    model = packed.model
    outputs: dict[str, Array] = {}
    for name, (base, shape, dtype) in model.outputs.items():
        flat = packed.output(base, int(np.prod(shape)))
        with np.errstate(all="ignore"):
            outputs[name] = flat.reshape(shape).astype(dtype)
    d = model.design
    mods = tuple(
        ModuleStats(
            m.name,
            m.kind,
            packed.module(i, K.M_BUSY),
            packed.module(i, K.M_STARVED),
            packed.module(i, K.M_BLOCKED),
        )
        for i, m in enumerate(d.modules)
    )
    peaks = {c.name: (packed.channel(i, K.C_PEAK), c.depth) for i, c in enumerate(d.channels)}
    read: dict[str, float] = {}
    for i, m in enumerate(d.modules):  # an input replicated on several devices has a reader on each
        if m.kind == "reader":
            f = str(m.param("field"))
            read[f] = read.get(f, 0.0) + packed.moved(i)
    written = {f: packed.moved(i) for f, i in model.writers.items()}
    text = {K.DONE: "done", K.DEADLOCK: "deadlock"}.get(status, "limit")
    deadlock = _deadlock(packed, now) if status == K.DEADLOCK else None
    return SimResult(
        d, text, now, outputs, mods, peaks, read, written, firings, seconds, deadlock, trace, model.points
    )


def _deadlock(packed: Packed, now: int) -> Deadlock:
    """Which unfinished modules wait on which channel, and a cycle in that wait-for graph."""
    import networkx as nx

    d = packed.model.design
    waits: list[Waiting] = []
    g = nx.DiGraph()
    for i, m in enumerate(d.modules):
        if m.kind in ("reader", "writer") and packed.module(i, K.M_S) >= packed.module(i, K.M_P + 1):
            continue  # finished
        w = _wait_of(packed, i)
        if w is None:
            continue
        waits.append(w)
        g.add_edge(m.name, w.on)
    try:
        edges = nx.find_cycle(g)
        cycle = tuple([str(u) for u, _ in edges] + [str(edges[0][0])])
    except nx.NetworkXNoCycle:
        cycle = ()
    return Deadlock(now, tuple(waits), cycle)


def _wait_of(packed: Packed, i: int) -> Waiting | None:
    d = packed.model.design
    name = d.modules[i].name
    chans = d.channels
    for c in packed.inputs(i):
        if packed.channel(c, K.C_COUNT) == 0:
            return Waiting(name, "empty input", chans[c].name, chans[c].src)
    outs = packed.outputs(i)
    if d.modules[i].kind == "forward" and packed.module(i, K.M_P + 3) >= 0:
        outs.append(packed.module(i, K.M_P + 3))
    for c in outs:
        if packed.channel(c, K.C_COUNT) >= packed.channel(c, K.C_CAP):
            return Waiting(name, "full output", chans[c].name, chans[c].dst)
    return None
