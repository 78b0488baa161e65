"""``stencilmap analyze``: program facts and the design a builder makes of them (``stencilmap.jobs.analyze``);
Rich tables for people, one JSON object for ``--json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stencilmap.cli.common import (
    design_options,
    dims,
    echo_csv,
    format_options,
    fused_line,
    make_console,
    output_format,
    parse_shape,
    partition_table,
    user_errors,
    warn,
)
from stencilmap.point import DesignPoint

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from stencilmap.analysis import ProgramAnalysis
    from stencilmap.analysis.storage import Storage
    from stencilmap.design.ir import Design
    from stencilmap.jobs.analyze import AnalyzeReport


@click.command("analyze")
@click.argument("program", type=click.Path(path_type=Path))
@design_options(
    "arch",
    "unroll",
    "iterate",
    "vector",
    "tile",
    "workers",
    "strip",
    "device",
    "fuse",
    "devices",
    "partition",
    help={
        "unroll": "PEs per stage k (SODA) / P_cell (PCM) / parallel Z mappings p (EMAX)  [default: the program's; EMAX: the most that fit].",
        "iterate": "Stages q (SODA) / PCMs d  [default: the program's].",
        "strip": "CGRA vertical strip width (§III-B)  [default: one strip unless the buffering overflows].",
        "device": "The device whose operator latencies, CGRA fabric or EMAX rows the design uses; the board --devices / --partition split the design over.",
    },
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option(
    "--dot", type=click.Path(path_type=Path), metavar="FILE", help="Write the design as Graphviz DOT."
)
@click.option(
    "--asm",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Write the EMAX mnemonics (--arch emax) or the CGRA assembly (--arch cgra).",
)
@format_options
@user_errors
def analyze_cmd(
    program: Path,
    point: DesignPoint,
    shape: tuple[int, ...] | None,
    dot: Path | None,
    asm: Path | None,
    fmt: str,
    as_json: bool,
) -> None:
    """Analyze PROGRAM and build its spatial design: windows, halos, reuse chains, delay buffers,
    latency, runtime, operational intensity, module and FIFO totals.

    \b
    Examples:
      stencilmap analyze examples/jacobi2d.soda --unroll 4
      stencilmap analyze examples/dag_listing1.json --arch stencilflow --json
      stencilmap analyze examples/laplace2d.soda --arch pcm --iterate 8 --dot laplace.dot
      stencilmap analyze examples/star3d_degree3.soda --arch emax --unroll 2 --asm fd6.asm
      stencilmap analyze examples/jacobi2d.soda --shape 1024,1024 --tile 256 --format csv
      stencilmap analyze examples/stencil1d_r8.json --arch cgra --asm s1d.asm --dot s1d.dot
    """
    from stencilmap.jobs.analyze import AnalyzeConfig, analyze

    fmt = output_format(fmt, as_json)
    config = AnalyzeConfig(program=program, point=point, shape=shape, dot=dot, asm=asm)
    report = analyze(config)
    warn(report.program.warnings)
    if fmt == "json":
        click.echo(json.dumps(analyze_json(report), indent=2))
    elif fmt == "csv":
        analyze_csv(report)
    else:
        if point.fuse:
            click.echo(fused_line(report.fused))
        print_analysis(report, make_console())


def analyze_csv(report: AnalyzeReport) -> None:
    """``--format csv``: the stencils table, one row per field a stencil reads (halos as lo;hi per axis)."""
    rows = []
    for s in report.facts.stencils:
        for ff in s.fields:
            w = ff.window
            rows.append(
                (
                    s.name,
                    w.field,
                    "x".join(map(str, w.window)),
                    ff.reuse_distance,
                    ";".join(map(str, w.halo_low)),
                    ";".join(map(str, w.halo_high)),
                    s.ops.total,
                    s.compute_latency,
                    s.init_phase,
                )
            )
    header = (
        "stencil",
        "field",
        "window",
        "reuse_distance",
        "halo_low",
        "halo_high",
        "ops",
        "latency",
        "init",
    )
    echo_csv(header, rows)


# ----------------------------------------------------------------------------------------------- analyze


def analyze_json(report: AnalyzeReport) -> dict[str, Any]:
    d = report.design
    built = design_buffers(report)
    out: dict[str, Any] = dict(report.facts.to_json())
    for key in ("internal_buffer_elements",):  # an analysis fact: under analysis_buffer_elements
        out.pop(key)
    out.update(
        arch=report.arch,
        format=report.program.format,
        modules=d.kinds(),
        channels=len(d.channels),
        channel_depth_total=sum(c.depth * c.width for c in d.channels),
        design_parameters={k: list(v) if isinstance(v, tuple) else v for k, v in d.parameters},
        dot=str(report.dot) if report.dot is not None else None,
        analysis_buffer_elements=analysis_buffers_json(report.facts),
        reuse_buffer_elements=built.reuse,
        delay_buffer_elements=built.delay,
        total_buffer_elements=built.total,
        fused=[list(pair) for pair in report.fused],
    )
    if report.partition is not None:
        out["partition"] = report.partition.to_json()
    if report.emax is not None:
        from stencilmap.design.emax import emax_json

        out["emax"] = emax_json(report.emax)
        out["asm"] = str(report.asm) if report.asm is not None else None
    if report.cgra is not None:
        from stencilmap.design.cgra.mapping import cgra_json

        out["cgra"] = cgra_json(report.cgra)
        out["asm"] = str(report.asm) if report.asm is not None else None
    return out


def design_buffers(report: AnalyzeReport) -> Storage:
    """On-chip buffer elements of the design as built: SODA's shared reuse buffers and their delays,
    PCM's shift registers, or StencilFlow's internal buffers and delay buffers (the delays its builder
    sizes: ``analysis.delays``). Other designs (EMAX, CGRA, host) keep no stream buffers here: 0."""
    from stencilmap.analysis.storage import Storage
    from stencilmap.arch import arch
    from stencilmap.design.soda import chain_storage

    buffering = arch(report.arch).buffering
    if buffering == "chains":
        return chain_storage(report.design)
    kinds = {"delays": "internal_buffer", "reuse": "shift_register"}
    reuse = sum(
        int(str(m.param("size"))) for m in report.design.modules if m.kind == kinds.get(buffering or "")
    )
    return Storage(reuse, report.facts.delay_buffer_elements if buffering == "delays" else 0)


def analysis_buffers_json(f: ProgramAnalysis) -> dict[str, int]:
    """The per-consumer analysis's buffer facts (one window buffer per reader, before any design shares
    or sizes them), named as such beside the built design's."""
    return {
        "reuse_per_consumer": f.reuse_buffer_elements,
        "internal": f.internal_buffer_elements,
        "delay": f.delay_buffer_elements,
        "total": f.total_buffer_elements,
    }


