"""The device catalog: one JSON file per board or fabric under ``device/files/``, loaded into ``Device``.

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

``compute_capability`` (optional, NVIDIA GPUs): ``"7.0"`` for the V100 — where no GPU runs the generated
CUDA, ``compile`` has NVRTC compile it for that architecture (``sm_70``) instead (``backends.nvrtc``).

``access_point_bandwidth`` (optional): ``[[bits, GB/s], ...]`` with increasing widths, the memory system's
plateau when every access point (memory port) of a design is that wide, piecewise linear in the mean width
and flat beyond the ends, capped at B_prac — StencilFlow §VIII-D, Fig. 16 on the 520N: 32-bit access
points flatten at 36.4 GB/s, 4-wide (128-bit) ones at 58.3 GB/s. A design's banks deliver that share of
B_prac (``Device.bank_rate``).

Every number of a file is bounded below and above (the clocks, bandwidths, peaks and latencies here, the
named resources' ``RESOURCE_BOUNDS``; docs/guide/models.md lists them): one past its bound is a one-line
error naming the file and the JSON path, as any other mistake in a file is.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from itertools import pairwise
from math import isfinite
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from stencilmap.device.types import (
    DTYPE_CLASSES,
    Arch,
    ClockModel,
    Cores,
    Cost,
    Device,
    DeviceKind,
    MemoryBlocks,
    ModuleCost,
    Network,
    ResourceModel,
    practical_bandwidth,
)
from stencilmap.errors import Location, StencilmapError, schema_message, schema_path
from stencilmap.names import check_name

__all__ = [
    "DTYPE_CLASSES",
    "MAX_DEVICE_FILE_BYTES",
    "Arch",
    "ClockModel",
    "Cores",
    "Cost",
    "Device",
    "DeviceKind",
    "MemoryBlocks",
    "ModuleCost",
    "Network",
    "ResourceModel",
    "device_names",
    "device_text",
    "is_device_path",
    "load_device",
    "parse_device",
    "practical_bandwidth",
]

# ----------------------------------------------------------------------------------------- the files


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ------------------------------------------------------------------------------- bounds of the numbers
# Every number of a device file is bounded below (a count, capacity, clock, bandwidth or peak is positive;
# a latency or overhead at least 0) and above: past these no real device lies, and the builders and the
# simulator do work in proportion to latencies, grids, queues and caches — a file may not make them
# explode. docs/guide/models.md ("Bounds of a device file") lists them.

#: Clocks (``clock_mhz``, ``mem_clock_mhz``, ``clock_model``) in MHz: 1 MHz to 1 THz.
MIN_CLOCK_MHZ, MAX_CLOCK_MHZ = 1.0, 1e6
#: Bandwidths (memory, host, network links, access points) in GB/s: 1 MB/s to 1 PB/s.
MIN_BANDWIDTH_GBS, MAX_BANDWIDTH_GBS = 1e-3, 1e6
#: Peak GOp/s: 1 MOp/s to 1 EOp/s.
MIN_PEAK_GOPS, MAX_PEAK_GOPS = 1e-3, 1e9
#: Operator latencies and a CGRA's load latency, in cycles: the simulators run a pipeline this deep,
#: and the CGRA simulator takes 10,000 cycles without a firing for a deadlock (``STALL_CYCLES``).
MAX_LATENCY_CYCLES = 1_000
#: Any resource count (LUTs, bits, MACs, ...) and resource-model cost.
MAX_RESOURCE = 10**12
#: Named resources the builders use, with their own bounds (the least and the most): the PE grid and its
#: MACs (the CGRA workers), queue entries, the scratchpad, the load latency and the load cache (the CGRA
#: simulator keeps sets × ways tags and waits line / fill cycles on a miss), EMAX's local memory.
RESOURCE_BOUNDS: dict[str, tuple[int, int]] = {
    "pe_rows": (1, 1024),
    "pe_columns": (1, 1024),
    "mac": (1, 1 << 20),
    "queue_entries": (1, 1024),
    "scratchpad_bytes": (1, 1 << 32),
    "load_latency": (0, MAX_LATENCY_CYCLES),
    "cache_bytes": (1, 1 << 24),
    "cache_ways": (1, 64),
    "cache_line_bytes": (1, 4096),
    "cache_fill_bytes": (1, 4096),
    "lmm_bytes": (1, 1 << 24),
}
#: The resources a CGRA of workers (arch ``cgra``) and EMAX (arch ``emax``) must count.
ARCH_RESOURCES: dict[str, tuple[str, ...]] = {
    "cgra": ("pe_rows", "pe_columns", "mac", "queue_entries", "scratchpad_bytes", "load_latency"),
    "emax": ("pe_rows", "pe_columns", "lmm_bytes"),
}
#: A CGRA's load cache: all four resources or none.
CACHE_RESOURCES = ("cache_bytes", "cache_ways", "cache_line_bytes", "cache_fill_bytes")


def _integer(value: object) -> object:
    """An integer field takes a JSON integer (or a float of integer value, ``2160.0``), not ``true`` or
    ``"2160"`` (pydantic's lax mode would read them as 1 and 2160)."""
    if isinstance(value, (bool, str)):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


def _number(value: object) -> object:
    if isinstance(value, (bool, str)):
        raise PydanticCustomError("float_type", "Input should be a valid number")
    return value


_Int = Annotated[int, BeforeValidator(_integer)]
_Num = Annotated[float, BeforeValidator(_number)]
#: A count of a resource (or a cost in one: at least 0).
_Count = Annotated[_Int, Field(ge=1, le=MAX_RESOURCE)]
_CostAmount = Annotated[_Num, Field(ge=0, le=MAX_RESOURCE)]
_Latency = Annotated[_Int, Field(ge=0, le=MAX_LATENCY_CYCLES)]
_Peak = Annotated[_Num, Field(ge=MIN_PEAK_GOPS, le=MAX_PEAK_GOPS)]
_Bandwidth = Annotated[_Num, Field(ge=MIN_BANDWIDTH_GBS, le=MAX_BANDWIDTH_GBS)]
_Fraction = Annotated[_Num, Field(gt=0, le=1)]
_Point = tuple[_Num, _Num]


class _ModuleCostSpec(_Strict):
    fixed: dict[str, _CostAmount] = Field(default_factory=dict)
    per_fanout: dict[str, _CostAmount] = Field(default_factory=dict)


class _ResourceModelSpec(_Strict):
    memory: Literal["blocks", "bits"]
    memory_resource: str
    #: storage built from logic (SODA §3.4: SRLs to 1,024 bits); up to 1 Mbit
    logic_storage_max_bits: _Int = Field(ge=0, le=1 << 20)
    max_utilization: dict[str, _Fraction] = Field(default_factory=dict)
    base: dict[str, _CostAmount]
    modules: dict[str, _ModuleCostSpec]
    ops: dict[Literal["float32", "float64", "integer"], dict[str, dict[str, _CostAmount]]]


class _ClockModelSpec(_Strict):
    resource: str
    points: list[_Point] = Field(min_length=2, max_length=64)


class _BlocksSpec(_Strict):
    name: str
    count: _Count
    #: (width bits, depth) of one block: BRAM18 1 × 16K to 36 × 512, M20K 10 × 2K to 40 × 512
    shapes: list[tuple[Annotated[_Int, Field(ge=1, le=4096)], Annotated[_Int, Field(ge=1, le=1 << 24)]]] = (
        Field(min_length=1, max_length=64)
    )


class _NetworkSpec(_Strict):
    link_bandwidth_gbs: _Bandwidth
    #: a hop's latency (SMI: 800 ns) becomes link buffers that deep: at most 10 µs
    link_latency_ns: _Num = Field(ge=0, le=1e4)
    links: _Int = Field(ge=1, le=1024)
    packet_bytes: _Int = Field(default=0, ge=0, le=4096)
    payload_bytes: _Int = Field(default=0, ge=0, le=4096)


class _CoresSpec(_Strict):
    units: _Int = Field(ge=1, le=1 << 20)
    lanes: dict[Literal["float32", "float64"], Annotated[_Num, Field(gt=0, le=4096)]]
    pipes: _Int = Field(ge=1, le=64)
    fma: bool = Field(strict=True)
    cache_bytes: _Int = Field(ge=1, le=1 << 40)
    cache_bytes_per_cycle: _Num = Field(gt=0, le=1 << 20)
    compute_efficiency: _Fraction
    cache_efficiency: _Fraction


class _DeviceSpec(_Strict):
    name: str
    description: str
    kind: DeviceKind
    part: str | None = None
    board: str | None = None
    clock_mhz: _Num = Field(ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    dram_banks: _Int = Field(ge=1, le=1024)
    bus_width_bits: _Int = Field(ge=1, le=1 << 16)
    mem_clock_mhz: _Num = Field(ge=MIN_CLOCK_MHZ, le=MAX_CLOCK_MHZ)
    bandwidth_gbs: _Bandwidth
    #: E_coef (OpenCL eq. 3): at least 1% of the peak
    mem_efficiency: _Num = Field(ge=0.01, le=1)
    memory_interleaved: bool = Field(default=False, strict=True)
    memory_kind: Literal["ddr", "hbm"] = "ddr"
    host_bandwidth_gbs: _Bandwidth | None = None
    #: t_ctrl per kernel launch: at most 10 s
    launch_overhead_us: _Num = Field(ge=0, le=1e7)
    peak_gops: dict[Literal["float32", "float64"], _Peak]
    onchip_bits: _Count | None = None
    memory_blocks: _BlocksSpec | None = None
    resources: dict[str, _Int]  # bounded by ``_check_resources`` (0 is a load latency's only)
    latencies: dict[str, _Latency]
    archs: list[Arch] = Field(min_length=1)
    resource_model: _ResourceModelSpec | None = None
    clock_model: _ClockModelSpec | None = None
    network: _NetworkSpec | None = None
    access_point_bandwidth: list[_Point] | None = Field(default=None, max_length=64)
    cores: _CoresSpec | None = None
    compute_capability: str | None = Field(default=None, pattern=r"^[1-9][0-9]?\.[0-9]$")
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
        board=spec.board,
        sources=tuple(spec.sources),
        memory_interleaved=spec.memory_interleaved,
        memory_kind=spec.memory_kind,
        clock_model=None
        if spec.clock_model is None
        else ClockModel(spec.clock_model.resource, tuple((u, f) for u, f in spec.clock_model.points)),
        network=None if spec.network is None else Network(**spec.network.model_dump()),
        access_point_bandwidth=tuple((float(b), float(g)) for b, g in spec.access_point_bandwidth or ()),
        cores=None if spec.cores is None else _cores(spec.cores),
        compute_capability=spec.compute_capability,
    )


def _cores(spec: _CoresSpec) -> Cores:
    return Cores(
        units=spec.units,
        lanes=tuple(sorted(spec.lanes.items())),
        pipes=spec.pipes,
        fma=spec.fma,
        cache_bytes=spec.cache_bytes,
        cache_bytes_per_cycle=spec.cache_bytes_per_cycle,
        compute_efficiency=spec.compute_efficiency,
        cache_efficiency=spec.cache_efficiency,
    )


#: A device's name and part reach generated code, scripts and reports: short visible names only.
_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ()._+-]{0,63}")
_RESOURCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _check_names(device: Device, where: str) -> None:
    """Names a device file gives (name, part, resources, memory blocks) are short visible names; its
    prose (description, sources) is one line each, without control or format characters."""
    named = [("name", device.name, _DEVICE_NAME)]
    if device.part is not None:
        named.append(("part", device.part, _PART))
    if device.board is not None:
        named.append(("board", device.board, _DEVICE_NAME))
    named += [(f"resources.{r}", r, _RESOURCE) for r, _ in device.resources]
    named += [("latencies", op, _RESOURCE) for op, _ in device.latencies]  # an operation kind or function
    if device.memory_blocks is not None:
        named.append(("memory_blocks.name", device.memory_blocks.name, _RESOURCE))
    for path, value, pattern in named:
        if not pattern.fullmatch(value):
            raise StencilmapError(
                f"{value!a} is not a name of at most 64 letters, digits and {_allowed(pattern)}",
                Location(where, json_path=path),
            )
    prose = [("description", device.description)]
    prose += [(f"sources[{i}]", s) for i, s in enumerate(device.sources)]
    for path, text in prose:
        check_name(text, "the text", Location(where, json_path=path))


