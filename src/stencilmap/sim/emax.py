"""A dedicated EMAX simulator: the library's mapping (``design.emax``) executed with values, and the
five-state timeline of its executions (EMAX §3, §4.5, §5.1, Table 1).

Why not the dataflow engine: EMAX is not a graph of handshaking modules. Its rows fire in lock-step on
one X-stream per execution; between executions the LMMs keep their contents and the mapping shifts by
``dist``; every execution is framed by DMA states on shared paths. This simulator models exactly those
things, and nothing is taken from the reference:

* **LMMs** are the PE array's, by physical (row, column), and hold X-streams (a chunk and its 2d halo).
  Each execution along Y shifts every load by its ``dist`` rows round the ring (§3.1, §3.3, Fig. 4); an
  LMM a shifting load read in the previous execution is kept, every other load's LMM is refilled by
  state 2 (DDR3 → LMM) with the stream its instruction names. So the streams moved *are* the reuse the
  mapping achieves (formulas (2), (3)), and a wrong ``dist`` or placement reads a stale stream (wrong
  data) or puts two loads on one single-port LMM (a refusal). Streams outside the grid are never moved.
* **Execution** (state 3) interprets the mnemonics row by row: ``LD`` reads an LMM through the EAG
  (``count`` words from ``RGI``), ``FIFO`` reads a tap of the FIFO that its row's LMM fills (the FIFO
  holds the last 2d + 1 words; at cycle t tap dx is word t + d + dx), the ALU ops compute in the
  program's float type with their RGI constants (``FMA`` d = a + c·b rounds the product and the sum, as
  NumPy does; the result matches the reference within its tolerance, not bit for bit, since the library
  sums c_o·v(o) in its own order), ``ST`` writes the result into the PE's LMM. Loads go first: they read
  LMMs that state 2 filled, and a packed plane may use a load mapped in a lower row (through the ring,
  §3.1); the cycles of state 3 are the stream through the FIFOs plus one per row, ring hops not counted.
* State 4 moves the stored results LMM → DDR3; states 1 and 5 are the host copies.

The timeline schedules every execution's five states in order (each after the previous state of the
same execution, each state's executions in order) on three exclusive paths — host (states 1 and 5),
LMM port (2 and 3), write-back (4) — earliest start first, so states of different executions overlap
(§5.1, Fig. 12). ``model.emax.timeline`` is its closed form for identical executions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from stencilmap.design.emax import EmaxMapping, Instruction, execution_order
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError

Array = npt.NDArray[Any]

STATES = ("host_to_ddr", "ddr_to_lmm", "execute", "lmm_to_ddr", "ddr_to_host")
_PATHS = ("host", "lmm", "lmm", "writeback", "host")  # §5.1: states 1 & 5, 2 & 3 share a path


class Lmm:
    """One PE's local memory: ``words`` and the X-stream (z, y, chunk) it holds."""

    def __init__(self, words: int, dtype: np.dtype[Any]) -> None:
        self.words = np.zeros(words, dtype)
        self.holds: tuple[int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class Execution:
    """One activation: bytes DDR3 → LMM and LMM → DDR3, streams moved, cycles of state 3."""

    bytes_in: int
    bytes_out: int
    streams: int
    cycles: int


@dataclass(frozen=True, slots=True)
class Schedule:
    """The scheduled timeline: busy seconds of each state over all executions and the end of the last."""

    state_seconds: tuple[float, float, float, float, float]
    total_s: float
    #: (state 1..5, execution, start, end) of every state, when asked for (``keep_intervals``)
    intervals: tuple[tuple[int, int, float, float], ...] = ()

    def to_json(self) -> dict[str, float]:
        out = {name: t for name, t in zip(STATES, self.state_seconds, strict=True)}
        out["total_s"] = self.total_s
        return out


@dataclass(frozen=True)
class EmaxRun:
    """What the EMAX simulation produced."""

    mapping: EmaxMapping
    output: Array
    executions: tuple[Execution, ...]
    schedule: Schedule
    clock_mhz: float
    sim_seconds: float

    @property
    def lmm_streams(self) -> int:
        return sum(e.streams for e in self.executions)

    @property
    def bytes_in(self) -> int:
        return sum(e.bytes_in for e in self.executions)

    @property
    def bytes_out(self) -> int:
        return sum(e.bytes_out for e in self.executions)

    def to_json(self) -> dict[str, object]:
        return {
            "lmm_streams": self.lmm_streams,
            "x_chunks": self.mapping.x_chunks,
            "p": self.mapping.p,
            "rows": self.mapping.rows,
            "executions": len(self.executions),
            "bytes_ddr_to_lmm": self.bytes_in,
            "bytes_lmm_to_ddr": self.bytes_out,
            "timeline": self.schedule.to_json(),
        }

    @property
    def cycles(self) -> int:
        """The whole timeline in EMAX clock cycles."""
        return round(self.schedule.total_s * self.clock_mhz * 1e6)


class _Group:
    """The PE array's LMMs during one Y sweep of one Z group and X chunk, by physical (row, column).

    Execution k places each load with dist δ on row (row + k·δ) mod ``rows`` (the ring, §3.1; Fig. 4:
    "the previous contents of LMMs are kept and the mapping of instructions is shifted by dist"). An LMM
    a shifting load read in execution k − 1 is kept for execution k — state 2 does not refill it, so it
    holds whatever stream it held — and every other load's LMM is refilled with the stream its
    instruction names. With the library's dist (1, the Y column one row apart) the kept LMMs hold exactly
    the streams the shifted loads name; a wrong dist or placement reads stale streams."""

    def __init__(self, m: EmaxMapping, dtype: np.dtype[Any]) -> None:
        self.m, self.dtype = m, dtype
        self.lmms: dict[tuple[int, int], Lmm] = {}
        self.kept: frozenset[tuple[int, int]] = frozenset()
        self.stored = {i.plane: (i.row, i.col) for i in m.instructions if i.op == "ST"}
        self.loads = m.loads()
        self.stores = {pe: plane for plane, pe in self.stored.items()}

    def at(self, pe: tuple[int, int]) -> Lmm:
        if pe not in self.lmms:
            self.lmms[pe] = Lmm(self.m.lmm_words, self.dtype)
        return self.lmms[pe]

    def place(self, k: int) -> dict[Instruction, tuple[int, int]]:
        """Where each load's LMM is in execution k; refuses two ports on one LMM (single-port, §3.1)."""
        where: dict[Instruction, tuple[int, int]] = {}
        owner: dict[tuple[int, int], Instruction] = {}
        rows, stores = self.m.rows, self.stores
        for i in self.loads:
            pe = ((i.row + k * i.dist) % rows, i.col)
            other = owner.get(pe)
            if other is not None or pe in stores:
                what = f"LD {other.dst} (row {other.row})" if other else f"ST p{stores[pe]}.out"
                raise StencilmapError(
                    f"EMAX execution {k} of a Y sweep: LD {i.dst} (row {i.row}, dist {i.dist}) and {what} "
                    f"both use the LMM of PE {pe}, which has one port (EMAX §3.1)"
                )
            owner[pe] = i
            where[i] = pe
        return where


def simulate_emax(m: EmaxMapping, values: Array, device: Device) -> EmaxRun:
    """Run one time step of ``m`` on the input ``values`` (its program's shape) and schedule it."""
    start = time.perf_counter()
    dtype = np.dtype(m.dtype)
    grid = np.asarray(values, dtype).reshape(m.shape)
    out = np.zeros(m.shape, dtype)
    program = tuple(sorted(m.instructions, key=execution_order))
    executions: list[Execution] = []
    Z, Y, X = m.shape
    for c in range(m.x_chunks):
        x0 = c * m.chunk
        n = min(m.chunk, X - x0)
        for z0 in range(0, Z, m.p):
            group = _Group(m, dtype)
            for y in range(Y):
                executions.append(_execute(m, program, group, grid, out, (z0, y, c, x0, n)))
    host = device.host_bandwidth_gbs * 1e9 if device.host_bandwidth_gbs else None
    rates = (host, device.practical_bandwidth_gbs * 1e9, device.clock_mhz * 1e6)
    schedule = schedule_states(executions, *rates)
    return EmaxRun(m, out, tuple(executions), schedule, device.clock_mhz, time.perf_counter() - start)


def _execute(
    m: EmaxMapping,
    program: tuple[Instruction, ...],
    group: _Group,
    grid: Array,
    out: Array,
    at: tuple[int, int, int, int, int],
) -> Execution:
    z0, y, c, x0, n = at
    d, Z, (_, Y, X) = m.degree, m.shape[0], m.shape
    itemsize = grid.dtype.itemsize
    where = group.place(y)
    # state 2: DDR3 → LMM, every load's stream but those its shifted LMM keeps (dist, Fig. 4)
    streams = bytes_in = 0
    for i in group.loads:
        pe = where[i]
        lmm = group.at(pe)
        if i.dist and pe in group.kept:
            continue
        stream = (z0 + i.dz, y + i.dy, c)
        lmm.holds = stream
        lmm.words[:] = 0
        zz, yy = stream[0], stream[1]
        if 0 <= zz < Z and 0 <= yy < Y:
            lo, hi = max(0, x0 - d), min(X, x0 + n + d)
            lmm.words[lo - (x0 - d) : hi - (x0 - d)] = grid[zz, yy, lo:hi]
            streams += 1
            bytes_in += (hi - lo) * itemsize
    group.kept = frozenset(pe for i, pe in where.items() if i.dist)
    # state 3: the rows in lock-step on this stream
    regs: dict[str, Array] = {}
    fifos: dict[str, Array] = {}
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # an edited coefficient may overflow: data, not a crash
        for i in program:
            _step(i, m, group, where, n, regs, fifos)
    # state 4: LMM → DDR3, the planes inside the grid
    bytes_out = 0
    for j, pe in group.stored.items():
        if z0 + j < Z:
            out[z0 + j, y, x0 : x0 + n] = group.at(pe).words[:n]
            bytes_out += n * itemsize
    return Execution(bytes_in, bytes_out, streams, n + 2 * d + m.rows)


def _step(
    i: Instruction,
    m: EmaxMapping,
    group: _Group,
    where: dict[Instruction, tuple[int, int]],
    n: int,
    regs: dict[str, Array],
    fifos: dict[str, Array],
) -> None:
    """One instruction on the n words of this execution (operands as registers of n lanes in time)."""
    d = m.degree
    t = group.dtype.type
    if i.op == "LD":
        base = int(i.rgi)  # EAG: count n words from address RGI
        regs[i.dst] = group.at(where[i]).words[base : base + n]
    elif i.op == "FIFO":
        src = i.srcs[0]
        if src not in fifos:  # the FIFO its row's LMM fills: the last 2d + 1 words at each cycle
            centre = next(x for x in m.loads() if x.dst == src)
            fifos[src] = sliding_window_view(group.at(where[centre]).words[: n + 2 * d], 2 * d + 1)
        regs[i.dst] = fifos[src][:n, d + i.dx]
    elif i.op == "FMUL":
        regs[i.dst] = t(i.coeff) * regs[i.srcs[0]]
    elif i.op == "FMA":
        acc = np.full(n, t(float(i.rgi)), group.dtype) if i.srcs[0] == "rgi" else regs[i.srcs[0]]
        regs[i.dst] = acc + t(i.coeff) * regs[i.srcs[1]]
    elif i.op == "FADD":
        regs[i.dst] = regs[i.srcs[0]] + regs[i.srcs[1]]
    elif i.op == "ST":
        group.at((i.row, i.col)).words[:n] = regs[i.srcs[0]]


def schedule_states(
    executions: list[Execution],
    host_bps: float | None,
    lmm_bps: float,
    f_hz: float,
    keep_intervals: bool = False,
) -> Schedule:
    """List-schedule the five states of every execution (see the module docstring). ``host_bps`` None:
    the host shares DDR3 (no copies)."""
    durations = [
        (
            e.bytes_in / host_bps if host_bps else 0.0,
            e.bytes_in / lmm_bps,
            e.cycles / f_hz,
            e.bytes_out / lmm_bps,
            e.bytes_out / host_bps if host_bps else 0.0,
        )
        for e in executions
    ]
    count = len(durations)
    end = [[0.0] * count for _ in range(5)]
    nxt = [0] * 5
    free = {"host": 0.0, "lmm": 0.0, "writeback": 0.0}
    kept: list[tuple[int, int, float, float]] = []
    for _ in range(5 * count):
        best: tuple[float, int, int] | None = None
        for s in range(4, -1, -1):  # on a tie the later state goes first: it drains
            e = nxt[s]
            if e >= count or (s > 0 and nxt[s - 1] <= e):
                continue
            ready = max(end[s - 1][e] if s else 0.0, end[s][e - 1] if e else 0.0)
            begin = max(ready, free[_PATHS[s]])
            if best is None or begin < best[0]:
                best = (begin, s, e)
        assert best is not None
        begin, s, e = best
        end[s][e] = begin + durations[e][s]
        free[_PATHS[s]] = end[s][e]
        nxt[s] += 1
        if keep_intervals:
            kept.append((s + 1, e, begin, end[s][e]))
    busy = tuple(sum(d[s] for d in durations) for s in range(5))
    total = end[4][-1] if count else 0.0
    return Schedule((busy[0], busy[1], busy[2], busy[3], busy[4]), total, tuple(kept))