def _halo(low: tuple[int, ...], high: tuple[int, ...]) -> str:
    return " ".join(f"{lo}/{hi}" for lo, hi in zip(low, high, strict=True))


def _stencil_table(f: ProgramAnalysis) -> Table:
    t = Table(title="stencils (per pass)", title_justify="left")
    for col in ("stencil", "field", "window", "D_r", "halo lo/hi", "ops", "latency", "init"):
        t.add_column(col, justify="right" if col in ("D_r", "ops", "latency", "init") else "left")
    for s in f.stencils:
        for n, ff in enumerate(s.fields):
            w = ff.window
            first = n == 0
            t.add_row(
                s.name if first else "",
                w.field,
                "×".join(map(str, w.window)),
                str(ff.reuse_distance),
                _halo(w.halo_low, w.halo_high),
                str(s.ops.total) if first else "",
                str(s.compute_latency) if first else "",
                str(s.init_phase) if first else "",
            )
    return t


def _reuse_table(f: ProgramAnalysis) -> Table:
    t = Table(title=f"SODA reuse buffers (k = {f.unroll}; size = D_r + k − 1)", title_justify="left")
    for col in ("stencil", "field", "size", "chains (linear offsets)", "FIFO depths"):
        t.add_column(col)
    for s, bufs in sorted(f.reuse_buffers.items()):
        for field_name, b in sorted(bufs.items()):
            chains = " | ".join("{" + ", ".join(map(str, c.offsets)) + "}" for c in b.chains)
            t.add_row(s, field_name, str(b.size), chains, ", ".join(map(str, b.fifo_depths)) or "-")
    return t


