"""The ``estimate`` job: predicted time, bandwidth, resources and GOp/s of one configuration on a device.

It loads the program and the device, chooses the architecture (the program's own, else the device's
first), checks the request and hands it to the architecture's model (``arch.Arch.predict``:
``model.estimate``, ``model.emax``), which a StencilFlow design split over devices reaches through
``jobs.partition``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from stencilmap.arch import arch as arch_of
from stencilmap.arch import default_arch
from stencilmap.design.common import check_parameters
from stencilmap.design.registry import check_design_size
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.explore.space import MAX_ITERATIONS
from stencilmap.model.report import EstimateConfig, EstimateReport, ModelContext, check_clock
from stencilmap.model.workload import workload
from stencilmap.point import DesignPoint
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from stencilmap.program.load import as_program
from stencilmap.transform.fusion import fuse_if

if TYPE_CHECKING:
    from stencilmap.model.partition import Partitioned

__all__ = ["EstimateConfig", "EstimateReport", "estimate"]


def estimate(config: EstimateConfig) -> EstimateReport:
    """Predict one configuration of ``config.program`` on ``config.device``."""
    device = load_device(config.device)
    point = config.point
    bound = bind_shape(as_program(config.program), {}, config.shape)
    fusion = fuse_if(bound, point.fuse, point.arch or default_arch(bound, device.archs))
    program = fusion.program
    name = point.arch or default_arch(program, device.archs)
    if name not in device.archs:
        raise StencilmapError(
            f"device '{device.name}' ({device.kind}) models {', '.join(device.archs)}, not '{name}'"
        )
    _check_values(config)
    a = arch_of(name)
    if a.pe_grid:  # refused at once, not after minutes of modelling (issue 19 §9)
        check_design_size(point.unroll, point.iterate)
    if point.split and not a.splits:
        raise StencilmapError(
            f"{param('devices')} / {param('partition')} split stencilflow designs, not {name}"
        )
    if point.tile is not None and not a.tiled:
        raise StencilmapError(f"tile sizes apply to the soda model, not to '{name}'")
    clock = config.clock_mhz if config.clock_mhz is not None else device.clock_mhz
    shape = tuple(int(n or 0) for n in program.shape)

    def partitioned(build_point: DesignPoint) -> Partitioned | None:
        return _partition(config, program, name, device, build_point)

    ctx = ModelContext(
        config,
        device=device,
        program=program,
        shape=shape,
        work=workload(program, shape),
        arch=name,
        f_hz=clock * 1e6,
        lanes=a.lanes,
        lanes_option=a.lanes_option,
        tiled=a.tiled,
        partitioned=partitioned,
    )
    return replace(a.predict(ctx), fused=fusion.fused)


def _check_values(config: EstimateConfig) -> None:
    check_parameters(config.point.unroll, config.point.iterate, config.point.vector)
    if config.iterations is not None and not 1 <= config.iterations <= MAX_ITERATIONS:
        raise StencilmapError(
            f"{param('iterations')} must be in 1..{MAX_ITERATIONS:,}, got {config.iterations}"
        )
    check_clock(config.clock_mhz)


def _partition(
    config: EstimateConfig, program: Program, name: str, device: Device, point: DesignPoint
) -> Partitioned | None:
    """``--devices`` / ``--partition``: the design split over devices (StencilFlow §VI-B), else None."""
    from stencilmap.jobs.partition import PartitionRequest, partitioned

    request = PartitionRequest(config.point.devices, config.point.partition)
    if not request.wanted:
        return None
    return partitioned(
        program, config=point, arch=name, device=device, request=request, clock_mhz=config.clock_mhz
    )
