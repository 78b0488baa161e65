"""How reports look: Rich tables for people, plain dicts for ``--json``. No computation happens here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stencilmap.analysis import ProgramAnalysis
from stencilmap.analyze import AnalyzeReport
from stencilmap.jobs.run import FieldReport, RunReport


def _dims(shape: tuple[int, ...]) -> str:
    return "×".join(str(n) for n in shape) or "scalar"


# --------------------------------------------------------------------------------------------------- run


def region_text(f: FieldReport) -> str:
    if f.defined is None:
        return "none"
    if all(lo == 0 and hi == n for (lo, hi), n in zip(f.defined, f.shape, strict=True)):
        return "all"
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in f.defined) + "]"


def run_json(report: RunReport) -> dict[str, Any]:
    p = report.program
    return {
        "program": p.name,
        "file": p.path,
        "format": p.format,
        "shape": list(p.shape),
        "iterate": p.iterate,
        "fields": [
            {
                "name": f.name,
                "role": f.role,
                "shape": list(f.shape),
                "dtype": f.dtype,
                "source": f.source,
                "defined_region": [list(b) for b in f.defined] if f.defined is not None else None,
                "defined_points": f.defined_points,
            }
            for f in report.fields
        ],
        "outputs": {k: str(v) for k, v in report.outputs.items()},
        "seconds": round(report.seconds, 6),
        "backend": report.backend,
        "compute_seconds": round(report.compute_seconds, 6),
        "compile_seconds": round(report.compile_seconds, 6) if report.compile_seconds is not None else None,
        "gcells_per_s": float(f"{report.gcells_per_s:.6g}"),
        "warnings": list(p.warnings),
    }


def print_run(report: RunReport, console: Console) -> None:
    p = report.program
    iterate = f", iterate {p.iterate}" if p.iterate > 1 else ""
    table = Table(title=f"{escape(p.name)} ({p.format}, {_dims(tuple(int(n or 0) for n in p.shape))}{iterate}): {report.backend} run",
                  title_justify="left")  # fmt: skip
    for col in ("field", "role", "shape", "dtype", "defined region", "source / written to"):
        table.add_column(col)
    for f in report.fields:
        table.add_row(f.name, f.role, _dims(f.shape), f.dtype, region_text(f), escape(f.source))
    console.print(table)
    console.print(
        f"done in {report.seconds:.3f} s (kernel {report.compute_seconds:.3f} s, {report.gcells_per_s:.3g} GCell/s)"
    )


# ----------------------------------------------------------------------------------------------- analyze


def analyze_json(report: AnalyzeReport) -> dict[str, Any]:
    d = report.design
    out: dict[str, Any] = dict(report.facts.to_json())
    out.update(
        arch=report.arch,
        format=report.program.format,
        modules=d.kinds(),
        channels=len(d.channels),
        channel_depth_total=sum(c.depth * c.width for c in d.channels),
        design_parameters={k: list(v) if isinstance(v, tuple) else v for k, v in d.parameters},
        dot=str(report.dot) if report.dot is not None else None,
        total_buffer_elements=design_buffer_elements(report),
    )
    if report.emax is not None:
        from stencilmap.design.emax import emax_json

        out["emax"] = emax_json(report.emax)
        out["asm"] = str(report.asm) if report.asm is not None else None
    if report.cgra is not None:
        from stencilmap.design.cgra_text import cgra_json

        out["cgra"] = cgra_json(report.cgra)
        out["asm"] = str(report.asm) if report.asm is not None else None
    return out


def design_buffer_elements(report: AnalyzeReport) -> int:
    """On-chip buffer elements of the chosen microarchitecture: SODA/PCM reuse buffers, or StencilFlow's
    internal plus delay buffers."""
    f = report.facts
    if report.arch == "stencilflow":
        return f.internal_buffer_elements + f.delay_buffer_elements
    return f.reuse_buffer_elements


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


def _delay_table(f: ProgramAnalysis) -> Table:
    t = Table(title="StencilFlow delay buffers (elements)", title_justify="left")
    t.add_column("edge")
    t.add_column("depth", justify="right")
    for edge, depth in sorted(f.delay_buffers.items()):
        t.add_row(edge, str(depth))
    return t


def print_analysis(report: AnalyzeReport, console: Console) -> None:
    f, d, p = report.facts, report.design, report.program
    params = ", ".join(f"{k}={'×'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in d.parameters)
    console.print(
        f"[bold]{escape(p.name)}[/bold] ({p.format}, {_dims(f.shape)}) on [bold]{report.arch}[/bold]: {params}"
    )
    console.print(_stencil_table(f))
    if report.arch in ("soda", "pcm"):
        console.print(_reuse_table(f))
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
    if report.arch == "stencilflow":
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
            "reuse / internal / delay buffers",
            f"{f.reuse_buffer_elements:,} / {f.internal_buffer_elements:,} / "
            f"{f.delay_buffer_elements:,} elements",
        ),
        ("total buffer elements", f"{design_buffer_elements(report):,}"),
        ("modules", ", ".join(f"{k} {v}" for k, v in d.kinds().items())),
        (
            "channels",
            f"{len(d.channels)} (total depth {sum(c.depth * c.width for c in d.channels):,} elements)",
        ),
    ]
    for what, value in rows:
        summary.add_row(what, value)
    console.print(summary)
    if report.dot is not None:
        console.print(f"DOT written to {escape(str(report.dot))}")
    if report.asm is not None:
        what = "CGRA assembly" if report.cgra is not None else "EMAX mnemonics"
        console.print(f"{what} written to {escape(str(report.asm))}")