def _allowed(pattern: re.Pattern[str]) -> str:
    return {_DEVICE_NAME: "'._+-'", _PART: "' ()._+-'"}.get(pattern, "'_'")


def _check(device: Device, where: str) -> None:
    """The catalog's invariants beyond the schema's bounds: the quoted peak bandwidth is S_bus × f_mem ×
    N_mem (within 1%), resources within their bounds (``_check_resources``), an FPGA has a resource model
    whose resources it counts, and the float32 peak is given."""
    _check_names(device, where)
    twice = sorted({a for a in device.archs if device.archs.count(a) > 1})
    if twice:
        raise StencilmapError(f"names {', '.join(twice)} more than once", Location(where, json_path="archs"))
    _check_resources(device, where)
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
        costs = [m.fixed for _, m in rm.modules] + [m.per_fanout for _, m in rm.modules]
        costs += [c for _, table in rm.ops for _, c in table]
        named = {rm.memory_resource, *rm.base.as_dict(), *dict(rm.max_utilization)}
        missing = named.union(*(c.as_dict() for c in costs)) - set(dict(device.resources))
        if missing:
            raise StencilmapError(
                f"resource_model names resources the device lacks: {sorted(missing)}", where
            )
        if rm.memory == "blocks" and device.memory_blocks is None:
            raise StencilmapError("a block memory model needs memory_blocks", where)
    _check_clock_model(device, where)
    _check_cores(device, where)
    net = device.network
    if net is not None and (
        net.payload_bytes > net.packet_bytes or (net.packet_bytes > 0) != (net.payload_bytes > 0)
    ):
        raise StencilmapError(
            "network: packet_bytes and payload_bytes go together, the payload at most the packet", where
        )
    if device.kind == "fpga" and not device.part:
        raise StencilmapError("an FPGA names its part (the generated scripts target it)", where)
    if device.memory_interleaved and device.kind != "fpga":
        raise StencilmapError("memory_interleaved describes an FPGA board's banks (kind fpga)", where)
    if device.compute_capability is not None and device.kind != "gpu":
        raise StencilmapError("compute_capability describes an NVIDIA GPU (kind gpu)", where)
    pts = device.access_point_bandwidth
    if any(
        not (isfinite(b) and isfinite(g) and 0 < b <= 1 << 16 and 0 < g <= MAX_BANDWIDTH_GBS) for b, g in pts
    ) or any(b1 <= b0 for (b0, _), (b1, _) in pairwise(pts)):
        raise StencilmapError(
            "access_point_bandwidth: [bits, GB/s] points, positive (at most 65,536 bits and "
            f"{MAX_BANDWIDTH_GBS:g} GB/s), with strictly increasing widths",
            where,
        )


