"""The roofline picture: log-log, ceilings and the program's point, written atomically (PNG or SVG).

Drawn on a bare ``matplotlib.figure.Figure`` with the Agg canvas (no pyplot state, no display needed);
SVG output carries no date and a fixed hash salt, so the same report always gives the same file.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.errors import StencilmapError
from stencilmap.io import check_output_file, write_bytes_atomically

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: it costs ~0.5 s
    from matplotlib.figure import Figure

    from stencilmap.model.roofline import RooflineReport

FORMATS = {".png": "png", ".svg": "svg"}


def check_plot_path(path: Path) -> str:
    """The format of a plot file (``png`` or ``svg``) that can be written; a StencilmapError otherwise."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise StencilmapError("the plot must be a .png or .svg file", str(path))
    check_output_file(path, "--plot")
    return fmt


def save_figure(path: Path, draw: Callable[[], Figure]) -> None:
    """Draw a figure and write it to ``path`` (``.png`` or ``.svg``, reproducible: no date, fixed SVG ids)
    through a temporary file and a rename."""
    fmt = check_plot_path(path)
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "stencilmap", "svg.fonttype": "path"}):
        figure = draw()
        buffer = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": "stencilmap"}
        figure.savefig(buffer, format=fmt, dpi=120, metadata=metadata)
    write_bytes_atomically(path, buffer.getvalue())


def write_roofline_plot(path: Path, report: RooflineReport) -> None:
    """Draw ``report`` into ``path`` (``.png`` or ``.svg``)."""
    save_figure(path, lambda: roofline_figure(report))


def roofline_figure(report: RooflineReport) -> Figure:
    """The labelled log-log roofline of ``report``."""
    peak, bw, intensity = report.peak_gops, report.bandwidth_gbs, report.operational_intensity
    ridge = report.ridge_intensity
    focus = [v for v in (intensity, ridge, peak / report.peak_bandwidth_gbs) if v > 0]
    lo, hi = min(focus) / 16, max(focus) * 16
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.0, 4.6))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.plot(
        xs,
        [min(peak, bw * x) for x in xs],
        color="C0",
        lw=2,
        label=f"roofline: {peak:g} GOp/s, {bw:.4g} GB/s practical",
    )
    if report.peak_bandwidth_gbs > bw:
        peak_bw = report.peak_bandwidth_gbs
        ax.plot(
            xs,
            [min(peak, peak_bw * x) for x in xs],
            color="C0",
            lw=1,
            ls="--",
            label=f"at the peak bandwidth, {peak_bw:g} GB/s",
        )
    if report.workers is not None and report.workers.workers > 0:
        w = report.workers
        ax.axhline(
            w.gops,
            color="C2",
            lw=1,
            ls=":",
            label=f"{w.workers} workers × {w.ops_per_cycle} op/cycle: {w.gops:.4g} GOp/s",
        )
    ax.axvline(intensity, color="C1", lw=1, ls=":")
    ax.plot(
        [intensity],
        [report.attainable_gops],
        "o",
        color="C1",
        label=f"{report.program.name}: {intensity:.3g} op/B → {report.attainable_gops:.4g} GOp/s",
    )
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(bw * lo, peak) / 2, peak * 3)
    ax.set_xlabel("operational intensity (op/byte)")
    ax.set_ylabel("attainable performance (GOp/s)")
    ax.set_title(f"{report.program.name} on {report.device.name} ({report.work.dtype})")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    return figure
