"""Multi-device StencilFlow (StencilFlow §III Fig. 5, §VI-B, §VIII-C): split a design over N devices.

Each stencil node of the unrolled DAG goes to one device; a stream a stencil sends to another device
is a cut stream, carried by a network channel of the device file's link (``Device.network``: SMI over
the QSFP links); inputs read on several devices are replicated, each device reading its own memory.

``choose_parts`` minimises the streams cut (one per producer and destination device, as the network
modules are built) subject to every device holding what its stencils use under the device's
resources. As StencilFlow continues a chain on the next device (§VIII-C), each device holds a
contiguous run of the nodes in topological order, so streams only flow to later devices; the search
(``partition_search``) is exact over all such splits, every device gets at least one stencil, and among
the least cuts it balances the devices (the fullest device's most used resource, least). The user may
give the parts instead (``load_parts``: ``{"parts": [["stencil", ...], ...]}``), checked by
``check_parts``. ``split_design`` builds the partitioned design (``design.pipeline``).

The resources each stencil node costs (``choose_parts``'s weights) and each device's share are the
resource model's (``model.partition``): this module takes the costs as an input and gives the
sub-designs to weigh (``node_designs``, ``part_designs``); ``jobs.partition`` joins the two.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stencilmap.analysis.intensity import itemsize
from stencilmap.design.common import LiveGraph, live_graph
from stencilmap.design.ir import Channel, Design, Module
from stencilmap.design.registry import BuildConfig, build
from stencilmap.device.catalog import Cost, Device
from stencilmap.errors import StencilmapError, param
from stencilmap.point import NetworkLink
from stencilmap.program.ir import Program

Parts = tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class NetworkChannel:
    """One cut stream: ``producer``'s output sent from device ``src`` to ``dst`` over the network."""

    name: str
    producer: str
    src: int
    dst: int
    rate: float  # beats per cycle the link grants the stream (≤ 1)
    latency: int  # cycles
    required_gbs: float  # what the stream needs on the links at one beat a cycle (packet headers included)
    link_gbs: float  # the links between the two devices, shared by their streams

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "producer": self.producer,
            "src": self.src,
            "dst": self.dst,
            "rate": self.rate,
            "latency_cycles": self.latency,
            "required_gbs": round(self.required_gbs, 4),
            "link_gbs": round(self.link_gbs, 4),
        }


def network_link(device: Device, clock_mhz: float | None = None) -> NetworkLink:
    """The link between two devices of ``device``'s kind at the design clock (default: the device's)."""
    if device.network is None:
        raise StencilmapError(f"device '{device.name}' has no 'network' (links to other devices) in its file")
    mhz = clock_mhz if clock_mhz is not None else device.clock_mhz
    net = device.network
    return NetworkLink(net.latency_cycles(mhz), net.bytes_per_cycle(mhz), net.packet_bytes, net.payload_bytes)


def split_design(
    program: Program, config: BuildConfig, device: Device, parts: Parts, link: NetworkLink
) -> Design:
    """The StencilFlow design of ``program`` split into ``parts`` (one tuple of stencil nodes per device
    of ``device``'s kind), its cut streams carried by ``link`` (``network_link``)."""
    return build(
        "stencilflow", program, replace(config, parts=parts, link=link, device=config.device or device.name)
    )


def single_design(program: Program, config: BuildConfig, device: Device) -> Design:
    """The StencilFlow design of ``program`` on one device of ``device``'s kind: what the split weighs."""
    return build(
        "stencilflow", program, replace(config, parts=None, link=None, device=config.device or device.name)
    )


def part_designs(design: Design, parts: Parts) -> tuple[Design, ...]:
    """Per device of a split design: the sub-design of its modules and the channels among them."""
    on = module_devices(design)
    out = []
    for n in range(len(parts)):
        mine = tuple(m for m in design.modules if on[m.name] == n)
        keep = {m.name for m in mine}
        chans = tuple(c for c in design.channels if c.src in keep and c.dst in keep)
        out.append(Design(design.name, design.arch, mine, chans))
    return tuple(out)


def network_channels(design: Design, device: Device) -> tuple[NetworkChannel, ...]:
    """The cut streams of a split design: each network module, the rate and latency the link grants it."""
    net = device.network
    assert net is not None
    channels = []
    for m in design.modules:
        if m.kind == "network":
            width, rate = _int(m.param("width")), float(str(m.param("rate")))
            beat = network_link(device).wire_bytes(width, itemsize(str(m.param("dtype"))))
            need = beat * device.clock_mhz * 1e6 / 1e9
            src, dst = _int(m.param("src_device")), _int(m.param("dst_device"))
            channels.append(
                NetworkChannel(
                    m.name,
                    str(m.param("producer")),
                    src,
                    dst,
                    rate,
                    m.latency,
                    need,
                    net.links * net.link_bandwidth_gbs,
                )
            )
    return tuple(channels)


def module_devices(design: Design) -> dict[str, int]:
    """The device of every module: its ``device`` parameter, a broadcast's that of what feeds it — the
    receiving end's when a network module feeds it (0 for a design on one device)."""
    on: dict[str, int] = {}
    for m in design.modules:
        d = m.param("device")
        if isinstance(d, int):
            on[m.name] = d
    for m in design.modules:
        if m.name not in on:
            on[m.name] = _feeder_device(design, m, on)
    return on


