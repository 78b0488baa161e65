"""``stencilmap estimate``: a thin click command over ``stencilmap.model.estimate``, and how its report looks
(Rich tables for people, one JSON object for ``--json``)."""

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
    flat,
    format_options,
    fused_line,
    make_console,
    output_format,
    parse_shape,
    partition_table,
    rows_table,
    seconds,
    user_errors,
)
from stencilmap.point import DesignPoint

if TYPE_CHECKING:  # the model is imported when the command runs: `--help` stays instant
    from stencilmap.model.report import EstimateReport

ARCHS = ["soda", "stencilflow", "pcm", "cgra", "emax", "roofline"]


def estimate_json(report: EstimateReport) -> dict[str, Any]:
    return report.to_json()


def _resource_table(report: EstimateReport) -> Table:
    r = report.resources
    assert r is not None
    fits = "fits" if r.fits else "does not fit"
    table = Table(title=f"resources ({fits}; binding: {r.binding or '-'})", title_justify="left")
    for col in ("resource", "used", "available", "%", "limit %"):
        table.add_column(col, justify="left" if col == "resource" else "right")
    for name, avail in r.available:
        used = r.used[name]
        util = f"{100 * r.utilization(name):.1f}"
        table.add_row(name, f"{used:,.0f}", f"{avail:,}", util, f"{100 * r.limit(name):.0f}")
    return table


def print_estimate(report: EstimateReport, console: Console) -> None:
    p, d = report.program, report.device
    params = ", ".join(f"{k}={dims(v) if isinstance(v, tuple) else v}" for k, v in report.parameters)
    shape = tuple(int(n or 0) for n in p.shape)
    console.print(
        f"[bold]{escape(p.name)}[/bold] ({dims(shape)}) as [bold]{report.arch}[/bold] on [bold]{d.name}[/bold] "
        f"at {report.clock_mhz:g} MHz" + (f": {params}" if params else "")
    )
    rows = [
        (
            "time steps T / on chip q / launches",
            f"{report.iterations} / {report.steps_on_chip} / {report.launches}",
        ),
        ("latency L", f"{report.latency_cycles:,} cycles"),
        ("cycles per launch C = L + N/P", f"{report.cycles_per_launch:,} (P = {report.lanes})"),
        (
            "required / practical bandwidth",
            f"{report.required_bandwidth_gbs:.4g} / {d.practical_bandwidth_gbs:.4g} GB/s",
        ),
        ("scenario", f"{report.scenario}-bound"),
        ("compute per launch", seconds(report.compute_seconds)),
        ("host transfers / control", f"{seconds(report.host_seconds)} / {seconds(report.control_seconds)}"),
        (
            "predicted time",
            f"[bold]{seconds(report.predicted_seconds)}[/bold] ({report.predicted_cycles:,} cycles)",
        ),
        (
            "performance",
            f"{report.gops:.4g} GOp/s ({report.percent_of_roofline:.1f}% of the {report.roofline_gops:.4g} GOp/s roofline)",
        ),
    ]
    rows += [(k.replace("_", " "), f"{v:.6g}" if isinstance(v, float) else str(v)) for k, v in report.extra]
    console.print(rows_table("prediction", rows))
    if report.resources is not None:
        console.print(_resource_table(report))
    if report.partition is not None:
        console.print(partition_table(report.partition))
    for note in report.notes:
        console.print(f"note: {note}")


@click.command("estimate")
@click.argument("program", type=click.Path(path_type=Path))
@design_options(
    "device",
    "arch",
    "unroll",
    "iterate",
    "vector",
    "tile",
    "workers",
    "strip",
    "tiles",
    "fuse",
    "devices",
    "partition",
    help={
        "device": "A device of the catalog (stencilmap devices).",
        "arch": "Model  [default: soda for .soda, stencilflow for .json on FPGAs; the device's own elsewhere].",
        "unroll": "k PEs (SODA) / P_cell (PCM) / workers (CGRA) / p (EMAX).",
        "vector": "Vector width W (StencilFlow).",
    },
    choices={"arch": ARCHS},
    required=("device",),
)
@click.option(
    "--iterations", type=int, metavar="T", help="The application's time steps (the design runs ⌈T/q⌉ times)."
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option("--clock-mhz", type=float, metavar="F", help="Design clock  [default: the device's].")
@format_options
@user_errors
def estimate_cmd(
    program: Path,
    point: DesignPoint,
    iterations: int | None,
    shape: tuple[int, ...] | None,
    clock_mhz: float | None,
    fmt: str,
    as_json: bool,
) -> None:
    """Predict one configuration of PROGRAM on a device: cycles, time (compute- or bandwidth-bound,
    with host transfers and launches), required bandwidth, resources and GOp/s.

    \b
    Examples:
      stencilmap estimate examples/laplace2d.soda --device de5 --arch pcm --unroll 8 --iterate 21 \\
          --iterations 15360 --shape 32768,4096 --clock-mhz 270
      stencilmap estimate examples/heat3d.json --device stratix10 --vector 8 --json
      stencilmap estimate examples/jacobi2d.soda --device ku060 --shape 1024,1024 --tile 256 --format csv
      stencilmap estimate examples/stencil2d_r12.json --device cgra-tia --arch cgra
      stencilmap estimate examples/heat3d.json --device stratix10 --iterate 8 --devices 2
    """
    from stencilmap.jobs.estimate import EstimateConfig, estimate

    fmt = output_format(fmt, as_json)
    config = EstimateConfig(
        program=program, point=point, iterations=iterations, shape=shape, clock_mhz=clock_mhz
    )
    report = estimate(config)
    if fmt == "json":
        click.echo(json.dumps(estimate_json(report), indent=2))
    elif fmt == "csv":
        echo_csv(("quantity", "value"), flat(estimate_json(report)))
    else:
        if point.fuse:
            click.echo(fused_line(report.fused))
        print_estimate(report, make_console())
