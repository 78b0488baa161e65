"""What ``estimate`` asks and answers: its configuration, the context every model starts from, the report."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.design.ir import ParamValue
from stencilmap.design.registry import reject_options as refuse
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError, param
from stencilmap.model.performance import Scenario, gops
from stencilmap.model.resources import ResourceUsage
from stencilmap.model.workload import Workload
from stencilmap.point import DesignPoint
from stencilmap.program import Program

if TYPE_CHECKING:
    from stencilmap.model.partition import Partition, Partitioned

JsonScalar = int | float | str | bool | None


def _unsplit(point: DesignPoint) -> Partitioned | None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class EstimateConfig:
    """Everything ``stencilmap estimate`` was asked to do (None: the program's or device's default).
    ``point.device`` names the device (a catalog name or a PATH.json)."""

    program: Path | Program  # a file (the command line) or a Program (the Python API)
    point: DesignPoint  # unroll: k (SODA), P_cell (PCM), workers (CGRA), p (EMAX); iterate: q / d on chip
    iterations: int | None = None  # T: the application's time steps
    shape: tuple[int, ...] | None = None
    clock_mhz: float | None = None

    @property
    def device(self) -> str:
        assert self.point.device is not None, "an estimate needs a device"
        return self.point.device


@dataclass(frozen=True, slots=True)
class EstimateReport:
    """The prediction for one configuration. Times in seconds, bandwidths in GB/s."""

    program: Program
    device: Device
    arch: str
    clock_mhz: float
    parameters: tuple[tuple[str, ParamValue], ...]
    iterations: int
    steps_on_chip: int  # q
    launches: int
    lanes: int
    latency_cycles: int
    cycles_per_launch: int  # compute-bound cycles of one launch
    stream_points: int
    required_bandwidth_gbs: float
    scenario: Scenario
    compute_seconds: float  # t_comp of one launch
    host_seconds: float  # t_HF + t_FH
    control_seconds: float  # launches × t_ctrl
    predicted_seconds: float
    ops: float  # useful operations of all T time steps
    roofline_gops: float  # attainable for the design's intensity (q steps on chip)
    resources: ResourceUsage | None
    notes: tuple[str, ...] = ()
    fused: tuple[tuple[str, str], ...] = ()  # --fuse: (producer, consumer) pairs fused (transform.fusion)
    extra: tuple[tuple[str, JsonScalar], ...] = field(default=())
    partition: Partition | None = None  # --devices / --partition: the split over devices

    def __repr__(self) -> str:
        """One line: the program, device, design and prediction (the fields hold the rest)."""
        params = ", ".join(f"{k}={v!r}" for k, v in self.parameters if k in ("k", "q", "unroll", "W", "p"))
        return (
            f"EstimateReport({self.program.name!r} on {self.device.name}: {self.arch}"
            f"{' ' + params if params else ''}, {self.predicted_seconds:.4g} s, {self.scenario}-bound)"
        )

    @property
    def predicted_cycles(self) -> int:
        """Design-clock cycles of all launches' computation (stretched when bandwidth-bound)."""
        return round(self.launches * self.compute_seconds * self.clock_mhz * 1e6)

    @property
    def gops(self) -> float:
        return gops(self.ops, self.predicted_seconds)

    @property
    def percent_of_roofline(self) -> float:
        return 100 * self.gops / self.roofline_gops if self.roofline_gops else 0.0

    @property
    def binding_resource(self) -> str | None:
        return None if self.resources is None else self.resources.binding

    def to_json(self) -> dict[str, object]:
        r = self.resources
        return {
            "program": self.program.name,
            "fused": [list(pair) for pair in self.fused],
            "device": self.device.name,
            "arch": self.arch,
            "shape": [int(n or 0) for n in self.program.shape],
            "clock_mhz": self.clock_mhz,
            "parameters": {k: list(v) if isinstance(v, tuple) else v for k, v in self.parameters},
            "iterations": self.iterations,
            "iterate": self.steps_on_chip,
            "launches": self.launches,
            "lanes": self.lanes,
            "latency_cycles": self.latency_cycles,
            "cycles_per_launch": self.cycles_per_launch,
            "stream_points": self.stream_points,
            "predicted_seconds": self.predicted_seconds,
            "predicted_cycles": self.predicted_cycles,
            "scenario": self.scenario,
            "required_bandwidth_gbs": self.required_bandwidth_gbs,
            "practical_bandwidth_gbs": self.device.practical_bandwidth_gbs,
            "compute_seconds_per_launch": self.compute_seconds,
            "host_transfer_seconds": self.host_seconds,
            "control_seconds": self.control_seconds,
            "ops": self.ops,
            "gops": self.gops,
            "roofline_gops": self.roofline_gops,
            "percent_of_roofline": self.percent_of_roofline,
            "resources": {} if r is None else r.to_json(),
            "binding_resource": self.binding_resource,
            "fits": None if r is None else r.fits,
            **dict(self.extra),
            **({} if self.partition is None else {"partition": self.partition.to_json()}),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class ModelContext:
    """What every model starts from: the request, the device, the shape-bound program and its workload."""

    config: EstimateConfig
    device: Device
    program: Program  # shape-bound, as loaded
    shape: tuple[int, ...]
    work: Workload
    arch: str
    f_hz: float
    lanes: str | None = None  # the design parameter holding the lanes (``arch.Arch.lanes``)
    lanes_option: str = "unroll"  # the option setting them (``arch.Arch.lanes_option``)
    tiled: bool = False  # SODA's tiles (``arch.Arch.tiled``)
    partitioned: Callable[[DesignPoint], Partitioned | None] = _unsplit  # the split design, if asked

    @property
    def clock_mhz(self) -> float:
        return self.f_hz / 1e6


def reject_options(ctx: ModelContext, *flags: tuple[str, int | None]) -> None:
    """Options a model has no use for are errors, not silently ignored (``design.registry.reject_options``,
    which ``simulate``, ``analyze`` and ``codegen`` apply to the builders)."""
    refuse(f"the {ctx.arch} model", *flags)


def host_seconds(work: Workload, device: Device) -> tuple[float, float]:
    """t_HF and t_FH (OpenCL eq. 1): the inputs to the device once, the outputs back once (none when the
    device shares the host's memory)."""
    if device.host_bandwidth_gbs is None:
        return 0.0, 0.0
    bps = device.host_bandwidth_gbs * 1e9
    return work.input_bytes / bps, work.output_bytes / bps


def check_clock(clock_mhz: float | None) -> None:
    """Refuse a ``--clock-mhz`` that is not a positive finite number of MHz."""
    if clock_mhz is not None and not (math.isfinite(clock_mhz) and 0 < clock_mhz <= 1e6):
        raise StencilmapError(
            f"{param('clock_mhz')} must be a positive number of MHz (at most 1e6), got {clock_mhz:g}"
        )