def _check_resources(device: Device, where: str) -> None:
    """Every resource counts at least one (0 only where ``RESOURCE_BOUNDS`` allows it: a load latency) and
    at most ``MAX_RESOURCE``, named ones within their own bounds; a CGRA's MACs are PEs of its grid; the
    load cache is whole and holds a set; the archs ``cgra`` and ``emax`` find the resources they map onto."""
    counts = dict(device.resources)
    for name, n in device.resources:
        low, high = RESOURCE_BOUNDS.get(name, (1, MAX_RESOURCE))
        if not low <= n <= high:
            bound = f"at least {low}" if n < low else f"at most {high:,}"
            raise StencilmapError(
                f"must be {bound}, got {n:,}", Location(where, json_path=f"resources.{name}")
            )
    rows, cols, macs = counts.get("pe_rows"), counts.get("pe_columns"), counts.get("mac")
    if rows is not None and cols is not None and macs is not None and macs > rows * cols:
        raise StencilmapError(
            f"must be at most pe_rows × pe_columns = {rows * cols:,} (the MACs are PEs of the grid), got {macs:,}",
            Location(where, json_path="resources.mac"),
        )
    cache = [counts.get(k) for k in CACHE_RESOURCES]
    if any(v is not None for v in cache):
        if any(v is None for v in cache):
            missing = [k for k, v in zip(CACHE_RESOURCES, cache, strict=True) if v is None]
            raise StencilmapError(
                f"{', '.join(CACHE_RESOURCES)} describe the load cache together; missing {', '.join(missing)}",
                Location(where, json_path="resources"),
            )
        size, ways, line, _ = (int(v or 0) for v in cache)
        if ways * line > size:
            raise StencilmapError(
                f"must hold one set, cache_ways × cache_line_bytes = {ways * line:,} bytes, got {size:,}",
                Location(where, json_path="resources.cache_bytes"),
            )
    for arch, need in ARCH_RESOURCES.items():
        missing = [k for k in need if k not in counts]
        if arch in device.archs and missing:
            raise StencilmapError(
                f"arch '{arch}' maps onto {', '.join(need)}; missing {', '.join(missing)}",
                Location(where, json_path="resources"),
            )


