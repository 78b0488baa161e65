"""The models of ``estimate`` (the job: ``jobs.estimate``): predicted time, bandwidth, resources and GOp/s of
one configuration on a device.

Per microarchitecture (the device file lists which it supports; ``arch.Arch.model`` names the model):

* ``soda`` / ``stencilflow`` / ``pcm`` on an FPGA: the builder's design; one pass streams P = k·W points
  a cycle through q chained stages, C = L + ⌈N / P⌉ cycles (``analysis.timing``; tiles stream their
  halos too, SODA §4.4) with what the built design adds to it and the bandwidth of the banks its memory
  ports use (``timing``: the cycles a simulation of the design checks); launches ⌈T / q⌉, host transfers
  and control (OpenCL eqs. 1, 7); resources from the design's modules (``resources``);
* ``cgra`` (CGRA paper): w workers, one point each per cycle, w chosen by the §VI roofline unless given;
* ``emax`` (EMAX paper): p parallel Z mappings, the five-state timeline of §5.1;
* ``roofline`` on a GPU or CPU: each time step streams the grid once, at min(peak, bandwidth).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from stencilmap.analysis.halos import program_halo
from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design, ParamValue
from stencilmap.design.registry import build
from stencilmap.device.catalog import Cost, Device
from stencilmap.model.cgra import predict
from stencilmap.model.performance import (
    Scenario,
    launches,
    required_bandwidth,
    soda_ideal_throughput,
    total_seconds,
)
from stencilmap.model.report import EstimateReport, JsonScalar, ModelContext, host_seconds, reject_options
from stencilmap.model.resources import ResourceUsage, design_resources
from stencilmap.model.roofline import roofline_of
from stencilmap.model.timing import design_timing, int_param, pins_banks
from stencilmap.point import DesignPoint
from stencilmap.program import Program

if TYPE_CHECKING:
    from stencilmap.model.partition import Partitioned

__all__ = ["cgra", "roofline_machine", "spatial"]


@dataclass(frozen=True, slots=True)
class _Stream:
    """A streamed design's timing: q steps on chip, P lanes, C = L + ⌈N_stream / P⌉ cycles per launch."""

    q: int
    lanes: int
    latency: int
    stream_points: int
    parameters: tuple[tuple[str, ParamValue], ...]
    resources: ResourceUsage | None
    cycles: int  # one launch, memory keeping up
    launch_cycles: float  # one launch on the device, bandwidth included
    scenario: Scenario
    notes: tuple[str, ...] = ()
    extra: tuple[tuple[str, JsonScalar], ...] = ()


# ------------------------------------------------------------------------------------ streamed designs


def spatial(ctx: ModelContext) -> EstimateReport:
    """A SODA, StencilFlow or PCM design built by the registry."""
    cfg = ctx.config.point
    other = "vector" if ctx.lanes_option == "unroll" else "unroll"  # the option setting no lanes here
    reject_options(ctx, (other, getattr(cfg, other)), ("tiles", cfg.tiles))
    point = DesignPoint(
        unroll=cfg.unroll, iterate=cfg.iterate, vector=cfg.vector, device=cfg.device, tile=cfg.tile
    )
    split = ctx.partitioned(point)
    design = build(ctx.arch, ctx.program, point) if split is None else split.design
    t = design_timing(design, ctx.program, ctx.device, lanes=ctx.lanes)
    resources = design_resources(design, with_iterate(ctx.program, t.q), ctx.device)
    if split is not None:  # the fullest device's
        resources = max((p.resources for p in split.partition.parts), key=_fullness)
    ctx, clock_notes = _modelled_clock(ctx, resources)
    extra: tuple[tuple[str, JsonScalar], ...] = (
        ("access_points", t.access_points),  # StencilFlow §VIII-D, Fig. 16
        ("achieved_bandwidth_gbs", t.achieved_bandwidth_gbs(ctx.device, ctx.clock_mhz)),
    )
    if ctx.tiled:
        extra += (("soda_ideal_gpoints_per_s", _soda_ideal(ctx, t.lanes, t.q, t.stream_shape) / 1e9),)
    stream = _Stream(
        q=t.q,
        lanes=t.lanes,
        latency=t.latency,
        stream_points=t.stream_points,
        parameters=design.parameters,
        resources=resources,
        cycles=t.compute_cycles,
        launch_cycles=t.cycles(ctx.device, ctx.clock_mhz),
        scenario=t.scenario(ctx.device, ctx.clock_mhz),
        notes=design.notes + _bank_notes(design, ctx.program, ctx.device) + clock_notes + _link_notes(split),
        extra=extra,
    )
    report = _streamed(ctx, stream)
    return report if split is None else replace(report, partition=split.partition)


