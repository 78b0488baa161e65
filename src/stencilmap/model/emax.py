"""The EMAX 3D-stencil library's models (EMAX paper §4.5, §4.6, §5.1).

A degree-d 3-D star stencil streams rows along X through the FIFOs of one PE row, reuses the rows of
neighbouring Y in the local memories (LMMs, shifted by ``dist``), and packs p neighbouring Z planes into
one mapping. Volumes are counted in X-streams (one row of X points); y and z are the Y and Z sizes.

Execution (§5.1, Fig. 12): the library activates EMAX once per Y row and group of p Z planes (and per
X chunk when a row exceeds the LMM). Each execution runs five states — 1 host → DDR3, 2 DDR3 → LMM
prefetch, 3 compute, 4 LMM → DDR3, 5 DDR3 → host — each after the previous state of the same
execution; executions overlap, except that states 1 and 5 share the host path and states 2 and 3 the
LMM port. Over E executions this is a pipeline of latency Σ t_s and initiation interval the busiest
path, max(t1 + t5, t2 + t3, t4): T = Σ t_s + (E − 1)·max(t1 + t5, t2 + t3, t4) — the C = L + I·N of
StencilFlow §VIII-A with executions for points. ``estimate_emax`` is ``estimate``'s model for EMAX devices.
The mapping's size (rows, p, X chunks, streams moved) is the placement's (``design.emax.geometry``).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING, Literal

from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.intensity import itemsize
from stencilmap.design.emax.geometry import group_streams, mapped_streams, max_mappings, rows, x_chunks
from stencilmap.device.catalog import Cost, Device
from stencilmap.errors import StencilmapError, param
from stencilmap.model.report import EstimateReport, ModelContext, reject_options
from stencilmap.model.resources import ResourceUsage
from stencilmap.model.roofline import roofline_of

if TYPE_CHECKING:
    from stencilmap.design.emax.mapping import EmaxMapping

__all__ = [
    "Plan",
    "Timeline",
    "approx_streams",
    "estimate_emax",
    "first_streams",
    "group_streams",
    "mapped_streams",
    "mapping_timeline",
    "max_mappings",
    "next_streams",
    "plan",
    "rows",
    "step_timeline",
    "stream_points",
    "sweep_streams",
    "timeline",
    "total_streams",
    "unbounded_ratio",
    "x_chunks",
]

DataPath = Literal["host", "lmm", "writeback"]


def first_streams(d: int, p: int) -> int:
    """(1) Streams the first step of a Y sweep transfers: (4d + 1) + p(2d + 1)."""
    return (4 * d + 1) + p * (2 * d + 1)


def next_streams(d: int, p: int) -> int:
    """(2) Streams each further step along Y transfers: (2d + 1) + (p − 1) = 2d + p."""
    return 2 * d + p


def sweep_streams(d: int, p: int, y: int) -> int:
    """(3) Streams of one xy sweep: y(2d + p)."""
    return y * next_streams(d, p)


def total_streams(d: int, p: int, y: int, z: int) -> float:
    """(4) Streams of the whole xyz iteration: z((1) + (3)) / p."""
    return z * (first_streams(d, p) + sweep_streams(d, p, y)) / p


def approx_streams(d: int, p: int, y: int, z: int) -> float:
    """(5) The approximation for p < y: yz(2d + p) / p; relative to p = 1 it falls to 1 / (2d + 1)."""
    return y * z * (2 * d + p) / p


def unbounded_ratio(d: int) -> float:
    """§4.5's transfer ratio as the paper states it: "if we assume that the target EMAX has an infinite number
    of rows", (5) at p over (5) at p = 1 is (2d + p) / (p(2d + 1)), which falls to 1 / (2d + 1) as p grows
    (1/3, 1/5, 1/7 for degrees 1, 2, 3) — a limit, not the ratio at the p a device's rows fit."""
    return 1 / (2 * d + 1)


def stream_points(x: int, d: int, chunks: int) -> tuple[int, ...]:
    """Points of one X-stream per chunk that exist in the grid: the chunk and its 2d halo, clipped
    (Fig. 7: chunks of ⌈x / chunks⌉ points overlap by the halo)."""
    n = ceil(x / chunks)
    return tuple(min(x, c * n + n + d) - max(0, c * n - d) for c in range(chunks) if c * n < x)


