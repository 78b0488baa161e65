"""``stencilmap calibrate``: a thin click command over ``stencilmap.jobs.calibrate`` (a table or JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stencilmap.cli.common import (
    echo_csv,
    flat,
    format_options,
    make_console,
    output_format,
    parse_shape,
    user_errors,
)

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from stencilmap.jobs.calibrate import CalibrationReport
    from stencilmap.model.calibrate import FitQuality


def _r2(q: FitQuality | None) -> str:
    if q is None:
        return "-"
    return "n/a (all equal)" if q.r2 is None else f"{q.r2:.4f}"


def _err(q: FitQuality | None) -> str:
    return "-" if q is None else f"{100 * q.max_relative_error:.2f}%"


def print_calibration(report: CalibrationReport, console: Console) -> None:
    fitted = sum(r.fitted for r in report.rows)
    checked = len(report.rows) - fitted
    console.print(
        f"[bold]{escape(report.program)}[/bold] as [bold]{report.arch}[/bold] on [bold]{report.device.name}[/bold]: "
        f"{fitted} design(s) fitted, {checked} predicted (not fitted), from {escape(str(report.reports))}"
    )
    table = Table(title="fitted coefficients and fit", title_justify="left")
    for col in (
        "resource",
        "base",
        "per PE lane",
        "per fwd module",
        "R² fitted",
        "max err fitted",
        "R² check",
        "max err check",
    ):
        table.add_column(col, justify="left" if col == "resource" else "right")
    for r in report.resources:
        cells = []
        for name in ("base", "compute", "forwarding"):
            t = r.fit.term(name)
            cells.append("(prior)" if t is None else f"{t.per_unit:,.1f}")
        table.add_row(r.fit.resource, *cells, _r2(r.fitted), _err(r.fitted), _r2(r.checked), _err(r.checked))
    console.print(table)
    rows = Table(title="designs: measured / predicted", title_justify="left")
    names = [r.fit.resource for r in report.resources]
    for col in ("row", "unroll", "iterate", "fitted", *names):
        rows.add_column(col, justify="left" if col == "row" else "right")
    for row in report.rows:
        used, pred = dict(row.row.used), dict(row.predicted)
        cells = [f"{used[n]:,.0f} / {pred[n]:,.0f}" if n in used else "-" for n in names]
        rows.add_row(
            escape(Path(row.row.where).name),
            str(row.row.unroll),
            str(row.row.iterate),
            "yes" if row.fitted else "no",
            *cells,
        )
    console.print(rows)
    if report.left_out:
        _print_left_out(report, names, console)
    terms = max(len(r.fit.terms) for r in report.resources)
    if fitted == terms:
        console.print(
            f"note: {fitted} rows for {terms} terms: the fit is exactly determined, so the fitted rows' R² says "
            "nothing; judge it by the rows not fitted (--holdout, --check)"
        )
    if report.out is not None:
        console.print(
            f"device file written to {escape(str(report.out))} (use it as --device {escape(str(report.out))})"
        )


def _print_left_out(report: CalibrationReport, names: list[str], console: Console) -> None:
    table = Table(title="leave-one-out: each fitted row predicted by a fit without it", title_justify="left")
    for col in ("row", "unroll", "iterate", *names):
        table.add_column(col, justify="left" if col == "row" else "right")
    for left in report.left_out:
        used, pred, err = dict(left.row.used), dict(left.predicted), left.errors()
        cells = [
            f"{used[n]:,.0f} / {pred[n]:,.0f} ({100 * err[n]:+.2f}%)" if n in used else "-" for n in names
        ]
        table.add_row(escape(Path(left.row.where).name), str(left.row.unroll), str(left.row.iterate), *cells)
    console.print(table)
    worst = ", ".join(
        f"{r.fit.resource} {_err(r.left_out)}" for r in report.resources if r.left_out is not None
    )
    console.print(f"leave-one-out max error: {worst}")


@click.command("calibrate")
@click.argument("program", type=click.Path(path_type=Path))
@click.option("--device", required=True, metavar="NAME", help="The device whose resource model is refitted.")
@click.option("--arch", required=True, type=click.Choice(["pcm", "soda"]), help="The builder of the designs.")
@click.option(
    "--reports",
    required=True,
    type=click.Path(path_type=Path),
    metavar="FILE.csv",
    help="Synthesized designs: unroll,iterate then one column per resource (used counts).",
)
@click.option(
    "--out", type=click.Path(path_type=Path), metavar="DEVICE.json", help="Write the fitted device file."
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option(
    "--holdout",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Predict the last N rows, not fit them.",
)
@click.option(
    "--check", type=click.Path(path_type=Path), metavar="FILE.csv", help="More designs to predict, not fit."
)
@click.option(
    "--leave-one-out",
    is_flag=True,
    help="Refit without each fitted row in turn and report that row's error (cross-validation).",
)
@format_options
@user_errors
def calibrate_cmd(
    program: Path,
    device: str,
    arch: str,
    reports: Path,
    out: Path | None,
    shape: tuple[int, ...] | None,
    holdout: int,
    check: Path | None,
    leave_one_out: bool,
    fmt: str,
    as_json: bool,
) -> None:
    """Fit a device's resource model to synthesized designs of PROGRAM (OpenCL §4.2 phase 1, eqs. 9-10;
    SODA §4.3) and write a device file with it; says how well it fits, and how well it predicts rows
    held out (--holdout, --check) that were not fitted, and with --leave-one-out how well each fitted
    row is predicted by a fit without it.

    \b
    Examples:
      stencilmap calibrate examples/laplace2d.soda --device de5 --arch pcm --shape 32768,4096 \\
          --reports examples/calibration/de5_laplace_table2.csv --holdout 2 --out de5_fitted.json
      stencilmap calibrate examples/jacobi2d.soda --device ku060 --arch soda --shape 1024,4096 \\
          --reports examples/calibration/ku060_jacobi2d_soda_synthetic.csv --holdout 4 --json
    """
    from stencilmap.jobs.calibrate import CalibrateConfig, calibrate

    fmt = output_format(fmt, as_json)
    config = CalibrateConfig(
        program=program,
        device=device,
        arch=arch,  # type: ignore[arg-type]
        reports=reports,
        out=out,
        shape=shape,
        holdout=holdout,
        check=check,
        leave_one_out=leave_one_out,
    )
    report = calibrate(config)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    elif fmt == "csv":
        echo_csv(("quantity", "value"), flat(report.to_json()["resources"]))
    else:
        print_calibration(report, make_console())