def _link_notes(split: Partitioned | None) -> tuple[str, ...]:
    """Say when the network links, not the pipeline, set the rate (StencilFlow §VIII-C)."""
    if split is None or not split.partition.network_channels:
        return ()
    slow = min(split.partition.network_channels, key=lambda c: c.rate)
    if slow.rate >= 1.0:
        return ()
    return (
        f"network-bound: {slow.name} needs {slow.required_gbs:.3g} GB/s of the {slow.link_gbs:.3g} GB/s "
        f"links, so the pipeline runs at {slow.rate:.3g} beats a cycle",
    )


def _fullness(usage: ResourceUsage) -> float:
    return max((usage.utilization(name) for name, _ in usage.available), default=0.0)


def _modelled_clock(ctx: ModelContext, resources: ResourceUsage) -> tuple[ModelContext, tuple[str, ...]]:
    """The design's clock from the device's ``clock_model`` at its utilization of the model's logic
    resource (OpenCL §5.1, Fig. 10), unless ``--clock-mhz`` gave one."""
    cm = ctx.device.clock_model
    if cm is None or ctx.config.clock_mhz is not None:
        return ctx, ()
    used = resources.utilization(cm.resource)
    mhz = cm.mhz(used)
    note = f"clock {mhz:.4g} MHz: {ctx.device.name}'s clock model at {100 * used:.1f}% {cm.resource} (its file's clock_model and sources)"
    return replace(ctx, f_hz=mhz * 1e6), (note,)


def _soda_ideal(ctx: ModelContext, k: int, q: int, tile_shape: tuple[int, ...]) -> float:
    """H_ideal (SODA §4.4) with S_d − 1 the halo of one iteration on each tiled (inner) axis."""
    halo = program_halo(ctx.work.program).size
    return soda_ideal_throughput(k, q, ctx.f_hz, tile_shape[1:], tuple(h + 1 for h in halo[1:]))


def _bank_notes(design: Design, program: Program, device: Device) -> tuple[str, ...]:
    if device.interleaved_banks(pins_banks(program)) > 1:
        return (
            f"the program pins no DRAM bank: {device.name} interleaves its global memory, so the "
            f"memory ports share all {device.dram_banks} banks' bandwidth",
        )
    banks = sorted(
        {int_param(dict(m.params), "bank") for m in design.modules if m.kind in ("reader", "writer")}
    )
    if len(banks) < device.dram_banks:
        return (
            f"the design's memory ports use bank(s) {banks} of {device.dram_banks}: they share "
            f"{len(banks)}/{device.dram_banks} of the bandwidth",
        )
    return ()


def cgra(ctx: ModelContext) -> EstimateReport:
    """CGRA §III/§IV/§VI: the worker mapping ``design.cgra`` builds (workers, strips, layers) and its
    cycles (``model.cgra.predict``: the busiest reader or writer, or the memory, plus the pipeline).
    ``--tiles n`` (§VIII-A): n fabrics, each with its own workers and bandwidth, split the grid
    (``design.cgra.tiles``); they run side by side, so the time is the slowest tile's, the lanes and the
    roofline n tiles'."""
    from dataclasses import replace

    from stencilmap.design.cgra.mapping import map_cgra
    from stencilmap.design.cgra.tiles import split_tiles, tile_program
    from stencilmap.model.cgra import roofline_workers, roofline_workers_of

    cfg = ctx.config.point
    reject_options(ctx, ("vector", cfg.vector))
    q = cfg.iterate if cfg.iterate is not None else max(1, ctx.program.iterate)
    workers = cfg.workers if cfg.workers is not None else cfg.unroll
    program = with_iterate(ctx.program, q)
    tiles = cfg.tiles or 1
    if tiles > 1 and workers is None:  # every tile the whole grid's §VI choice (a band's own is lower)
        workers = roofline_workers(program, DesignPoint(device=cfg.device))
    point = DesignPoint(device=cfg.device, workers=workers, strip=cfg.strip)
    parts = [program] if tiles == 1 else [tile_program(program, t) for t in split_tiles(program, tiles)]
    mapped = [map_cgra(p, point, roofline_workers_of) for p in parts]
    preds = [predict(m, ctx.device, ctx.clock_mhz) for m in mapped]
    slowest = max(range(len(preds)), key=lambda i: preds[i].cycles)
    mapping, pred = mapped[slowest], preds[slowest]
    macs = ctx.device.resource("mac") or 0
    arith = sum(mapping.count(op) for op in ("MUL", "MAC", "ADD"))
    parameters = (("layers", q), ("strips", len(mapping.strips)), ("workers", mapping.workers))
    stream = _Stream(
        q=q,
        lanes=sum(m.workers for m in mapped),
        latency=pred.latency,
        stream_points=ctx.work.points,
        parameters=parameters if tiles == 1 else (*parameters, ("tiles", tiles)),
        resources=ResourceUsage(Cost.of({"mac": arith}), (("mac", macs),)),
        cycles=pred.cycles,
        launch_cycles=pred.cycles,
        scenario="bandwidth" if pred.bound == "memory" else "compute",
        extra=(("roofline_workers", mapping.roofline_workers), ("cgra_bound", pred.bound)),
        notes=()
        if tiles == 1
        else (
            f"{tiles} CGRA tiles (§VIII-A), each its own fabric and {ctx.device.practical_bandwidth_gbs:g} GB/s: "
            f"the slowest (tile {slowest}, {parts[slowest].shape[0]} of {program.shape[0]} rows with its halo) "
            "sets the time; resources are one tile's",
        ),
    )
    report = _streamed(ctx, stream)
    return report if tiles == 1 else replace(report, roofline_gops=report.roofline_gops * tiles)


