"""``stencilmap roofline``: a thin click command over ``stencilmap.model.roofline`` (a table or JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape

from stencilmap.cli.common import (
    dims,
    echo_csv,
    flat,
    format_options,
    make_console,
    output_format,
    parse_shape,
    rows_table,
    user_errors,
)

if TYPE_CHECKING:  # the model is imported when the command runs: `--help` stays instant
    from stencilmap.model.roofline import RooflineReport


def roofline_json(report: RooflineReport) -> dict[str, Any]:
    return report.to_json()


def print_roofline(report: RooflineReport, console: Console) -> None:
    d, w = report.device, report.work
    rows = [
        (
            "ops per point",
            f"{w.ops_per_point * report.steps_on_chip} ({report.steps_on_chip} step(s) on chip)",
        ),
        ("off-chip bytes per point", f"{w.bytes_per_point:g}"),
        ("computed points", f"{w.computed_points:,} of {w.points:,}"),
        ("operational intensity", f"{report.operational_intensity:.4g} op/B"),
        ("peak compute", f"{report.peak_gops:g} GOp/s ({w.dtype})"),
        ("bandwidth practical / peak", f"{report.bandwidth_gbs:.4g} / {report.peak_bandwidth_gbs:g} GB/s"),
        ("ridge point", f"{report.ridge_intensity:.4g} op/B"),
        ("attainable", f"[bold]{report.attainable_gops:.4g} GOp/s[/bold] ({report.bound}-bound)"),
        ("attainable at peak bandwidth", f"{report.attainable_peak_bandwidth_gops:.4g} GOp/s"),
    ]
    if report.workers is not None:
        k = report.workers
        rows.append(
            (
                "workers (CGRA §VI)",
                f"{k.workers} of at most {k.max_workers}, {k.pes_per_worker} PEs each: {k.gops:.4g} GOp/s",
            )
        )
    shape = dims(w.shape)
    console.print(rows_table(f"roofline of {escape(report.program.name)} ({shape}) on {d.name}", rows))
    if report.plot is not None:
        console.print(f"plot written to {escape(str(report.plot))}")


@click.command("roofline")
@click.argument("program", type=click.Path(path_type=Path))
@click.option("--device", required=True, metavar="NAME", help="A device of the catalog (stencilmap devices).")
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option(
    "--iterate", type=int, metavar="Q", help="Time steps chained on chip  [default: the program's]."
)
@click.option(
    "--plot", type=click.Path(path_type=Path), metavar="FILE", help="Draw the roofline (.png or .svg)."
)
@format_options
@user_errors
def roofline_cmd(
    program: Path,
    device: str,
    shape: tuple[int, ...] | None,
    iterate: int | None,
    plot: Path | None,
    fmt: str,
    as_json: bool,
) -> None:
    """The roofline of PROGRAM on a device: compute and bandwidth ceilings, the program's operational
    intensity and attainable performance; on a CGRA also the workers that reach it.

    \b
    Examples:
      stencilmap roofline examples/stencil1d_r8.json --device cgra-tia
      stencilmap roofline examples/jacobi2d.soda --device ku060 --plot roofline.png --json
    """
    from stencilmap.model.roofline import RooflineConfig, roofline

    fmt = output_format(fmt, as_json)
    report = roofline(RooflineConfig(program, device, shape, iterate, plot))
    if fmt == "json":
        click.echo(json.dumps(roofline_json(report), indent=2))
    elif fmt == "csv":
        echo_csv(("quantity", "value"), flat(roofline_json(report)))
    else:
        print_roofline(report, make_console())
