"""The simulator's small interface: ``simulate(program, design, inputs, config) -> SimResult``.

The engine (``engine``) is compiled with Numba and runs in chunks of cycles; between chunks control
returns here for progress reporting. Results: the values the writers stored, cycles, per-module
busy / starved / blocked counts, peak channel occupancy, off-chip traffic, and on a deadlock the
modules waiting and the cycle of waits between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import numpy.typing as npt

from stencilmap.design.ir import Design
from stencilmap.program.ir import Program
from stencilmap.sim import engine as E
from stencilmap.sim.model import SimModel, lower

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class SimConfig:
    """How to simulate: memory bandwidth per bank and cycle (None: unlimited), limits, tracing."""

    bytes_per_cycle_per_bank: float | None = None
    clock_mhz: float | None = None
    max_cycles: int | None = None
    chunk_cycles: int = 200_000
    trace_cycles: int = 0  # record per-module activity for the first N cycles


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

    @property
    def cycles_per_output(self) -> float:
        per = max(1, self.output_points)
        return self.cycles / per


def _run(model: SimModel, start: int, limit: int, trace: Array, trace_from: int) -> tuple[int, int, int]:
    a = model.arrays
    status, now, firings = E.run_cycles(
        start, limit,
        a["kind"], a["ip"], a["pe_ex"], a["pe_pres"], a["pe_hi0"], a["st"], a["fp"],
        a["in_ptr"], a["in_ch"], a["out_ptr"], a["out_ch"], a["out_x"],
        a["cap"], a["width"], a["count"], a["head"], a["base"], a["push_at"], a["pop_at"], a["peak"], a["store"],
        a["mem"], a["mem_base"], a["pipe_t"],
        a["streams"], a["dest"], a["output"],
        a["credit"], a["rate"], a["credit_cap"], a["moved"],
        a["code"], a["consts"], a["pinfo"], a["pval"],
        a["busy"], a["starved"], a["blocked"],
        a["group"], a["grp_ptr"], a["grp"], a["fire_state"],
        trace, trace_from,
        a["scratch"], a["stack"], a["temps"],
    )  # fmt: skip
    return int(status), int(now), int(firings)


def simulate(
    program: Program,
    design: Design,
    inputs: Mapping[str, Array],
    config: SimConfig = SimConfig(),
    progress: Callable[[int, int], None] | None = None,
) -> SimResult:
    """Execute ``design`` (built from the shape-bound ``program``) on ``inputs`` cycle by cycle.

    ``progress(cycle, expected_cycles)`` is called between chunks.
    """
    start_time = time.perf_counter()
    model = lower(design, program, inputs, config.bytes_per_cycle_per_bank)
    n_mod = len(model.module_names)
    trace = np.zeros((max(0, config.trace_cycles), n_mod), np.int8)
    expected = _expected_cycles(model)
    limit = config.max_cycles if config.max_cycles is not None else max(10 * expected + 100_000, 1)
    now, firings, status = 0, 0, E.RUNNING
    while status == E.RUNNING and now < limit:
        chunk = min(config.chunk_cycles, limit - now)
        status, now, fired = _run(model, now, chunk, trace, 0)
        firings += fired
        if progress is not None:
            progress(now, expected)
    return _result(
        model, status, now, firings, time.perf_counter() - start_time, trace if trace.size else None
    )


def _expected_cycles(model: SimModel) -> int:
    """Stream length in beats of the longest reader: a progress-bar scale, not a prediction."""
    a = model.arrays
    beats = [int(a["ip"][i, 1] // max(1, a["ip"][i, 2])) for i in model.readers.values()]
    return max(beats, default=1)


def _result(
    model: SimModel, status: int, now: int, firings: int, seconds: float, trace: Array | None
) -> SimResult:
    a = model.arrays
    outputs: dict[str, Array] = {}
    for name, (base, shape, dtype) in model.outputs.items():
        flat = a["output"][base : base + int(np.prod(shape))]
        with np.errstate(all="ignore"):
            outputs[name] = flat.reshape(shape).astype(dtype)
    mods = tuple(
        ModuleStats(m.name, m.kind, int(a["busy"][i]), int(a["starved"][i]), int(a["blocked"][i]))
        for i, m in enumerate(model.design.modules)
    )
    peaks = {c.name: (int(a["peak"][i]), c.depth) for i, c in enumerate(model.design.channels)}
    read = {f: float(a["moved"][i]) for f, i in model.readers.items()}
    written = {f: float(a["moved"][i]) for f, i in model.writers.items()}
    text = {E.DONE: "done", E.DEADLOCK: "deadlock"}.get(status, "limit")
    deadlock = _deadlock(model, now) if status == E.DEADLOCK else None
    return SimResult(
        model.design, text, now, outputs, mods, peaks, read, written, firings, seconds, deadlock, trace,
        model.points,
    )  # fmt: skip


def _deadlock(model: SimModel, now: int) -> Deadlock:
    """Which unfinished modules wait on which channel, and a cycle in that wait-for graph."""
    a = model.arrays
    d = model.design
    waits: list[Waiting] = []
    g = nx.DiGraph()
    for i, m in enumerate(d.modules):
        if _finished(model, i):
            continue
        w = _wait_of(model, i)
        if w is None:
            continue
        waits.append(w)
        g.add_edge(m.name, w.on)
    del a
    try:
        edges = nx.find_cycle(g)
        cycle = tuple([str(u) for u, _ in edges] + [str(edges[0][0])])
    except nx.NetworkXNoCycle:
        cycle = ()
    return Deadlock(now, tuple(waits), cycle)


def _finished(model: SimModel, i: int) -> bool:
    a = model.arrays
    k = int(a["kind"][i])
    if k in (E.K_READER, E.K_WRITER):
        return bool(a["st"][i, 0] >= a["ip"][i, 1])
    return False


def _wait_of(model: SimModel, i: int) -> Waiting | None:
    a = model.arrays
    d = model.design
    name = d.modules[i].name
    chans = d.channels
    for j in range(int(a["in_ptr"][i]), int(a["in_ptr"][i + 1])):
        c = int(a["in_ch"][j])
        if a["count"][c] == 0:
            return Waiting(name, "empty input", chans[c].name, chans[c].src)
    for j in range(int(a["out_ptr"][i]), int(a["out_ptr"][i + 1])):
        c = int(a["out_ch"][j])
        if a["count"][c] >= a["cap"][c]:
            return Waiting(name, "full output", chans[c].name, chans[c].dst)
    if int(a["kind"][i]) == E.K_TAP:
        for c in (int(a["ip"][i, 2]), int(a["ip"][i, 3])):
            if c >= 0 and a["count"][c] >= a["cap"][c]:
                return Waiting(name, "full output", chans[c].name, chans[c].dst)
    return None
