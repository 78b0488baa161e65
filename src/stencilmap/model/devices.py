"""The device catalog: one JSON file per board or fabric under ``model/devices/``, loaded into ``Device``.

A device file gives the clock, the off-chip memory (banks × bus width × data rate, with the memory
controller's efficiency E_coef), the host link, on-chip memory, resource counts, operator latencies,
the microarchitectures (``archs``) the models evaluate on it, and for FPGAs the resource-model
coefficients (SODA §4.3 module costs, OpenCL eqs. 9–10's R_PE / R_shift / R_base). Every file lists its
``sources``: the paper figures it reproduces and the assumptions it makes.

``memory_interleaved`` (default false): the board's global memory is interleaved across all its banks
unless a program pins buffers to banks — Intel's OpenCL SDK does this by default (burst-interleaving;
pinning a buffer needs ``--no-interleaving``). A program that names no bank (SODA ``input dram N``) then
streams every port over all N_mem banks together, at B_prac (OpenCL eq. 3) rather than B_prac / N_mem;
a program that pins any port gets the pinned layout, its unpinned ports on bank 0 (``Device.bank_rate``).

``memory_kind`` (optional, default ``ddr``): ``hbm`` says the banks are HBM pseudo-channels (the Alveo
U280's 32 of 14.375 GB/s, UG1393): each memory port of a design sits on the one channel its bank number
names, as a Vitis kernel's AXI port connects to one PC, so a design gains HBM's aggregate bandwidth only by
spreading its ports over many channels — one channel delivers less than one DDR4 bank (UG1393).

``clock_model`` (optional, FPGAs): the design clock as a function of the utilization of one logic
resource, piecewise linear through (utilization, MHz) points and flat beyond the first and last — the
OpenCL paper's Fig. 10 on the DE5: about 300 MHz below 75% of the ALMs, falling to 270 MHz at 85%, about
270 MHz to 90% (§5.1). ``estimate`` and ``explore`` use it for a design's clock when the user gives none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import pairwise
from math import isfinite
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stencilmap.analysis.latency import OperatorLatencies
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
    links of ``link_bandwidth_gbs`` each between two communicating devices, ``link_latency_ns`` per hop."""

    link_bandwidth_gbs: float
    link_latency_ns: float
    links: int

    def bytes_per_cycle(self, clock_mhz: float) -> float:
        """What all the links between two devices carry per cycle of a design clocked at ``clock_mhz``."""
        return self.links * self.link_bandwidth_gbs * 1e9 / (clock_mhz * 1e6)

    def latency_cycles(self, clock_mhz: float) -> int:
        """The latency of one hop in design cycles (at least 1)."""
        return max(1, round(self.link_latency_ns * clock_mhz / 1e3))


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
    memory_interleaved: bool = False  # global memory interleaved across all banks unless pinned
    clock_model: ClockModel | None = None  # the clock against logic utilization (OpenCL Fig. 10)
    memory_kind: Literal["ddr", "hbm"] = "ddr"  # hbm: every bank is one HBM pseudo-channel
    network: Network | None = None  # links to other devices (StencilFlow §VI-B, SMI)

    def interleaved_banks(self, pinned: bool) -> int:
        """Banks one memory port's traffic spreads over: all N_mem on a ``memory_interleaved`` device
        running a program that pins no bank, else the one bank the port sits on."""
        return self.dram_banks if self.memory_interleaved and not pinned else 1

    def bank_rate(self, pinned: bool, clock_mhz: float | None = None) -> float:
        """Practical bytes per design cycle behind one bank number of a design: one bank's
        B_prac / N_mem / f, or B_prac / f when the device interleaves an unpinned program's ports over
        all its banks (OpenCL eq. 3 over the banks the port really uses)."""
        return self.bytes_per_cycle_per_bank(clock_mhz) * self.interleaved_banks(pinned)

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
            "clock_mhz": self.clock_mhz,
            "dram_banks": self.dram_banks,
            "bus_width_bits": self.bus_width_bits,
            "mem_clock_mhz": self.mem_clock_mhz,
            "bandwidth_gbs": self.bandwidth_gbs,
            "mem_efficiency": self.mem_efficiency,
            "memory_interleaved": self.memory_interleaved,
            "memory_kind": self.memory_kind,
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

# ----------------------------------------------------------------------------------------- the files


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ModuleCostSpec(_Strict):
    fixed: dict[str, float] = Field(default_factory=dict)
    per_fanout: dict[str, float] = Field(default_factory=dict)


class _ResourceModelSpec(_Strict):
    memory: Literal["blocks", "bits"]
    memory_resource: str
    logic_storage_max_bits: int = Field(ge=0)
    max_utilization: dict[str, float] = Field(default_factory=dict)
    base: dict[str, float]
    modules: dict[str, _ModuleCostSpec]
    ops: dict[Literal["float32", "float64", "integer"], dict[str, dict[str, float]]]


