"""Cycles of a built design on a device — the figure a cycle-level simulation of the design checks.

A design streams P points a cycle (SODA's k, the PCM's P_cell, StencilFlow's W) through q chained
stages; one launch takes C = L + V cycles when nothing stalls (``analysis.timing``: StencilFlow §VIII-A
eq. 1, OpenCL eq. 5), V = tiles · ⌈N_tile / P⌉ beats, a tiled SODA design re-reading its halos (SODA
§4.2, §4.4). On top of that formula the model accounts for what the built designs really do:

* **latencies of the design**: L comes from the PEs' own latencies (``Module.latency``: the builders'
  operator table), plus the 3 handshake cycles of every stencil unit (``OperatorLatencies.unit``);
* **SODA reuse-chain segments**: a chain segment of d/k beats is a first-word fall-through FIFO between
  two registered links, 2 cycles from tap to tap when empty; with the taps' output links of
  ``LINK_DEPTH`` beats a segment of D beats sustains (D + LINK_DEPTH) / (2 + 2) ≥ 1 beat a cycle
  (``segment_rate``): every segment keeps up;
* **tile transitions**: a SODA tap emits its last tile's placeholders before it takes the next tile, so
  every tile after the first adds the largest reach of the pipeline (in beats) as a bubble;
* **per-bank bandwidth** (OpenCL eqs. 2–4 per bank, not over all banks): every memory port sits on one
  DRAM bank (bank 0 unless the program names one), each bank delivers B_prac / N_banks — except on a
  device whose global memory is interleaved (``Device.memory_interleaved``: Intel OpenCL boards) running
  a program that pins no bank, where the ports share all banks' B_prac (``memory_rate``). The launch is
  modelled in three phases (``launch_cycles``): the fill, when only readers use their banks, until the
  first result reaches the writers (the reach stretched by the readers' rate); the steady state, readers
  and writers sharing their banks; the drain, writers emptying the pipeline after the last read. Each
  memory port moves at most one beat a cycle.

The simulator reports two cycles more than C: the writer sees the last result one cycle after it is
produced, and the run ends the cycle after the writer's last beat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import ceil, inf, prod
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.analysis.dag import Edge, pass_graph
from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.analysis.windows import access_sets, strides
from stencilmap.design.common import LINK_DEPTH, memory_bank, with_iterate
from stencilmap.design.ir import Design, ParamValue
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError
from stencilmap.model.performance import Scenario, required_bandwidth
from stencilmap.model.workload import workload
from stencilmap.program.ir import Program

#: cycles an element takes from one SODA tap, through a FIFO, to the next tap (link, FIFO, link)
SEGMENT_CYCLES = 2

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class BankLoad:
    """Bytes one launch reads from and writes to one DRAM bank."""

    bank: int
    read_bytes: float
    write_bytes: float


@dataclass(frozen=True, slots=True)
class DesignTiming:
    """q stages on chip, P lanes, latency L (drain D: L without the reaches), V beats per launch."""

    q: int
    lanes: int
    latency: int
    stream_shape: tuple[int, ...]
    stream_points: int  # tiles · N_tile: the points one launch streams
    bytes_per_point: float
    drain: int
    vectors: int  # V = tiles · ⌈N_tile / P⌉
    tiles: int
    chain_rate: float  # beats a cycle the design sustains with unlimited bandwidth
    bubble: int  # cycles lost at the tile transitions
    banks: tuple[BankLoad, ...]
    pinned: bool = True  # the program names a bank for some memory port (``pins_banks``)
    access_points: int = 0  # memory ports (readers and writers): StencilFlow §VIII-D's access points
    access_bits: float | None = None  # their mean width in bits (None: no port)

    @property
    def compute_cycles(self) -> int:
        """C = L + V / rate + bubbles: one launch when memory keeps up."""
        return ceil(self.cycles_at(None) - 1e-9)

    def cycles_at(self, bytes_per_cycle_per_bank: float | None) -> float:
        """Cycles of one launch when every bank delivers ``bytes_per_cycle_per_bank`` (None: unlimited)."""
        rate = inf if bytes_per_cycle_per_bank is None else bytes_per_cycle_per_bank
        read = np.array([b.read_bytes / self.vectors for b in self.banks], dtype=np.float64)
        write = np.array([b.write_bytes / self.vectors for b in self.banks], dtype=np.float64)
        latency, drain, vectors, chain, bubble = (
            np.array(float(x)) for x in (self.latency, self.drain, self.vectors, self.chain_rate, self.bubble)
        )
        cycles = launch_cycles(latency, drain, vectors, chain, bubble, read, write, rate)
        return float(cycles)

    def required_bandwidth_gbs(self, clock_mhz: float) -> float:
        """B_req (OpenCL eq. 2) at ``clock_mhz``, all banks together."""
        return required_bandwidth(self.bytes_per_point, self.lanes, clock_mhz * 1e6) / 1e9

    def scenario(self, device: Device, clock_mhz: float) -> Scenario:
        """``bandwidth`` when a bank, not the pipeline, sets the steady-state rate (OpenCL eq. 4, per bank)."""
        rate = device.bank_rate(self.pinned, clock_mhz, self.access_bits)
        bank = min((rate * self.vectors / (b.read_bytes + b.write_bytes) for b in self.banks), default=inf)
        return "bandwidth" if bank < min(1.0, self.chain_rate) else "compute"

    def cycles(self, device: Device, clock_mhz: float | None = None) -> float:
        """Cycles of one launch on ``device`` at ``clock_mhz`` (default: the device's clock)."""
        return self.cycles_at(device.bank_rate(self.pinned, clock_mhz, self.access_bits))

    def achieved_bandwidth_gbs(self, device: Device, clock_mhz: float) -> float:
        """What the memory system delivers to this design: B_req, at most the plateau of its access
        points (StencilFlow §VIII-D, Fig. 16: ``Device.access_point_plateau_gbs``), all banks together."""
        return min(self.required_bandwidth_gbs(clock_mhz), device.access_point_plateau_gbs(self.access_bits))


def pins_banks(program: Program) -> bool:
    """Whether ``program`` names a DRAM bank for any input or output (SODA ``input dram N``)."""
    return any(i.banks for i in program.inputs) or any(s.banks for s in program.stencils)


def _width(value: ParamValue | None) -> int:
    return value if isinstance(value, int) and value > 0 else 1


def access_points(design: Design, program: Program) -> tuple[int, float | None]:
    """The memory ports of ``design`` (StencilFlow §VIII-D's access points) and their mean width in bits:
    a port moves ``width`` elements of its field a cycle."""
    bits = [
        8 * itemsize(program.field_dtype(str(m.param("field")))) * _width(m.param("width", 1))
        for m in design.modules
        if m.kind in ("reader", "writer")
    ]
    return len(bits), (sum(bits) / len(bits) if bits else None)


def port_bits(program: Program, lanes: int) -> float:
    """The mean width in bits of the memory ports of a design of ``program`` with ``lanes`` lanes (every
    builder's reader and writer moves ``lanes`` elements a cycle): what ``explore`` gives
    ``Device.bank_rate`` without building the design, as ``access_points`` does for a built one."""
    fields = [i.name for i in program.inputs] + list(program.outputs)
    return lanes * 8 * sum(itemsize(program.field_dtype(f)) for f in fields) / max(1, len(fields))


def memory_rate(
    device: Device, program: Program, clock_mhz: float | None = None, design: Design | None = None
) -> float:
    """Bytes per cycle behind each bank number of a design built from ``program`` on ``device``: one
    bank's B_prac / N_mem / f, or all banks' B_prac / f on a device that interleaves the global memory of
    a program pinning no bank (every port of such a program sits on bank 0: ``design.common.bank_of``).
    What ``estimate`` and ``explore`` predict with and ``simulate`` limits the memory ports to; with
    ``design``, at the plateau of its access points (StencilFlow §VIII-D, Fig. 16)."""
    bits = None if design is None else access_points(design, program)[1]
    return device.bank_rate(pins_banks(program), clock_mhz, bits)


def launch_cycles(
    latency: Array,
    drain: Array,
    vectors: Array,
    chain_rate: Array,
    bubble: Array,
    read_cost: Array,
    write_cost: Array,
    rate: float | Array,
) -> Array:
    """Cycles of one launch, element-wise over candidate arrays (the explorer) or scalars (one design).

    ``read_cost`` / ``write_cost``: bytes per beat on each bank (last axis). ``rate``: bytes a bank
    delivers per cycle (``inf``: unlimited), or an array of them broadcasting over ``read_cost``. The three phases (module docstring), each port at most
    one beat a cycle:

    * fill: readers alone, ρ_A = min(1, rate / read); the first result reaches the writers after
      L_A = D + (L − D) / ρ_A, by when X = ρ_A · L_A beats are read;
    * steady state: ρ_B = min(chain rate, rate / (read + write)) until the last read at
      T_r = L_A + (V − X) / ρ_B (or V / ρ_A when the whole stream is read during the fill, V ≤ X);
    * drain: the writers empty the X beats in flight at ρ_C = min(chain rate, rate / write), not before
      the last result has crossed the pipeline (D).

    C = max(L + V / chain rate, T_r + max(X / ρ_C, D), L_A + V / ρ_C) + bubbles.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        read_rate = np.where(read_cost > 0, rate / read_cost, inf).min(axis=-1, initial=inf)
        shared = np.where(read_cost + write_cost > 0, rate / (read_cost + write_cost), inf)
        write_rate = np.where(write_cost > 0, rate / write_cost, inf).min(axis=-1, initial=inf)
        rho_a = np.minimum(1.0, read_rate)
        rho_b = np.minimum(chain_rate, shared.min(axis=-1, initial=inf))
        rho_c = np.minimum(chain_rate, write_rate)
        fill = drain + (latency - drain) / rho_a
        ahead = np.minimum(vectors, rho_a * fill)
        # a stream shorter than the pipeline is read whole during the fill: its last read is at V / ρ_A
        last_read = np.where(vectors <= rho_a * fill, vectors / rho_a, fill + (vectors - ahead) / rho_b)
        cycles = np.maximum(latency + vectors / chain_rate, last_read + np.maximum(ahead / rho_c, drain))
        cycles = np.maximum(cycles, fill + vectors / rho_c)
    result: Array = cycles + bubble
    return result


def segment_rate(fifo_depth: int) -> float:
    """Beats a cycle a SODA reuse-chain segment with a FIFO of ``fifo_depth`` sustains (module docstring):
    the segment spans D = depth + 1 beats, takes ``SEGMENT_CYCLES`` to cross, and its upper tap runs at
    most ``LINK_DEPTH`` beats ahead of the PEs."""
    return min(1.0, (fifo_depth + 1 + LINK_DEPTH) / (SEGMENT_CYCLES + 2))


@dataclass(frozen=True, slots=True)
class ChainLatencies:
    """Latency facts of q = 1 … q_max chained copies, for every stream shape (rows) and lanes (columns)."""

    latency: Array  # (q_max, shapes, lanes): L of the first q copies
    drain: Array  # (q_max, shapes, lanes): D, the same without the reaches
    reach: Array  # (shapes, lanes): the largest reach of any edge, in beats


def chain_latencies(
    program: Program,
    q_max: int,
    stream_shapes: Sequence[tuple[int, ...]],
    lanes: Sequence[int],
    pe_latency: Mapping[str, int],
    unit: int = OperatorLatencies().unit,
) -> ChainLatencies:
    """L and D (``analysis.timing``'s recurrence, vectorized) of ``program`` chained 1 … ``q_max`` times.

    Node v of the unrolled DAG delivers its first result at t_v = λ_v + unit + max_u (t_u + ρ_uv),
    ρ_uv = min(⌈max(0, f_uv) / P⌉, N_v − 1) with f_uv the largest linearized offset at which v reads u
    over the stream shape; L(q) is the largest t_v over the first q copies. ``pe_latency``: λ of every
    stencil, as the design's PEs have it.
    """
    graph = pass_graph(with_iterate(program, q_max))
    into: dict[str, list[Edge]] = {}
    for e in graph.edges:
        into.setdefault(e.consumer, []).append(e)
    shapes = np.array(stream_shapes, dtype=np.int64).reshape(len(stream_shapes), -1)
    p = np.array(lanes, dtype=np.int64)[None, :]
    vectors = -(-shapes.prod(axis=1)[:, None] // p)
    forward = _forward_offsets(program, shapes)
    zero = np.zeros((len(shapes), p.shape[1]), dtype=np.int64)
    done: dict[str, Array] = {}
    drained: dict[str, Array] = {}
    latency = np.zeros((q_max, *zero.shape), dtype=np.int64)  # per copy first, then accumulated
    drain = np.zeros_like(latency)
    reach = zero.copy()
    for node in graph.nodes:
        if node.stencil is None:
            done[node.name] = drained[node.name] = zero
            continue
        start, path = zero, zero
        for e in into.get(node.name, ()):
            f = forward[(node.stencil.name, e.field)][:, None]
            rho = np.minimum(-(-np.maximum(0, f) // p), vectors - 1)
            reach = np.maximum(reach, rho)
            start = np.maximum(start, done[e.producer] + rho)
            path = np.maximum(path, drained[e.producer])
        compute = pe_latency[node.stencil.name] + unit
        done[node.name], drained[node.name] = start + compute, path + compute
        c = node.copy - 1
        latency[c] = np.maximum(latency[c], done[node.name])
        drain[c] = np.maximum(drain[c], drained[node.name])
    latency = np.maximum.accumulate(latency, axis=0)
    drain = np.maximum.accumulate(drain, axis=0)
    return ChainLatencies(latency, drain, reach)


def _forward_offsets(program: Program, shapes: Array) -> dict[tuple[str, str], Array]:
    """f: the largest linearized offset of every (stencil, field) read, per stream shape (rows)."""
    st = np.array([strides(tuple(int(n) for n in row)) for row in shapes], dtype=np.int64)
    out: dict[tuple[str, str], Array] = {}
    for stencil in program.stencils:
        for field, offsets in access_sets(stencil, program).items():
            axes = program.field_axes(field)
            lin = np.array(
                [[sum(o * row[a] for o, a in zip(off, axes, strict=True)) for off in offsets] for row in st],
                dtype=np.int64,
            )
            out[(stencil.name, field)] = lin.max(axis=1)
    return out


def design_timing(
    design: Design, program: Program, device: Device | None = None, *, lanes: str | None
) -> DesignTiming:
    """The timing of ``design``, built from the shape-bound ``program``, with the latencies of its PEs.

    ``device`` is accepted for compatibility: the latencies are the design's own — its PEs' — which the
    builders take from the device of ``BuildConfig.device`` (its file's ``latencies``), or from
    ``OperatorLatencies.default()`` when the design was built with no device. ``lanes``: the design
    parameter holding its lanes P (``arch.Arch.lanes``; None: an architecture this model does not time).
    """
    if lanes is None:
        raise StencilmapError(f"no timing model for '{design.arch}' designs")
    params = dict(design.parameters)
    lanes_p = int_param(params, lanes)
    pes = [m for m in design.modules if m.kind == "pe"]
    q = max((int_param(dict(m.params), "stage") for m in pes), default=1)
    shape = tuple(int(n or 0) for n in program.shape)
    stream = params.get("stream_shape", shape)
    assert isinstance(stream, tuple)
    stream_shape = tuple(int(n) for n in stream)
    tiles = int_param(params, "tiles_total") if "tiles_total" in params else 1
    pe_latency = {str(m.param("stencil")): m.latency for m in pes}
    for st in program.stencils:
        pe_latency.setdefault(st.name, 0)  # a stencil no output needs: not built
    chained = chain_latencies(program, q, [stream_shape], [lanes_p], pe_latency)
    vectors = tiles * -(-prod(stream_shape) // lanes_p)
    hops, net_rate = network_timing(design, with_iterate(program, q), lanes_p)
    ports, port_bits = access_points(design, program)
    return DesignTiming(
        q=q,
        lanes=lanes_p,
        latency=int(chained.latency[q - 1, 0, 0]) + hops,
        stream_shape=stream_shape,
        stream_points=tiles * prod(stream_shape),
        bytes_per_point=workload(program, shape).bytes_per_point,
        drain=int(chained.drain[q - 1, 0, 0]) + hops,
        vectors=vectors,
        tiles=tiles,
        chain_rate=min(design_chain_rate(design), net_rate),
        bubble=(tiles - 1) * int(chained.reach[0, 0]),
        banks=design_banks(design, program),
        pinned=pins_banks(program),
        access_points=ports,
        access_bits=port_bits,
    )


def network_timing(design: Design, program: Program, lanes: int) -> tuple[int, float]:
    """What the network links of a design split over devices (``design.partition``) add: the cycles
    they lengthen the critical path by — each cut edge arriving its link's latency plus one registered
    hop later (StencilFlow §VI-B) — and the slowest link's rate in beats a cycle (1 without links),
    which bounds the whole pipeline's: C = (L + hops) + V / rate. A reach behind a slow link fills while
    the stream flows at that rate, so it is not stretched on top of V / rate."""
    links = [m for m in design.modules if m.kind == "network"]
    if not links:
        return 0, 1.0
    sent = {(str(m.param("producer")), m.param("dst_device")): m.latency + 1 for m in links}
    units = _units(design)
    extra: dict[str, int] = {}
    for e in pass_graph(program).edges:
        device = design.module(f"{e.consumer}.pe").param("device") if e.consumer in units else None
        hop = sent.get((e.producer, device))
        if hop is not None:
            extra[e.key] = hop
    shape = tuple(int(n or 0) for n in program.shape)
    base = pipeline_timing(program, shape, lanes).latency
    split = pipeline_timing(program, shape, lanes, extra=extra).latency
    return split - base, min(float(str(m.param("rate", 1.0))) for m in links)


def _units(design: Design) -> set[str]:
    return {m.name[: -len(".pe")] for m in design.modules if m.kind == "pe"}


def predicted_cycles(
    design: Design, program: Program, bytes_per_cycle_per_bank: float | None, *, lanes: str | None
) -> int:
    """The one prediction of a design's cycles per launch, with each bank delivering
    ``bytes_per_cycle_per_bank`` (None: unlimited memory): what ``estimate`` reports, ``explore`` ranks by
    and ``simulate`` compares the simulated cycles with."""
    return round(design_timing(design, program, lanes=lanes).cycles_at(bytes_per_cycle_per_bank))


def design_chain_rate(design: Design) -> float:
    """The slowest SODA reuse-chain segment of ``design`` (1 for designs without chain FIFOs)."""
    depths = [m.param("depth") for m in design.modules if m.kind == "fifo"]
    return min((segment_rate(int(d)) for d in depths if isinstance(d, int)), default=1.0)


def design_banks(design: Design, program: Program) -> tuple[BankLoad, ...]:
    """Bytes per launch on every bank the memory ports of ``design`` use: a reader moves the points it
    reads (its field's own size, halos re-read when tiled), a writer the grid's points."""
    grid = prod(int(n or 0) for n in program.shape)
    read: dict[int, float] = {}
    write: dict[int, float] = {}
    for m in design.modules:
        if m.kind not in ("reader", "writer"):
            continue
        size = itemsize(program.field_dtype(str(m.param("field"))))
        bank = memory_bank(m)
        if m.kind == "reader":
            read[bank] = read.get(bank, 0.0) + size * int_param(dict(m.params), "points")
        else:
            write[bank] = write.get(bank, 0.0) + size * grid
    return tuple(BankLoad(b, read.get(b, 0.0), write.get(b, 0.0)) for b in sorted({*read, *write}))


def int_param(params: dict[str, ParamValue], key: str) -> int:
    """An integer parameter of a design or module."""
    value = params.get(key)
    if not isinstance(value, int):
        raise StencilmapError(f"the design lacks an integer parameter '{key}'")
    return value