def _check_cores(device: Device, where: str) -> None:
    """``cores`` describes a CPU or GPU, gives float32 lanes, and its issue rate (× 2 with fused
    multiply-adds, which count two operations) is the quoted float32 peak within 5%."""
    cores = device.cores
    if cores is None:
        return
    if device.kind not in ("cpu", "gpu"):
        raise StencilmapError("cores describes a CPU's or GPU's execution units (kind cpu or gpu)", where)
    if "float32" not in dict(cores.lanes) or any(v <= 0 for _, v in cores.lanes):
        raise StencilmapError("cores.lanes: needs a positive float32 figure", where)
    peak = cores.peak_gops("float32", device.clock_mhz)
    quoted = device.peak("float32")
    if abs(peak - quoted) > 0.05 * quoted:
        raise StencilmapError(
            f"cores: units × lanes × pipes × clock (× 2 with fma) = {peak:.1f} GOp/s disagrees with "
            f"peak_gops.float32 "
            f"{quoted:g}",
            where,
        )


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
    if any(not (isfinite(f) and MIN_CLOCK_MHZ <= f <= MAX_CLOCK_MHZ) for _, f in cm.points):
        raise StencilmapError(
            f"clock_model.points: clocks must be positive numbers of MHz, from {MIN_CLOCK_MHZ:g} to "
            f"{MAX_CLOCK_MHZ:g}",
            where,
        )