@dataclass(frozen=True, slots=True)
class Timeline:
    """The five states of one execution (seconds) and the number of executions."""

    states: tuple[float, float, float, float, float]
    executions: int

    @property
    def paths(self) -> dict[DataPath, float]:
        """Busy time per execution of each exclusive path (§5.1: states 1 & 5, states 2 & 3)."""
        t1, t2, t3, t4, t5 = self.states
        return {"host": t1 + t5, "lmm": t2 + t3, "writeback": t4}

    @property
    def interval(self) -> float:
        return max(self.paths.values())

    @property
    def bottleneck(self) -> DataPath:
        """The busiest path (ties: host, then lmm)."""
        paths = self.paths
        return max(paths, key=lambda k: paths[k])

    @property
    def seconds(self) -> float:
        """Σ t_s + (E − 1) × max(t1 + t5, t2 + t3, t4)."""
        return sum(self.states) + (self.executions - 1) * self.interval if self.executions else 0.0


def timeline(
    bytes_in: float,
    bytes_out: float,
    compute_cycles: float,
    executions: int,
    host_bps: float | None,
    lmm_bps: float,
    f_hz: float,
) -> Timeline:
    """The five-state timeline of ``executions`` executions, each moving ``bytes_in`` / ``bytes_out``
    (host link ``host_bps``, None: shared memory, no copies; LMM link ``lmm_bps``) and computing for
    ``compute_cycles`` cycles."""
    host = (lambda b: b / host_bps) if host_bps else (lambda b: 0.0)
    states = (host(bytes_in), bytes_in / lmm_bps, compute_cycles / f_hz, bytes_out / lmm_bps, host(bytes_out))
    return Timeline(states, executions)


def step_timeline(
    d: int,
    p: int,
    n_rows: int,
    shape: tuple[int, int, int],
    chunks: int,
    itemsize: int,
    host_bps: float | None,
    lmm_bps: float,
    f_hz: float,
) -> Timeline:
    """The closed-form timeline of one time step of a (Z, Y, X) grid: every execution moves the mean
    bytes (``mapped_streams`` of ``stream_points`` in, the outputs back) and computes a chunk's stream
    through the FIFOs plus the pipeline of ``n_rows`` rows."""
    z, y, x = shape
    streams = mapped_streams(d, p, y, z, chunks)
    bytes_in = streams // chunks * sum(stream_points(x, d, chunks)) * itemsize
    executions = chunks * y * ceil(z / p)
    cycles = ceil(x / chunks) + 2 * d + n_rows
    return timeline(
        bytes_in / executions, z * y * x * itemsize / executions, cycles, executions, host_bps, lmm_bps, f_hz
    )


def mapping_timeline(m: EmaxMapping, device: Device) -> Timeline:
    """``step_timeline`` of mapping ``m`` on ``device`` at its rates (host link, LMM link, clock): the
    closed form the EMAX simulator's scheduled timeline is compared with (``arch.simulate``)."""
    host = device.host_bandwidth_gbs * 1e9 if device.host_bandwidth_gbs else None
    rates = (host, device.practical_bandwidth_gbs * 1e9, device.clock_mhz * 1e6)
    return step_timeline(m.degree, m.p, m.rows, m.shape, m.x_chunks, itemsize(m.dtype), *rates)


# ------------------------------------------------------------------------------------------ estimate


@dataclass(frozen=True, slots=True)
class Plan:
    """How the library runs one time step of a 3-D grid (Z, Y, X) (C order; X is the stream)."""

    degree: int
    p: int
    rows: int
    chunks: int  # X chunks
    x_stream: int  # points of one chunk's stream, halo included
    itemsize: int
    executions: int
    streams_in: int  # X-streams moved to the LMMs: ``mapped_streams`` (≈ formula (4) without its (1) term)
    bytes_in: int  # bytes those streams hold (each the in-grid part of a chunk and its halo)