def _shared_table(design: Design) -> Table:
    """SODA's one buffer per producer (``analysis.sharing``) as built: its readers at their lags."""
    t = Table(title="SODA shared reuse buffers (one per producer, as built)", title_justify="left")
    for col in ("stage", "field", "elements", "readers (lag in beats)"):
        t.add_column(col, justify="right" if col == "elements" else "left")
    taps = [m for m in design.modules if m.kind == "forward"]
    for stage, field_name in sorted({(int(str(m.param("stage"))), str(m.param("field"))) for m in taps}):
        mine = [m for m in taps if m.param("stage") == stage and m.param("field") == field_name]
        fifos = [
            m
            for m in design.modules
            if m.kind == "fifo" and m.param("stage") == stage and m.param("field") == field_name
        ]
        size = len(mine) + sum(int(str(m.param("depth"))) for m in fifos)
        lags = {str(r): int(str(m.param("lag"))) for m in mine for r in m.param("readers") or ()}  # type: ignore[union-attr]
        t.add_row(
            str(stage), field_name, f"{size:,}", ", ".join(f"{r} ({g})" for r, g in sorted(lags.items()))
        )
    return t


def _delay_table(f: ProgramAnalysis) -> Table:
    t = Table(title="StencilFlow delay buffers (elements)", title_justify="left")
    t.add_column("edge")
    t.add_column("depth", justify="right")
    for edge, depth in sorted(f.delay_buffers.items()):
        t.add_row(edge, str(depth))
    return t


def print_analysis(report: AnalyzeReport, console: Console) -> None:
    from stencilmap.arch import arch

    f, d, p = report.facts, report.design, report.program
    built = design_buffers(report)
    params = ", ".join(f"{k}={'×'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in d.parameters)
    console.print(
        f"[bold]{escape(p.name)}[/bold] ({p.format}, {dims(f.shape)}) on [bold]{report.arch}[/bold]"
        f"{f' for {escape(d.device)}' if d.device else ''}: {params}"
    )
    console.print(_stencil_table(f))
    buffering = arch(report.arch).buffering
    if buffering in ("chains", "reuse"):
        console.print(_reuse_table(f))
    if buffering == "chains":
        console.print(_shared_table(d))
    if report.emax is not None:
        from stencilmap.design.emax import emax_json

        console.print("EMAX mapping: " + ", ".join(f"{k} {v:,}" for k, v in emax_json(report.emax).items()))
    if report.cgra is not None:
        c = report.cgra
        pes = ", ".join(f"{op} {n:,}" for op, n in c.op_counts().items())
        console.print(
            f"CGRA mapping: {c.workers} workers (roofline: {c.roofline_workers}), {c.layers} layer(s), "
            f"{len(c.strips)} strip(s), grid {c.grid[0]}×{c.grid[1]}; PEs: {pes}"
        )
    if buffering == "delays":
        console.print(_delay_table(f))
    summary = Table(title="summary", title_justify="left", show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    rows = [
        ("grid points N", f"{f.points:,}"),
        ("lanes k·W", str(f.lanes)),
        ("pipeline latency L", f"{f.latency_cycles:,} cycles"),
        ("runtime C = L + N/(k·W)", f"{f.runtime_cycles:,} cycles"),
        (
            "ops per point",
            f"{f.ops.total} ({', '.join(f'{k} {v}' for k, v in f.ops.as_dict().items() if v)})",
        ),
        ("off-chip bytes per point", f"{f.bytes_per_point:g}"),
        ("operational intensity", f"{f.operational_intensity:.4g} op/B"),
        (
            "buffers as built: reuse + delay",
            f"{built.reuse:,} + {built.delay:,} = {built.total:,} elements",
        ),
        (
            "analysis, per consumer: reuse / internal / delay",
            f"{f.reuse_buffer_elements:,} / {f.internal_buffer_elements:,} / "
            f"{f.delay_buffer_elements:,} elements",
        ),
        ("modules", ", ".join(f"{k} {v}" for k, v in d.kinds().items())),
        (
            "channels",
            f"{len(d.channels)} (total depth {sum(c.depth * c.width for c in d.channels):,} elements)",
        ),
    ]
    for what, value in rows:
        summary.add_row(what, value)
    console.print(summary)
    if report.partition is not None:
        console.print(partition_table(report.partition))
    if report.dot is not None:
        console.print(f"DOT written to {escape(str(report.dot))}")
    if report.asm is not None:
        what = "CGRA assembly" if report.cgra is not None else "EMAX mnemonics"
        console.print(f"{what} written to {escape(str(report.asm))}")