def _streamed(ctx: ModelContext, s: _Stream) -> EstimateReport:
    """Time of a streamed design (OpenCL eqs. 1–7) from its cycles per launch."""
    cfg, device, work = ctx.config, ctx.device, ctx.work
    b_req = required_bandwidth(work.bytes_per_point, s.lanes, ctx.f_hz)
    t_comp = s.launch_cycles / ctx.f_hz
    steps = cfg.iterations if cfg.iterations is not None else s.q
    n = launches(steps, s.q)
    t_hf, t_fh = host_seconds(work, device)
    t_ctrl = device.launch_overhead_us * 1e-6
    return EstimateReport(
        program=ctx.program,
        device=device,
        arch=ctx.arch,
        clock_mhz=ctx.clock_mhz,
        parameters=s.parameters,
        iterations=steps,
        steps_on_chip=s.q,
        launches=n,
        lanes=s.lanes,
        latency_cycles=s.latency,
        cycles_per_launch=s.cycles,
        stream_points=s.stream_points,
        required_bandwidth_gbs=b_req / 1e9,
        scenario=s.scenario,
        compute_seconds=t_comp,
        host_seconds=t_hf + t_fh,
        control_seconds=n * t_ctrl,
        predicted_seconds=total_seconds(t_hf, n, t_ctrl, t_comp, t_fh),
        ops=work.ops(steps),
        roofline_gops=roofline_of(ctx.program, ctx.shape, device, s.q).attainable_gops,
        resources=s.resources,
        notes=s.notes,
        extra=s.extra,
    )


# ------------------------------------------------------------------------------------------- GPU / CPU


def roofline_machine(ctx: ModelContext) -> EstimateReport:
    """A GPU or CPU at its roofline: each time step reads the inputs and writes the outputs once."""
    cfg, device, work = ctx.config, ctx.device, ctx.work
    point = cfg.point
    reject_options(
        ctx,
        ("unroll", point.unroll),
        ("vector", point.vector),
        ("iterate", point.iterate),
        ("tiles", point.tiles),
    )
    steps = cfg.iterations if cfg.iterations is not None else max(1, ctx.program.iterate)
    peak = device.peak(work.dtype) * 1e9
    t_ops = work.ops() / peak
    t_mem = work.bytes_per_point * work.points / (device.practical_bandwidth_gbs * 1e9)
    t_step = max(t_ops, t_mem)
    t_hf, t_fh = host_seconds(work, device)
    t_ctrl = device.launch_overhead_us * 1e-6
    b_req = work.bytes_per_point * work.points / t_ops if t_ops else 0.0
    return EstimateReport(
        program=ctx.program,
        device=device,
        arch=ctx.arch,
        clock_mhz=ctx.clock_mhz,
        parameters=(),
        iterations=steps,
        steps_on_chip=1,
        launches=steps,
        lanes=0,
        latency_cycles=0,
        cycles_per_launch=round(t_step * ctx.f_hz),
        stream_points=work.points,
        required_bandwidth_gbs=b_req / 1e9,
        scenario="compute" if t_ops >= t_mem else "bandwidth",
        compute_seconds=t_step,
        host_seconds=t_hf + t_fh,
        control_seconds=steps * t_ctrl,
        predicted_seconds=total_seconds(t_hf, steps, t_ctrl, t_step, t_fh),
        ops=work.ops(steps),
        roofline_gops=roofline_of(ctx.program, ctx.shape, device).attainable_gops,
        resources=None,
    )
