"""``--devices N`` / ``--partition FILE``: a StencilFlow design split over several devices.

What ``simulate``, ``estimate``, ``analyze`` and the Python API share: check the request (StencilFlow
designs only, on a device whose file gives its network links) and build the partitioned design with
its ``Partition`` record (``design.partition``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stencilmap.arch import arch as arch_of
from stencilmap.design.partition import Partitioned, Parts, load_parts, partition
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError, param
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