def _files() -> dict[str, Any]:
    folder = resources.files("stencilmap.device") / "files"
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
    see any file of ``device/files/``); a StencilmapError names the file and the JSON path of what is
    wrong, or lists the known names."""
    if is_device_path(name):
        return _device_file(Path(name))
    if name not in _files():
        raise StencilmapError(
            f"unknown device '{name}' (known: {', '.join(sorted(_files()))}; or a PATH.json)"
        )
    return _catalog_device(name)


@cache
def _catalog_device(name: str) -> Device:
    """A catalog device, parsed once per process (package data does not change; a ``Device`` is frozen).
    A user's PATH.json is read afresh every time."""
    files = _files()
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
    from stencilmap.io import read_user_text

    if not path.exists():
        raise StencilmapError("no such device file", str(path))
    text = read_user_text(path, str(path), MAX_DEVICE_FILE_BYTES, "a device file")
    return _parse(text, str(path))


#: Largest magnitude of a number in a device file (products of clocks, counts and bytes stay finite).
MAX_DEVICE_NUMBER = 1e18


def _check_finite(value: object, where: str, at: str) -> None:
    """Every number of a device file is finite (JSON's ``1e400`` reads as infinity; issue 19 §9)."""
    if isinstance(value, float) and not isfinite(value):
        raise StencilmapError(f"{at or '(top level)'}: must be a finite number, got {value}", where)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_DEVICE_NUMBER:
        raise StencilmapError(f"{at or '(top level)'}: {value:.3g} is out of range (|x| ≤ 1e18)", where)
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, where, f"{at}.{key}" if at else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, where, f"{at}[{i}]")


def _parse(text: str, where: str) -> Device:
    from stencilmap.io import JsonPathError, parse_user_json

    try:
        data = parse_user_json(text)
        _check_finite(data, where, "")
        spec = _DeviceSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise StencilmapError(f"{schema_path(err['loc'])}: {schema_message(err)}", where) from None
    except JsonPathError as exc:
        raise StencilmapError(f"{exc.path}: {exc}", where) from None
    except (ValueError, RecursionError) as exc:
        raise StencilmapError(f"not JSON: {str(exc).splitlines()[0]}", where) from None
    device = _device(spec)
    _check(device, where)
    return device
