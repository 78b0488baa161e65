"""The ``roofline`` job: a device's compute and bandwidth ceilings and where a program sits under them.

Attainable performance = min(peak, intensity × bandwidth) (Williams et al.; OpenCL §5.3 with 80% of the
theoretical bandwidth; CGRA §VI at 100 GB/s; StencilFlow §IX-A eq. 3 at the 58.3 GB/s achieved, and at
the 76.8 GB/s data sheet peak). The bandwidth is the practical one, peak × E_coef; the attainable
figure at the peak bandwidth is reported beside it. The intensity is the work intensity of
``workload`` (CGRA §VI's count), with ``iterate`` time steps chained on chip between memory accesses.
On a CGRA with MACs the report adds §VI's choice of workers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from stencilmap.design.common import MAX_STAGES
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.model.cgra import Workers, choose_workers, pes_per_worker
from stencilmap.model.performance import attainable_gops, ridge_intensity
from stencilmap.model.plot import check_plot_path, write_roofline_plot
from stencilmap.model.workload import Workload, workload
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape


@dataclass(frozen=True, slots=True)
class RooflineConfig:
    """Everything ``stencilmap roofline`` was asked to do."""

    program: Path
    device: str
    shape: tuple[int, ...] | None = None
    iterate: int | None = None  # time steps chained on chip (default: the program's)
    plot: Path | None = None


@dataclass(frozen=True, slots=True)
class RooflineReport:
    program: Program
    device: Device
    work: Workload
    steps_on_chip: int
    operational_intensity: float  # work intensity (op/B)
    peak_gops: float
    bandwidth_gbs: float  # practical: peak × E_coef
    attainable_gops: float
    attainable_peak_bandwidth_gops: float
    workers: Workers | None
    plot: Path | None

    @property
    def peak_bandwidth_gbs(self) -> float:
        return self.device.bandwidth_gbs

    @property
    def ridge_intensity(self) -> float:
        return ridge_intensity(self.peak_gops, self.bandwidth_gbs)

    @property
    def bound(self) -> str:
        return "compute" if self.operational_intensity >= self.ridge_intensity else "bandwidth"

    def to_json(self) -> dict[str, object]:
        w = self.work
        return {
            "program": self.program.name,
            "device": self.device.name,
            "kind": self.device.kind,
            "shape": list(w.shape),
            "dtype": w.dtype,
            "iterate": self.steps_on_chip,
            "points": w.points,
            "computed_points": w.computed_points,
            "ops_per_point": w.ops_per_point * self.steps_on_chip,
            "bytes_per_point": w.bytes_per_point,
            "operational_intensity": self.operational_intensity,
            "analysis_intensity": w.analysis_intensity * self.steps_on_chip,
            "peak_gops": self.peak_gops,
            "bandwidth_gbs": self.bandwidth_gbs,
            "peak_bandwidth_gbs": self.peak_bandwidth_gbs,
            "ridge_intensity": self.ridge_intensity,
            "attainable_gops": self.attainable_gops,
            "attainable_peak_bandwidth_gops": self.attainable_peak_bandwidth_gops,
            "bound": self.bound,
            "workers": None if self.workers is None else self.workers.workers,
            "worker_model": None if self.workers is None else self.workers.to_json(),
            "plot": str(self.plot) if self.plot is not None else None,
        }


def roofline(config: RooflineConfig) -> RooflineReport:
    if config.plot is not None:
        check_plot_path(config.plot)
    device = load_device(config.device)
    program = bind_shape(load_program(config.program), {}, config.shape)
    q = config.iterate if config.iterate is not None else max(1, program.iterate)
    if not 1 <= q <= MAX_STAGES:
        raise StencilmapError(f"{param('iterate')} must be in 1..{MAX_STAGES:,}, got {q}")
    shape = tuple(int(n or 0) for n in program.shape)
    report = roofline_of(program, shape, device, q)
    if config.plot is not None:
        write_roofline_plot(config.plot, report)
        return replace(report, plot=config.plot)
    return report


def roofline_of(
    program: Program, shape: tuple[int, ...], device: Device, steps_on_chip: int = 1
) -> RooflineReport:
    """The roofline of ``steps_on_chip`` chained time steps of ``program`` on ``device``."""
    work = workload(program, shape)
    intensity = work.intensity(steps_on_chip)
    peak = device.peak(work.dtype)
    bandwidth = device.practical_bandwidth_gbs
    attainable = attainable_gops(peak, intensity, bandwidth)
    workers = None
    macs = device.resource("mac")
    if device.kind == "cgra" and macs is not None:
        workers = choose_workers(
            attainable,
            work.ops_per_point,
            pes_per_worker(work.program),
            macs,
            device.clock_mhz / 1e3,
            steps_on_chip,
        )
    return RooflineReport(
        program=program,
        device=device,
        work=work,
        steps_on_chip=steps_on_chip,
        operational_intensity=intensity,
        peak_gops=peak,
        bandwidth_gbs=bandwidth,
        attainable_gops=attainable,
        attainable_peak_bandwidth_gops=attainable_gops(peak, intensity, device.bandwidth_gbs),
        workers=workers,
        plot=None,
    )