class _ClockModelSpec(_Strict):
    resource: str
    points: list[tuple[float, float]] = Field(min_length=2)


class _BlocksSpec(_Strict):
    name: str
    count: int = Field(gt=0)
    shapes: list[tuple[int, int]] = Field(min_length=1)


class _NetworkSpec(_Strict):
    link_bandwidth_gbs: float = Field(gt=0)
    link_latency_ns: float = Field(ge=0)
    links: int = Field(gt=0)


class _DeviceSpec(_Strict):
    name: str
    description: str
    kind: DeviceKind
    part: str | None = None
    clock_mhz: float = Field(gt=0)
    dram_banks: int = Field(gt=0)
    bus_width_bits: int = Field(gt=0)
    mem_clock_mhz: float = Field(gt=0)
    bandwidth_gbs: float = Field(gt=0)
    mem_efficiency: float = Field(gt=0, le=1)
    memory_interleaved: bool = Field(default=False, strict=True)
    memory_kind: Literal["ddr", "hbm"] = "ddr"
    host_bandwidth_gbs: float | None = Field(default=None, gt=0)
    launch_overhead_us: float = Field(ge=0)
    peak_gops: dict[Literal["float32", "float64"], float]
    onchip_bits: int | None = Field(default=None, gt=0)
    memory_blocks: _BlocksSpec | None = None
    resources: dict[str, int]
    latencies: dict[str, int]
    archs: list[Arch] = Field(min_length=1)
    resource_model: _ResourceModelSpec | None = None
    clock_model: _ClockModelSpec | None = None
    network: _NetworkSpec | None = None
    sources: list[str] = Field(default_factory=list)


def _device(spec: _DeviceSpec) -> Device:
    rm = spec.resource_model
    model = None
    if rm is not None:
        model = ResourceModel(
            memory=rm.memory,
            memory_resource=rm.memory_resource,
            logic_storage_max_bits=rm.logic_storage_max_bits,
            max_utilization=tuple(sorted(rm.max_utilization.items())),
            base=Cost.of(rm.base),
            modules=tuple(
                sorted(
                    (k, ModuleCost(Cost.of(m.fixed), Cost.of(m.per_fanout))) for k, m in rm.modules.items()
                )
            ),
            ops=tuple(
                sorted(
                    (cls, tuple(sorted((kind, Cost.of(c)) for kind, c in table.items())))
                    for cls, table in rm.ops.items()
                )
            ),
        )
    blocks = spec.memory_blocks
    return Device(
        name=spec.name,
        description=spec.description,
        kind=spec.kind,
        clock_mhz=spec.clock_mhz,
        dram_banks=spec.dram_banks,
        bus_width_bits=spec.bus_width_bits,
        mem_clock_mhz=spec.mem_clock_mhz,
        bandwidth_gbs=spec.bandwidth_gbs,
        mem_efficiency=spec.mem_efficiency,
        host_bandwidth_gbs=spec.host_bandwidth_gbs,
        launch_overhead_us=spec.launch_overhead_us,
        peak_gops=tuple(sorted(spec.peak_gops.items())),
        onchip_bits=spec.onchip_bits,
        memory_blocks=None
        if blocks is None
        else MemoryBlocks(blocks.name, blocks.count, tuple((w, d) for w, d in blocks.shapes)),
        resources=tuple(sorted(spec.resources.items())),
        latencies=tuple(sorted(spec.latencies.items())),
        archs=tuple(spec.archs),
        resource_model=model,
        part=spec.part,
        sources=tuple(spec.sources),
        memory_interleaved=spec.memory_interleaved,
        memory_kind=spec.memory_kind,
        clock_model=None
        if spec.clock_model is None
        else ClockModel(spec.clock_model.resource, tuple((u, f) for u, f in spec.clock_model.points)),
        network=None if spec.network is None else Network(**spec.network.model_dump()),
    )


