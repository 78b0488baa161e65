"""``stencilmap devices``, ``estimate`` and ``roofline``: thin click commands over ``stencilmap.model``,
and how their reports look (Rich tables for people, one JSON object for ``--json``).

``stencilmap.cli`` registers the three commands on its group (``main.add_command``). The commands reuse
``stencilmap.cli``'s ``user_errors`` and ``parse_shape``, imported when a command runs: importing them at the
top would be circular once ``cli`` imports this module, whichever of the two is imported first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stencilmap.cli_common import make_console, parse_shape, user_errors

if TYPE_CHECKING:  # the models are imported when a command runs: `--help` stays instant
    from stencilmap.model.report import EstimateReport
    from stencilmap.model.roofline import RooflineReport

ARCHS = ["soda", "stencilflow", "pcm", "cgra", "emax", "roofline"]


def _dims(shape: tuple[object, ...] | list[int]) -> str:
    return "×".join(str(n) for n in shape)


def _seconds(t: float) -> str:
    if t >= 1:
        return f"{t:.4g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.4g} ms"
    return f"{t * 1e6:.4g} µs"


def _rows(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for what, value in rows:
        table.add_row(what, value)
    return table


# ---------------------------------------------------------------------------------------------- devices


def devices_json() -> list[dict[str, Any]]:
    from stencilmap.model.devices import device_names, load_device

    return [load_device(name).to_json() for name in device_names()]


def print_devices(console: Console) -> None:
    from stencilmap.model.devices import device_names, load_device

    table = Table(title="device catalog", title_justify="left")
    for col in ("device", "kind", "clock", "DRAM", "peak BW", "E_coef", "practical", "peak fp32", "models"):
        table.add_column(col, justify="left" if col in ("device", "kind", "DRAM", "models") else "right")
    for name in device_names():
        d = load_device(name)
        table.add_row(
            d.name,
            d.kind,
            f"{d.clock_mhz:g} MHz",
            f"{d.dram_banks}×{d.bus_width_bits}b",
            f"{d.bandwidth_gbs:g} GB/s",
            f"{d.mem_efficiency:.3g}",
            f"{d.practical_bandwidth_gbs:.4g} GB/s",
            f"{d.peak('float32'):g} GOp/s",
            ",".join(d.archs),
        )
    console.print(table)
    for name in device_names():
        console.print(f"[bold]{name}[/bold]: {load_device(name).description}")


@click.command("devices")
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as one JSON list.")
@user_errors
def devices_cmd(as_json: bool) -> None:
    """List the device catalog: clocks, memory, bandwidth, peaks, and the models each device supports.

    \b
    Example:
      stencilmap devices --json
    """
    if as_json:
        click.echo(json.dumps(devices_json(), indent=2))
    else:
        print_devices(make_console())


# --------------------------------------------------------------------------------------------- estimate


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
    params = ", ".join(f"{k}={_dims(v) if isinstance(v, tuple) else v}" for k, v in report.parameters)
    shape = tuple(int(n or 0) for n in p.shape)
    console.print(
        f"[bold]{escape(p.name)}[/bold] ({_dims(shape)}) as [bold]{report.arch}[/bold] on [bold]{d.name}[/bold] "
        f"at {report.clock_mhz:g} MHz" + (f": {params}" if params else "")
    )
    rows = [
        ("time steps T / on chip q / launches", f"{report.iterations} / {report.steps_on_chip} / {report.launches}"),
        ("latency L", f"{report.latency_cycles:,} cycles"),
        ("cycles per launch C = L + N/P", f"{report.cycles_per_launch:,} (P = {report.lanes})"),
        ("required / practical bandwidth", f"{report.required_bandwidth_gbs:.4g} / {d.practical_bandwidth_gbs:.4g} GB/s"),
        ("scenario", f"{report.scenario}-bound"),
        ("compute per launch", _seconds(report.compute_seconds)),
        ("host transfers / control", f"{_seconds(report.host_seconds)} / {_seconds(report.control_seconds)}"),
        ("predicted time", f"[bold]{_seconds(report.predicted_seconds)}[/bold] ({report.predicted_cycles:,} cycles)"),
        ("performance", f"{report.gops:.4g} GOp/s ({report.percent_of_roofline:.1f}% of the {report.roofline_gops:.4g} GOp/s roofline)"),
    ]  # fmt: skip
    rows += [(k.replace("_", " "), f"{v:.6g}" if isinstance(v, float) else str(v)) for k, v in report.extra]
    console.print(_rows("prediction", rows))
    if report.resources is not None:
        console.print(_resource_table(report))
    for note in report.notes:
        console.print(f"note: {note}")


@click.command("estimate")
@click.argument("program", type=click.Path(path_type=Path))
@click.option("--device", required=True, metavar="NAME", help="A device of the catalog (stencilmap devices).")
@click.option(
    "--arch",
    type=click.Choice(ARCHS),
    help="Model  [default: soda for .soda, stencilflow for .json on FPGAs; the device's own elsewhere].",
)
@click.option(
    "--unroll", type=int, metavar="K", help="k PEs (SODA) / P_cell (PCM) / workers (CGRA) / p (EMAX)."
)
@click.option("--iterate", type=int, metavar="Q", help="Time steps chained on chip: q stages / d PCMs.")
@click.option("--workers", type=int, metavar="W", help="CGRA workers w  [default: the §VI roofline's].")
@click.option("--strip", type=int, metavar="WIDTH", help="CGRA vertical strip width (§III-B).")
@click.option("--vector", type=int, metavar="W", help="Vector width W (StencilFlow).")
@click.option(
    "--iterations", type=int, metavar="T", help="The application's time steps (the design runs ⌈T/q⌉ times)."
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option("--clock-mhz", type=float, metavar="F", help="Design clock  [default: the device's].")
@click.option("--json", "as_json", is_flag=True, help="Print the prediction as one JSON object.")
@user_errors
def estimate_cmd(
    program: Path,
    device: str,
    arch: str | None,
    unroll: int | None,
    iterate: int | None,
    workers: int | None,
    strip: int | None,
    vector: int | None,
    iterations: int | None,
    shape: tuple[int, ...] | None,
    clock_mhz: float | None,
    as_json: bool,
) -> None:
    """Predict one configuration of PROGRAM on a device: cycles, time (compute- or bandwidth-bound,
    with host transfers and launches), required bandwidth, resources and GOp/s.

    \b
    Examples:
      stencilmap estimate examples/laplace2d.soda --device de5 --arch pcm --unroll 8 --iterate 21 \\
          --iterations 15360 --shape 32768,4096 --clock-mhz 270
      stencilmap estimate examples/heat3d.json --device stratix10 --vector 8 --json
      stencilmap estimate examples/stencil2d_r12.json --device cgra-tia --arch cgra
    """  # fmt: skip
    from stencilmap.model.estimate import estimate
    from stencilmap.model.report import EstimateConfig

    config = EstimateConfig(
        program, device, arch, unroll, iterate, vector, iterations, shape, clock_mhz, None, workers, strip
    )
    report = estimate(config)
    if as_json:
        click.echo(json.dumps(estimate_json(report), indent=2))
    else:
        print_estimate(report, make_console())


# --------------------------------------------------------------------------------------------- roofline


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
            ("workers (CGRA §VI)", f"{k.workers} of at most {k.max_workers}, {k.pes_per_worker} PEs each: {k.gops:.4g} GOp/s")
        )  # fmt: skip
    shape = _dims(w.shape)
    console.print(_rows(f"roofline of {escape(report.program.name)} ({shape}) on {d.name}", rows))
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
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@user_errors
def roofline_cmd(
    program: Path,
    device: str,
    shape: tuple[int, ...] | None,
    iterate: int | None,
    plot: Path | None,
    as_json: bool,
) -> None:
    """The roofline of PROGRAM on a device: compute and bandwidth ceilings, the program's operational
    intensity and attainable performance; on a CGRA also the workers that reach it.

    \b
    Examples:
      stencilmap roofline examples/stencil1d_r8.json --device cgra-tia
      stencilmap roofline examples/jacobi2d.soda --device ku060 --plot roofline.png --json
    """  # fmt: skip
    from stencilmap.model.roofline import RooflineConfig, roofline

    report = roofline(RooflineConfig(program, device, shape, iterate, plot))
    if as_json:
        click.echo(json.dumps(roofline_json(report), indent=2))
    else:
        print_roofline(report, make_console())