def plan(ctx: ModelContext) -> Plan:
    """Degree from the halo of one pass, X chunks for the LMM, p = ``--unroll`` or the most that fit."""
    if ctx.program.rank != 3:
        raise StencilmapError(
            f"the EMAX library computes 3-D stencils (EMAX §2.1); this program is {ctx.program.rank}-D"
        )
    program, device = ctx.work.program, ctx.device
    halo = program_halo(program)
    d = max((*halo.low, *halo.high))
    z, y, x = ctx.shape
    size = max(
        itemsize(program.field_dtype(f)) for f in (*(i.name for i in program.inputs), *program.outputs)
    )
    try:
        chunks = x_chunks(x, d, size, device.resource("lmm_bytes") or 0)
    except ValueError as exc:
        raise StencilmapError(str(exc)) from None
    available, columns = device.resource("pe_rows") or 0, device.resource("pe_columns") or 0
    p = (
        ctx.config.point.unroll
        if ctx.config.point.unroll is not None
        else max_mappings(d, available, z, columns)
    )
    if p < 1 or rows(d, p, columns) > available:
        raise StencilmapError(
            f"a degree-{d} mapping of p = {max(p, 1)} needs {rows(d, max(p, 1), columns)} rows (EMAX §4.6); "
            f"'{device.name}' has {available}"
        )
    if p > z:
        raise StencilmapError(f"p = {p} parallel mappings exceed the {z} Z planes")
    groups = ceil(z / p)
    streams_in = mapped_streams(d, p, y, z, chunks)
    per_chunk = stream_points(x, d, chunks)
    bytes_in = streams_in // chunks * sum(per_chunk) * size
    return Plan(
        d,
        p,
        rows(d, p, columns),
        chunks,
        ceil(x / chunks) + 2 * d,
        size,
        chunks * y * groups,
        streams_in,
        bytes_in,
    )


def estimate_emax(ctx: ModelContext) -> EstimateReport:
    """EMAX §4.5–§5.1: one execution per Y row, Z group and X chunk, five states each, T time steps."""
    cfg, device, work = ctx.config, ctx.device, ctx.work
    reject_options(ctx, ("vector", cfg.point.vector), ("tiles", cfg.point.tiles))
    if (cfg.point.iterate or 1) != 1:
        raise StencilmapError(
            "the EMAX library computes one time step per call (EMAX §4.2): " + param("iterate") + " must be 1"
        )
    pl = plan(ctx)
    bytes_in = pl.bytes_in / pl.executions
    bytes_out = work.output_bytes / pl.executions
    host = device.host_bandwidth_gbs * 1e9 if device.host_bandwidth_gbs else None
    tl = timeline(
        bytes_in,
        bytes_out,
        pl.x_stream + pl.rows,
        pl.executions,
        host,
        device.practical_bandwidth_gbs * 1e9,
        ctx.f_hz,
    )
    steps = cfg.iterations if cfg.iterations is not None else 1
    t1, t2, t3, _, t5 = tl.states
    available = (
        ("lmm_bytes", device.resource("lmm_bytes") or 0),
        ("pe_rows", device.resource("pe_rows") or 0),
    )
    used = Cost.of({"pe_rows": pl.rows, "lmm_bytes": pl.x_stream * pl.itemsize})
    return EstimateReport(
        program=ctx.program,
        device=device,
        arch=ctx.arch,
        clock_mhz=ctx.clock_mhz,
        parameters=(("degree", pl.degree), ("p", pl.p), ("rows", pl.rows), ("x_chunks", pl.chunks)),
        iterations=steps,
        steps_on_chip=1,
        launches=steps * pl.executions,
        lanes=pl.p,
        latency_cycles=pl.rows,
        cycles_per_launch=pl.x_stream + pl.rows,
        stream_points=work.points,
        required_bandwidth_gbs=(bytes_in + bytes_out) / t3 / 1e9,
        scenario="compute" if tl.bottleneck == "lmm" and t3 >= t2 else "bandwidth",
        compute_seconds=tl.seconds / pl.executions,
        host_seconds=steps * pl.executions * (t1 + t5),
        control_seconds=0.0,
        predicted_seconds=steps * tl.seconds,
        ops=work.ops(steps),
        roofline_gops=roofline_of(ctx.program, ctx.shape, device).attainable_gops,
        resources=ResourceUsage(used, available),
        extra=(
            ("executions_per_step", pl.executions),
            ("transfer_streams", pl.streams_in),
            ("timeline_bottleneck", tl.bottleneck),
            ("state_seconds", ",".join(f"{t:.6g}" for t in tl.states)),
        ),
    )