def _check(device: Device, where: str) -> None:
    """The catalog's invariants: the quoted peak bandwidth is S_bus × f_mem × N_mem (within 1%), an FPGA
    has a resource model whose resources it counts, and the float32 peak is given."""
    computed = practical_bandwidth(device.bus_width_bits, device.mem_clock_mhz, device.dram_banks, 1.0)
    if abs(computed - device.bandwidth_gbs) > 0.01 * device.bandwidth_gbs:
        raise StencilmapError(
            f"bandwidth_gbs {device.bandwidth_gbs} disagrees with bus × clock × banks = {computed:.2f}", where
        )
    if "float32" not in dict(device.peak_gops):
        raise StencilmapError("peak_gops needs a float32 figure", where)
    rm = device.resource_model
    if device.kind == "fpga":
        if rm is None:
            raise StencilmapError("an FPGA needs a resource_model", where)
        missing = {rm.memory_resource, *rm.base.as_dict(), *dict(rm.max_utilization)} - set(
            dict(device.resources)
        )
        if missing:
            raise StencilmapError(
                f"resource_model names resources the device lacks: {sorted(missing)}", where
            )
        if any(not 0 < v <= 1 for _, v in rm.max_utilization):
            raise StencilmapError("max_utilization fractions must lie in (0, 1]", where)
        if rm.memory == "blocks" and device.memory_blocks is None:
            raise StencilmapError("a block memory model needs memory_blocks", where)
    _check_clock_model(device, where)
    if device.memory_interleaved and device.kind != "fpga":
        raise StencilmapError("memory_interleaved describes an FPGA board's banks (kind fpga)", where)


def _check_clock_model(device: Device, where: str) -> None:
    """An FPGA's clock model names a resource it counts; utilizations strictly increase within [0, 1];
    every clock is a positive finite number of MHz."""
    cm = device.clock_model
    if cm is None:
        return
    if device.kind != "fpga":
        raise StencilmapError("clock_model describes an FPGA design's clock (kind fpga)", where)
    if device.resource(cm.resource) is None:
        raise StencilmapError(f"clock_model.resource: the device counts no '{cm.resource}'", where)
    us = [u for u, _ in cm.points]
    if any(not (isfinite(u) and 0 <= u <= 1) for u in us) or any(b <= a for a, b in pairwise(us)):
        raise StencilmapError("clock_model.points: utilizations must increase strictly within [0, 1]", where)
    if any(not (isfinite(f) and 0 < f <= 1e6) for _, f in cm.points):
        raise StencilmapError("clock_model.points: clocks must be positive numbers of MHz", where)


def _files() -> dict[str, Any]:
    folder = resources.files("stencilmap.model") / "devices"
    return {p.name[: -len(".json")]: p for p in folder.iterdir() if p.name.endswith(".json")}


def device_names() -> tuple[str, ...]:
    """The names of every device in the catalog, sorted."""
    return tuple(sorted(_files()))


#: Largest device file read from a path (the catalog's are under 4 kB).
MAX_DEVICE_FILE_BYTES = 1 << 20


def is_device_path(name: str) -> bool:
    """Whether ``--device`` names a file (``PATH.json``, or anything with a folder) rather than the catalog."""
    return name.endswith(".json") or "/" in name or "\\" in name


@cache
def load_device(name: str) -> Device:
    """The catalog's device ``name``, or the device file at ``name`` (``PATH.json``, the catalog's schema:
    see any file of ``model/devices/``); a StencilmapError names the file and the JSON path of what is
    wrong, or lists the known names."""
    if is_device_path(name):
        return _device_file(Path(name))
    files = _files()
    if name not in files:
        raise StencilmapError(f"unknown device '{name}' (known: {', '.join(sorted(files))}; or a PATH.json)")
    where = f"device file {name}.json"
    device = _parse(files[name].read_text(encoding="utf-8"), where)
    if device.name != name:
        raise StencilmapError(f"the file names device '{device.name}'", where)
    return device


def device_text(name: str) -> tuple[str, str]:
    """The JSON text of the catalog's device ``name`` or of the file at ``name``, with where it came from
    (``stencilmap calibrate`` copies it with a fitted ``resource_model``)."""
    load_device(name)  # the same checks and messages as loading it
    if is_device_path(name):
        return Path(name).read_text(encoding="utf-8"), name
    return _files()[name].read_text(encoding="utf-8"), f"device file {name}.json"


def parse_device(text: str, where: str) -> Device:
    """A device from the text of a device file (the catalog's schema and checks); ``where`` names it."""
    return _parse(text, where)


def _device_file(path: Path) -> Device:
    try:
        if not path.is_file():
            raise StencilmapError(
                "no such device file" if not path.exists() else "not a regular file", str(path)
            )
        if path.stat().st_size > MAX_DEVICE_FILE_BYTES:
            raise StencilmapError(f"larger than {MAX_DEVICE_FILE_BYTES:,} bytes for a device file", str(path))
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StencilmapError(f"cannot read the device file: {exc}", str(path)) from None
    return _parse(text, str(path))


def _parse(text: str, where: str) -> Device:
    try:
        spec = _DeviceSpec.model_validate(json.loads(text))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise StencilmapError(f"{loc}: {err['msg'].lower()}", where) from None
    except (ValueError, RecursionError) as exc:
        raise StencilmapError(f"not JSON: {str(exc).splitlines()[0]}", where) from None
    device = _device(spec)
    _check(device, where)
    return device
