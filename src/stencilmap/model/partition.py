"""The resources of a StencilFlow design split over devices (StencilFlow §VI-B, §VIII-C): what each
stencil node costs — the weights of the least-cut search (``design.partition.choose_parts``) — and what
each device holds, as the ``Partition`` record reports them.

The split itself (the search, the network modules) is ``design.partition``'s; this module weighs its
sub-designs (``node_designs``, ``part_designs``) by the resource model (``model.resources``), and
``jobs.partition`` joins the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stencilmap.design.ir import Design
from stencilmap.design.partition import NetworkChannel, Parts, network_channels, node_designs, part_designs
from stencilmap.device.catalog import Cost, Device
from stencilmap.model.resources import ResourceUsage, design_resources
from stencilmap.program.ir import Program


@dataclass(frozen=True, slots=True)
class Part:
    """What one device holds: its stencil nodes and the resources they use there."""

    device: int
    stencils: tuple[str, ...]
    resources: ResourceUsage

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "stencils": list(self.stencils),
            "fits": self.resources.fits,
            "resources": self.resources.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Partition:
    """A design split over devices of one kind (``device``)."""

    device: str
    parts: tuple[Part, ...]
    network_channels: tuple[NetworkChannel, ...]
    chosen: bool  # chosen by ``choose_parts`` (else given by the user)

    @property
    def streams_cut(self) -> int:
        return len(self.network_channels)

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "devices": len(self.parts),
            "chosen": "min-cut" if self.chosen else "user",
            "streams_cut": self.streams_cut,
            "parts": [p.to_json() for p in self.parts],
            "network_channels": [c.to_json() for c in self.network_channels],
        }


@dataclass(frozen=True, slots=True)
class Partitioned:
    design: Design
    partition: Partition


def node_costs(design: Design, program: Program, device: Device) -> dict[str, Cost]:
    """What each stencil node's modules (PE, internal buffers, delay buffers, output broadcast) and the
    channels out of them use, without the device's base."""
    base_design, nodes = node_designs(design, program)
    base = design_resources(base_design, program, device).used
    out: dict[str, Cost] = {}
    for name, sub in nodes.items():
        used = design_resources(sub, program, device).used
        out[name] = Cost.of((k, v - base[k]) for k, v in used.amounts)
    return out


def describe(design: Design, program: Program, device: Device, parts: Parts, chosen: bool) -> Partition:
    """The record of a partitioned design: every device's stencils and resources, the network channels."""
    records = tuple(
        Part(n, names, design_resources(sub, program, device))
        for n, (names, sub) in enumerate(zip(parts, part_designs(design, parts), strict=True))
    )
    return Partition(device.name, records, network_channels(design, device), chosen)
