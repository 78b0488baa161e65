"""The ``stencilmap`` command line: parse options, call the library, print. Nothing else lives here."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from stencilmap import __version__
from stencilmap.errors import StencilmapError
from stencilmap.run import FieldReport, RunConfig, RunReport, run

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(fn: F) -> F:
    """Turn a StencilmapError into one line on stderr and exit status 2 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StencilmapError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def parse_shape(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        dims = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected sizes like 64,128, got '{value}'") from None
    if not dims or any(d < 1 for d in dims):
        raise click.BadParameter(f"sizes must be positive integers, got '{value}'")
    return dims


def parse_inputs(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in value:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=FILE.npy, got '{item}'")
        out[name] = Path(path)
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stencilmap")
def main() -> None:
    """stencilmap: stencil programs (SODA .soda, StencilFlow .json) onto spatial dataflow hardware.

    \b
    Example:
      stencilmap run examples/jacobi2d.soda
    """


@main.command("run")
@click.argument("program", type=click.Path(path_type=Path))
@click.option(
    "--input",
    "inputs",
    multiple=True,
    callback=parse_inputs,
    metavar="NAME=FILE.npy",
    help="Use this .npy array for input NAME (C order; SODA's first dimension is the last axis).",
)
@click.option("--seed", default=0, show_default=True, help="Seed for generated inputs.")
@click.option(
    "--shape",
    callback=parse_shape,
    metavar="D0,D1,...",
    help="Iteration shape in C order (overrides the program's; SODA's '*' dimension is D0).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Where to write <output>.npy files  [default: out/<program name>].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@user_errors
def run_cmd(
    program: Path,
    inputs: dict[str, Path],
    seed: int,
    shape: tuple[int, ...] | None,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """Run PROGRAM with the NumPy reference executor and save its outputs.

    Inputs without data (all SODA inputs) are generated from --seed unless --input gives them.
    Each output is written to DIR/<output>.npy, atomically.

    \b
    Examples:
      stencilmap run examples/jacobi2d.soda
      stencilmap run examples/jacobi2d.soda --shape 256,256 --seed 7 --json
      stencilmap run examples/heat3d.json --input a=a.npy --out results/
    """  # fmt: skip
    report = run(RunConfig(program, inputs, seed, shape, out_dir))
    for w in report.program.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(report_json(report), indent=2))
    else:
        print_report(report)


def _region(f: FieldReport) -> str:
    if f.defined is None:
        return "none"
    if all(lo == 0 and hi == n for (lo, hi), n in zip(f.defined, f.shape, strict=True)):
        return "all"
    box = ", ".join(f"{lo}:{hi}" for lo, hi in f.defined)
    return f"[{box}]"


def report_json(report: RunReport) -> dict[str, Any]:
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
        "warnings": list(p.warnings),
    }


def print_report(report: RunReport) -> None:
    p = report.program
    console = Console()
    shape = "×".join(str(n) for n in p.shape)
    iterate = f", iterate {p.iterate}" if p.iterate > 1 else ""
    table = Table(title=f"{p.name} ({p.format}, {shape}{iterate}): reference run", title_justify="left")
    for col in ("field", "role", "shape", "dtype", "defined region", "source / written to"):
        table.add_column(col)
    for f in report.fields:
        table.add_row(f.name, f.role, "×".join(map(str, f.shape)) or "scalar", f.dtype, _region(f), f.source)
    console.print(table)
    console.print(f"done in {report.seconds:.3f} s")


if __name__ == "__main__":
    main()
