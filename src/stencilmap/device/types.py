"""A device of the catalog as frozen dataclasses: ``Device`` (clock, off-chip and on-chip memory, resources,
operator latencies, archs), its FPGA ``ResourceModel`` and ``ClockModel``, ``MemoryBlocks``, ``Network``
and the resource amounts ``Cost``. The device files' schema and loading are ``device.catalog``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from stencilmap.device.latencies import OperatorLatencies
from stencilmap.errors import StencilmapError

DeviceKind = Literal["fpga", "cgra", "gpu", "cpu"]
Arch = Literal["soda", "stencilflow", "pcm", "cgra", "emax", "roofline"]
DTYPE_CLASSES = ("float32", "float64", "integer")


@dataclass(frozen=True, slots=True)
class Cost:
    """Amounts of named resources (``lut``, ``alm``, ``dsp``, ``bram18``, ...), sorted, zeros omitted."""

    amounts: tuple[tuple[str, float], ...] = ()

    @staticmethod
    def of(pairs: Mapping[str, float] | Iterable[tuple[str, float]]) -> Cost:
        acc: dict[str, float] = {}
        for name, n in pairs.items() if isinstance(pairs, Mapping) else pairs:
            acc[name] = acc.get(name, 0.0) + n
        return Cost(tuple(sorted((k, v) for k, v in acc.items() if v)))

    def __getitem__(self, name: str) -> float:
        return dict(self.amounts).get(name, 0.0)

    def __add__(self, other: Cost) -> Cost:
        return Cost.of((*self.amounts, *other.amounts))

    def scaled(self, factor: float) -> Cost:
        return Cost.of((k, v * factor) for k, v in self.amounts)

    def as_dict(self) -> dict[str, float]:
        return dict(self.amounts)


@dataclass(frozen=True, slots=True)
class ModuleCost:
    """Logic of one Design-IR module: ``fixed`` + ``per_fanout`` × fanout (SODA §4.3: forwarding modules
    grow linearly with fanout), times the 32-bit lanes of its data type."""

    fixed: Cost = Cost()
    per_fanout: Cost = Cost()


@dataclass(frozen=True, slots=True)
class ResourceModel:
    """Coefficients of an FPGA's resource model (see ``model.resources``).

    ``memory``: how on-chip storage is counted — ``blocks`` (SODA §4.3: a step function Θ(width, depth) of
    the device's RAM block shapes) or ``bits`` (the OpenCL paper reports Stratix V memory in bits).
    Storage of at most ``logic_storage_max_bits`` is built from logic (SODA §3.4: SRLs below 1024 bits)
    and, as SODA does, not counted. ``base``: SODA's auxiliary modules / OpenCL's R_base. ``ops``: the
    cost of one operation of each kind per dtype class (``float32``, ``float64``, ``integer``), ``scale``
    being a multiply by a power of two. ``max_utilization``: the fraction of a resource a design may use
    (OpenCL §5.1: 90% of the logic), 1 for the resources it does not name.
    """

    memory: Literal["blocks", "bits"]
    memory_resource: str
    logic_storage_max_bits: int
    max_utilization: tuple[tuple[str, float], ...]
    base: Cost
    modules: tuple[tuple[str, ModuleCost], ...]
    ops: tuple[tuple[str, tuple[tuple[str, Cost], ...]], ...]

    def limit(self, resource: str) -> float:
        return dict(self.max_utilization).get(resource, 1.0)

    def module(self, kind: str) -> ModuleCost:
        return dict(self.modules).get(kind, ModuleCost())

    def op(self, dtype_class: str, kind: str) -> Cost:
        """Cost of one operation; unknown kinds (math functions) cost a ``func``."""
        table = dict(dict(self.ops).get(dtype_class, ()))
        return table.get(kind, table.get("func", Cost()))


@dataclass(frozen=True, slots=True)
class ClockModel:
    """f(u): the design clock in MHz against the utilization u of ``resource``, piecewise linear through
    ``points`` (u strictly increasing in [0, 1]), flat outside them (OpenCL §5.1, Fig. 10)."""

    resource: str
    points: tuple[tuple[float, float], ...]

    def mhz(self, utilization: float) -> float:
        """The clock of a design using ``utilization`` of the resource."""
        us = [u for u, _ in self.points]
        fs = [f for _, f in self.points]
        return float(np.interp(utilization, us, fs))

    def mhz_array(self, utilization: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``mhz`` element-wise (the explorer's candidates)."""
        us = np.array([u for u, _ in self.points])
        fs = np.array([f for _, f in self.points])
        out: npt.NDArray[np.float64] = np.interp(utilization, us, fs)
        return out

    @property
    def fastest_mhz(self) -> float:
        return max(f for _, f in self.points)


@dataclass(frozen=True, slots=True)
class MemoryBlocks:
    """On-chip RAM blocks (``BRAM18``, ``M20K``): how many, and the (width bits, depth) shapes one takes."""

    name: str
    count: int
    shapes: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Network:
    """The links joining two devices of this kind (StencilFlow §VI-B: SMI over the QSFP ports): ``links``
    links of ``link_bandwidth_gbs`` each between two communicating devices, ``link_latency_ns`` per hop,
    carrying packets of ``packet_bytes`` with ``payload_bytes`` of data (0, 0: raw bytes)."""

    link_bandwidth_gbs: float
    link_latency_ns: float
    links: int
    packet_bytes: int = 0  # 0: a raw byte stream; else the links' packet (SMI: 32 B) …
    payload_bytes: int = 0  # … of which this much is data (SMI: 28 B; ``point.NetworkLink.wire_bytes``)

    def bytes_per_cycle(self, clock_mhz: float) -> float:
        """What all the links between two devices carry per cycle of a design clocked at ``clock_mhz``."""
        return self.links * self.link_bandwidth_gbs * 1e9 / (clock_mhz * 1e6)

    def latency_cycles(self, clock_mhz: float) -> int:
        """The latency of one hop in design cycles (at least 1)."""
        return max(1, round(self.link_latency_ns * clock_mhz / 1e3))


@dataclass(frozen=True, slots=True)
class Cores:
    """A CPU's or GPU's execution units and the cache a blocked code keeps its tiles in (the CPU/GPU
    baseline model, ``model.baseline``). ``units``: CPU cores or GPU SMs; ``lanes``: floating-point lanes
    of one pipe by dtype (AVX2: 8 float32, 4 float64; an SM: its FP32 / FP64 cores); ``pipes``: pipes that
    issue one vector instruction a cycle each (Haswell: ports 0 and 1); ``cache_bytes``: the blocking
    cache of one unit (a CPU core's share of the last-level cache, a GPU SM's shared memory);
    ``cache_bytes_per_cycle``: what that cache delivers to one unit a cycle; the efficiencies: the share of
    the issue rate and of the cache bandwidth a tuned code reaches (``sources`` says where each comes from);
    ``fma``: the pipes fuse a multiply and an add (Haswell's AVX2, every CUDA core; not Sandy/Ivy Bridge)."""

    units: int
    lanes: tuple[tuple[str, float], ...]
    pipes: int
    fma: bool
    cache_bytes: int
    cache_bytes_per_cycle: float
    compute_efficiency: float
    cache_efficiency: float

    def instructions_per_second(
        self, dtype: str, clock_mhz: float, units: int | None = None, vector_bits: int | None = None
    ) -> float:
        """Lane-instructions a second: units × lanes × pipes × clock, on ``units`` of them (None: all) with
        vectors at most ``vector_bits`` wide (None: the device's)."""
        lanes = dict(self.lanes).get(dtype, dict(self.lanes)["float32"])
        if vector_bits is not None:
            lanes = min(lanes, max(1.0, vector_bits / (64 if dtype == "float64" else 32)))
        used = self.units if units is None else min(units, self.units)
        return used * lanes * self.pipes * clock_mhz * 1e6

    def peak_gops(self, dtype: str, clock_mhz: float) -> float:
        """units × lanes × pipes × clock × 2 with fused multiply-adds (two operations), else × 1."""
        return self.instructions_per_second(dtype, clock_mhz) * (2 if self.fma else 1) / 1e9


@dataclass(frozen=True, slots=True)
class Device:
    """One board or fabric. Bandwidths in GB/s (10⁹ bytes/s), clocks in MHz, ``onchip_bits`` in bits."""

    name: str
    description: str
    kind: DeviceKind
    clock_mhz: float
    dram_banks: int
    bus_width_bits: int  # S_bus of one bank (OpenCL eq. 3), in bits
    mem_clock_mhz: float  # f_mem: transfers per second of one bank, in MT/s
    bandwidth_gbs: float  # peak: S_bus × f_mem × N_mem
    mem_efficiency: float  # E_coef (OpenCL eq. 3)
    host_bandwidth_gbs: float | None  # None: the device shares the host's memory (no copies)
    launch_overhead_us: float  # t_ctrl of OpenCL eq. 1: host control per kernel launch
    peak_gops: tuple[tuple[str, float], ...]  # by dtype: float32, float64
    onchip_bits: int | None
    memory_blocks: MemoryBlocks | None
    resources: tuple[tuple[str, int], ...]
    latencies: tuple[tuple[str, int], ...]
    archs: tuple[Arch, ...]
    resource_model: ResourceModel | None = None
    part: str | None = None
    sources: tuple[str, ...] = ()
    board: str | None = None  # Intel FPGAs: the ``aoc -board=`` name of the board's BSP
    memory_interleaved: bool = False  # global memory interleaved across all banks unless pinned
    clock_model: ClockModel | None = None  # the clock against logic utilization (OpenCL Fig. 10)
    memory_kind: Literal["ddr", "hbm"] = "ddr"  # hbm: every bank is one HBM pseudo-channel
    network: Network | None = None  # links to other devices (StencilFlow §VI-B, SMI)
    #: (access-point width in bits, GB/s): the memory system's plateau when every access point is that
    #: wide, piecewise linear in the width and flat beyond the ends (StencilFlow §VIII-D, Fig. 16); empty:
    #: B_prac whatever the access points
    access_point_bandwidth: tuple[tuple[float, float], ...] = ()
    #: execution units and blocking cache of a CPU or GPU (``model.baseline``); None: not modelled
    cores: Cores | None = None
    #: NVIDIA GPUs: the compute capability, ``"7.0"`` — the architecture (``sm_70``) NVRTC compiles the
    #: generated CUDA for where no GPU runs it (``compile``'s check, ``backends.nvrtc``); None: not a CUDA GPU
    compute_capability: str | None = None

    @property
    def cuda_arch(self) -> str | None:
        """NVRTC's name of ``compute_capability``: ``sm_70``."""
        cc = self.compute_capability
        return None if cc is None else "sm_" + cc.replace(".", "")

    def access_point_plateau_gbs(self, bits_per_point: float | None) -> float:
        """The bandwidth the memory system delivers to access points ``bits_per_point`` wide (their mean
        width; None: unknown), at most B_prac: StencilFlow §VIII-D, Fig. 16 — 32-bit access points flatten
        at 36.4 GB/s past 24 of them (the memory controller's crossbar and the routing of many narrow
        accesses across the device), 4-wide ones at 58.3 GB/s."""
        pts = self.access_point_bandwidth
        if not pts or bits_per_point is None or bits_per_point <= 0:
            return self.practical_bandwidth_gbs
        if bits_per_point <= pts[0][0]:
            plateau = pts[0][1]
        elif bits_per_point >= pts[-1][0]:
            plateau = pts[-1][1]
        else:
            plateau = pts[-1][1]
            for (b0, g0), (b1, g1) in pairwise(pts):
                if b0 <= bits_per_point <= b1:
                    plateau = g0 + (g1 - g0) * (bits_per_point - b0) / (b1 - b0)
                    break
        return min(plateau, self.practical_bandwidth_gbs)

    def interleaved_banks(self, pinned: bool) -> int:
        """Banks one memory port's traffic spreads over: all N_mem on a ``memory_interleaved`` device
        running a program that pins no bank, else the one bank the port sits on."""
        return self.dram_banks if self.memory_interleaved and not pinned else 1

    def bank_rate(
        self, pinned: bool, clock_mhz: float | None = None, access_bits: float | None = None
    ) -> float:
        """Practical bytes per design cycle behind one bank number of a design: one bank's
        B_prac / N_mem / f, or B_prac / f when the device interleaves an unpinned program's ports over
        all its banks (OpenCL eq. 3 over the banks the port really uses); scaled by the access-point
        plateau over B_prac when the design's access points are ``access_bits`` wide (StencilFlow
        §VIII-D, Fig. 16; ``access_point_plateau_gbs``)."""
        rate = self.bytes_per_cycle_per_bank(clock_mhz) * self.interleaved_banks(pinned)
        if not self.access_point_bandwidth or access_bits is None:
            return rate
        share = self.access_point_plateau_gbs(access_bits) / self.practical_bandwidth_gbs
        return rate if share >= 1 - 1e-4 else rate * share  # a plateau at B_prac (to the file's rounding)

    @property
    def practical_bandwidth_gbs(self) -> float:
        """B_prac = S_bus × f_mem × N_mem × E_coef (OpenCL eq. 3), all banks together, taken from the
        quoted peak (which the catalog checks equals S_bus × f_mem × N_mem within 1%)."""
        return self.bandwidth_gbs * self.mem_efficiency

    def bytes_per_cycle_per_bank(self, clock_mhz: float | None = None) -> float:
        """Practical bytes one DRAM bank delivers per design clock cycle: B_prac / N_mem / f.

        ``clock_mhz``: the design clock (default: the device's).
        """
        clock = self.clock_mhz if clock_mhz is None else clock_mhz
        if clock <= 0:
            raise StencilmapError(f"the clock must be positive, got {clock} MHz")
        return self.practical_bandwidth_gbs * 1e9 / self.dram_banks / (clock * 1e6)

    def operator_latencies(self) -> OperatorLatencies:
        """The device's operator latency table as ``analysis.latency.OperatorLatencies``."""
        table = dict(self.latencies)
        fields = {k: table[k] for k in _LATENCY_FIELDS if k in table}
        named = tuple(sorted((k, v) for k, v in table.items() if k not in _LATENCY_FIELDS))
        return OperatorLatencies(**fields, functions=named)

    def peak(self, dtype: str) -> float:
        """Peak GOp/s for ``float32`` or ``float64`` arithmetic (integer programs use the float32 figure)."""
        table = dict(self.peak_gops)
        return table.get(dtype, table["float32"])

    def resource(self, name: str) -> int | None:
        return dict(self.resources).get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "part": self.part,
            "board": self.board,
            "clock_mhz": self.clock_mhz,
            "dram_banks": self.dram_banks,
            "bus_width_bits": self.bus_width_bits,
            "mem_clock_mhz": self.mem_clock_mhz,
            "bandwidth_gbs": self.bandwidth_gbs,
            "mem_efficiency": self.mem_efficiency,
            "memory_interleaved": self.memory_interleaved,
            "memory_kind": self.memory_kind,
            "compute_capability": self.compute_capability,
            "practical_bandwidth_gbs": round(self.practical_bandwidth_gbs, 6),
            "host_bandwidth_gbs": self.host_bandwidth_gbs,
            "launch_overhead_us": self.launch_overhead_us,
            "peak_gops": dict(self.peak_gops),
            "onchip_bits": self.onchip_bits,
            "memory_blocks": None
            if self.memory_blocks is None
            else {
                "name": self.memory_blocks.name,
                "count": self.memory_blocks.count,
                "shapes": [list(s) for s in self.memory_blocks.shapes],
            },
            "resources": dict(self.resources),
            "latencies": dict(self.latencies),
            "archs": list(self.archs),
            "clock_model": None
            if self.clock_model is None
            else {
                "resource": self.clock_model.resource,
                "points": [list(p) for p in self.clock_model.points],
            },
            "network": None
            if self.network is None
            else {
                "link_bandwidth_gbs": self.network.link_bandwidth_gbs,
                "link_latency_ns": self.network.link_latency_ns,
                "links": self.network.links,
            },
            "cores": None
            if self.cores is None
            else {
                "units": self.cores.units,
                "lanes": dict(self.cores.lanes),
                "pipes": self.cores.pipes,
                "fma": self.cores.fma,
                "cache_bytes": self.cores.cache_bytes,
                "cache_bytes_per_cycle": self.cores.cache_bytes_per_cycle,
                "compute_efficiency": self.cores.compute_efficiency,
                "cache_efficiency": self.cores.cache_efficiency,
            },
            "sources": list(self.sources),
        }


def practical_bandwidth(bus_width_bits: float, mem_clock_mhz: float, banks: int, efficiency: float) -> float:
    """B_prac in GB/s: S_bus × f_mem × N_mem × E_coef (OpenCL eq. 3; S_bus in bytes, f_mem in MT/s)."""
    return bus_width_bits / 8 * mem_clock_mhz * 1e6 * banks * efficiency / 1e9


_LATENCY_FIELDS = (
    "add",
    "mul",
    "div",
    "sqrt",
    "pow",
    "minmax",
    "compare",
    "select",
    "logic",
    "bitwise",
    "cast",
    "func",
)