def _feeder_device(design: Design, m: Module, on: dict[str, int]) -> int:
    for c in design.inputs_of(m.name):
        src = design.module(c.src)
        if src.kind == "network":
            dst = src.param("dst_device")
            assert isinstance(dst, int)
            return dst
        if c.src in on:
            return on[c.src]
        return _feeder_device(design, src, on)
    return 0


def node_designs(design: Design, program: Program) -> tuple[Design, dict[str, Design]]:
    """An empty design (the device's base) and, per stencil node, the sub-design of its modules (PE,
    internal buffers, delay buffers, output broadcast) and the channels out of them: what the resource
    model weighs each node by (``model.partition.node_costs``)."""
    live = live_graph(program)
    owner: dict[str, list[Module]] = {n.name: [] for n in live.stencils}
    node_of: dict[str, str] = {}  # module → its stencil node
    for m in design.modules:
        head = m.name.split(".", 1)[0]
        if head in owner:
            owner[head].append(m)
            node_of[m.name] = head
    chans: dict[str, list[Channel]] = {name: [] for name in owner}
    for c in design.channels:  # one pass, in the design's order
        if c.src in node_of:
            chans[node_of[c.src]].append(c)
    out = {name: Design(name, design.arch, tuple(mods), tuple(chans[name])) for name, mods in owner.items()}
    return Design("base", design.arch, (), ()), out


def cut_streams(live: LiveGraph, where: dict[str, int]) -> int:
    """Streams cut by an assignment of stencil nodes to devices: one per (producer, other device)."""
    return len(
        {
            (e.producer, where[e.consumer])
            for e in live.graph.edges
            if e.producer in where and where[e.producer] != where[e.consumer]
        }
    )


def choose_parts(live: LiveGraph, costs: dict[str, Cost], device: Device, devices: int) -> Parts:
    """The least-cut assignment of the stencil nodes to ``devices`` devices under the device's resources
    (module docstring), as one tuple of node names per device in topological order."""
    from stencilmap.design.partition_search import solve

    nodes = tuple(n.name for n in live.stencils)
    if devices < 1:
        raise StencilmapError(f"{param('devices')} must be at least 1, got {devices}")
    if devices > len(nodes):
        raise StencilmapError(f"cannot split {len(nodes)} stencils over {devices} devices")
    where = solve(live, costs, device, devices)
    if where is None:
        raise StencilmapError(
            f"the design does not fit on {devices} {device.name} device{'s' if devices > 1 else ''}: "
            f"try more devices ({param('devices')}) or a smaller vector width"
        )
    return tuple(tuple(n for n in nodes if where[n] == p) for p in range(devices))


def check_parts(parts: Parts, live: LiveGraph, where: str = "partition") -> None:
    """Refuse a partition that names a stencil node twice, names one the design lacks, leaves one out,
    or has an empty device."""
    known = [n.name for n in live.stencils]
    seen: dict[str, str] = {}
    for p, names in enumerate(parts):
        if not names:
            raise StencilmapError(f"parts[{p}] is empty: every device needs a stencil", where)
        for i, name in enumerate(names):
            path = f"parts[{p}][{i}]"
            if name not in known:
                raise StencilmapError(f"{path}: unknown stencil '{name}' (known: {', '.join(known)})", where)
            if name in seen:
                raise StencilmapError(f"{path}: stencil '{name}' is already in {seen[name]}", where)
            seen[name] = path
    missing = [n for n in known if n not in seen]
    if missing:
        raise StencilmapError(f"no part holds stencil '{missing[0]}'", where)


#: Largest partition file read (one name per stencil of the DAG).
MAX_PARTITION_BYTES = 1 << 20


def load_parts(path: Path) -> Parts:
    """A partition file: ``{"parts": [["stencil", ...], ...]}`` (stencil nodes of the unrolled DAG)."""
    where = str(path)
    from stencilmap.io import JsonPathError, parse_user_json, read_user_text

    text = read_user_text(path, where, MAX_PARTITION_BYTES, "a partition file")
    try:
        data = parse_user_json(text)
    except JsonPathError as exc:
        raise StencilmapError(f"{exc.path}: {exc}", where) from None
    except json.JSONDecodeError as exc:
        raise StencilmapError(f"line {exc.lineno}, column {exc.colno}: {exc.msg}", where) from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, nesting too deep, NaN
        raise StencilmapError(f"not a partition file: {str(exc).splitlines()[0][:120]}", where) from None
    if not isinstance(data, dict) or set(data) != {"parts"}:
        raise StencilmapError('expected an object {"parts": [[stencil, ...], ...]}', where)
    parts = data["parts"]
    if not isinstance(parts, list) or not parts:
        raise StencilmapError("parts: expected a non-empty list of lists of stencil names", where)
    out = []
    for p, names in enumerate(parts):
        if not isinstance(names, list):
            raise StencilmapError(f"parts[{p}]: expected a list of stencil names", where)
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise StencilmapError(f"parts[{p}][{i}]: expected a stencil name (a string)", where)
        out.append(tuple(names))
    return tuple(out)


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value
