"""``--devices N`` / ``--partition FILE``: a StencilFlow design split over several devices.

What ``simulate``, ``estimate``, ``analyze`` and the Python API share: check the request (StencilFlow
designs only, on a device whose file gives its network links) and build the partitioned design with
its ``Partition`` record. ``partition`` joins the split (``design.partition``: the least-cut search over
costs it is given, the network modules) with the resource model that weighs it (``model.partition``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stencilmap.arch import arch as arch_of
from stencilmap.design.common import live_graph, or_hint, with_iterate
from stencilmap.design.partition import (
    Parts,
    check_parts,
    choose_parts,
    load_parts,
    network_link,
    single_design,
    split_design,
)
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError, param
from stencilmap.model.partition import Partitioned, describe, node_costs
from stencilmap.program.ir import Program


@dataclass(frozen=True, slots=True)
class PartitionRequest:
    """``devices``: split over that many devices (min cut); ``parts``: the user's split (a JSON file
    ``{"parts": [[stencil, ...], ...]}`` or the parts themselves)."""

    devices: int | None = None
    parts: Path | Parts | None = None

    @property
    def wanted(self) -> bool:
        return self.devices is not None or self.parts is not None


def partition(
    program: Program,
    config: BuildConfig,
    device: Device,
    devices: int | None = None,
    parts: Parts | None = None,
    clock_mhz: float | None = None,
    where: str = "partition",
) -> Partitioned:
    """The StencilFlow design of ``program`` on ``devices`` devices (min-cut parts, weighed by the
    resource model), or on the user's ``parts`` (``where``: their file, for errors): the partitioned
    design and its record."""
    if (devices is None) == (parts is None):
        raise StencilmapError("give either a number of devices or a partition, not both")
    link = network_link(device, clock_mhz)
    single = single_design(program, config, device)
    chained = with_iterate(program, or_hint(config.iterate, program.iterate))
    live = live_graph(chained)
    if parts is None:
        assert devices is not None
        parts = choose_parts(live, node_costs(single, chained, device), device, devices)
        chosen = True
    else:
        check_parts(parts, live, where)
        chosen = False
    design = split_design(program, config, device, parts, link)
    return Partitioned(design, describe(design, chained, device, parts, chosen))


def check_request(request: PartitionRequest, arch: str, device: Device | None) -> Device:
    """Refuse a partition request that cannot apply; the device the design is split over."""
    if request.devices is not None and request.parts is not None:
        raise StencilmapError(f"give {param('devices')} or {param('partition')}, not both")
    if request.devices is not None and request.devices < 1:
        raise StencilmapError(f"{param('devices')} must be at least 1, got {request.devices}")
    if not arch_of(arch).splits:
        raise StencilmapError(
            f"{param('devices')} / {param('partition')} split stencilflow designs, not {arch}"
        )
    if device is None:
        raise StencilmapError(
            f"{param('devices')} / {param('partition')} need {param('device')}: a board whose file gives its network"
        )
    return device


def partitioned(
    program: Program,
    config: BuildConfig,
    arch: str,
    device: Device | None,
    request: PartitionRequest,
    clock_mhz: float | None = None,
) -> Partitioned:
    """The design of ``program`` split as ``request`` asks, with its record."""
    dev = check_request(request, arch, device)
    parts = load_parts(request.parts) if isinstance(request.parts, Path) else request.parts
    where = str(request.parts) if isinstance(request.parts, Path) else "partition"
    return partition(
        program,
        config=config,
        device=dev,
        devices=request.devices,
        parts=parts,
        clock_mhz=clock_mhz,
        where=where,
    )
