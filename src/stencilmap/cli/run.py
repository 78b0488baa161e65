"""``stencilmap run``: run a program on a host backend and save its outputs (``stencilmap.jobs.run``)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from stencilmap.cli.common import (
    SEED,
    data_dir_option,
    dims,
    echo_csv,
    format_options,
    input_option,
    make_console,
    output_format,
    parse_shape,
    user_errors,
    warn,
)
from stencilmap.errors import StencilmapError

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from rich.console import Console

    from stencilmap.jobs.run import FieldReport, RunReport

#: The host backends (``backends.registry.BACKENDS``; tests/test_cli_speed.py checks they agree).
BACKENDS = ("numpy", "cpu", "dask", "gpu")


@click.command("run")
@click.argument("program", type=click.Path(path_type=Path))
@input_option("Use this .npy array for input NAME (C order; SODA's first dimension is the last axis).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for generated inputs.")
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
@data_dir_option
@click.option(
    "--backend",
    default="numpy",
    show_default=True,
    metavar="NAME",
    help=f"Host executor: {', '.join(BACKENDS)} (numpy is the reference).",
)
@click.option("--iterate", type=int, metavar="T", help="Number of time steps (overrides the program's).")
@click.option("--threads", type=int, metavar="N", help="Threads of the cpu kernel  [default: all cores].")
@click.option(
    "--chunks",
    metavar="C0,C1,...",
    help="dask: chunk sizes in C order  [default: 1024 per axis in 2-D, 512 in 3-D].",
)
@click.option("--scheduler", metavar="ADDRESS", help="dask: a distributed scheduler, e.g. tcp://host:8786.")
@click.option("--scheduler-file", metavar="FILE", help="dask: the scheduler file of a distributed cluster.")
@format_options
@user_errors
def run_cmd(
    program: Path,
    inputs: dict[str, Path],
    seed: int,
    shape: tuple[int, ...] | None,
    out_dir: Path | None,
    data_dir: Path | None,
    backend: str,
    iterate: int | None,
    threads: int | None,
    chunks: str | None,
    scheduler: str | None,
    scheduler_file: str | None,
    fmt: str,
    as_json: bool,
) -> None:
    """Run PROGRAM on the host and save its outputs.

    Inputs without data (all SODA inputs) are generated from --seed unless --input gives them.
    Each output is written to DIR/<output>.npy, atomically. --backend cpu compiles the program
    (C + OpenMP, cached under $STENCILMAP_CACHE_DIR) and fuses time steps; dask runs it chunk by
    chunk (--input .npy files are memory-mapped, outputs streamed to disk); gpu needs CuPy.

    \b
    Examples:
      stencilmap run examples/jacobi2d.soda
      stencilmap run examples/jacobi2d.soda --shape 256,256 --seed 7 --json
      stencilmap run examples/jacobi2d.soda --backend cpu --shape 2048,2048 --iterate 50 --json
      stencilmap run examples/heat3d.json --backend dask --chunks 16,32,32
      stencilmap run examples/heat3d.json --out first/
      stencilmap run examples/heat3d.json --input T=first/T1.npy --out results/
      stencilmap run examples/dag_listing1.json --format csv
    """
    from stencilmap.backends.registry import HostOptions
    from stencilmap.jobs.run import RunConfig, run

    fmt = output_format(fmt, as_json)
    # The bar is the NumPy reference's only (the other backends never call it): they do not import Rich for it.
    bar = reference_progress() if backend == "numpy" else contextlib.nullcontext(None)
    with bar as progress:
        host = HostOptions(
            backend, threads, _chunks(chunks), scheduler, scheduler_file=scheduler_file, progress=progress
        )
        report = run(RunConfig(program, inputs, seed, shape, out_dir, data_dir, host, iterate))
    warn(report.program.warnings)
    if fmt == "json":
        click.echo(json.dumps(run_json(report), indent=2))
    elif fmt == "csv":
        run_csv(report)
    else:
        print_run(report, make_console())


@contextlib.contextmanager
def reference_progress() -> Iterator[Callable[[int, int], None]]:
    """A bar on stderr for the NumPy reference's stencils × time steps, shown once a run has taken 2 s
    (hidden when stderr is not a terminal): a long reference run is never silent."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = make_console(stderr=True)
    columns = (TextColumn("reference"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    start = time.perf_counter()
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("", total=None, visible=False)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, visible=time.perf_counter() - start > 2.0)

        yield advance


def _chunks(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(v) for v in value.split(","))
    except ValueError:
        raise StencilmapError(f"--chunks: expected sizes like 256,256, got '{value}'") from None


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
        "compute_seconds": float(f"{report.compute_seconds:.6g}"),  # 6 digits: kernels can take µs
        "compile_seconds": round(report.compile_seconds, 6) if report.compile_seconds is not None else None,
        "gcells_per_s": float(f"{report.gcells_per_s:.6g}"),
        "warnings": list(p.warnings),
    }


def print_run(report: RunReport, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    p = report.program
    iterate = f", iterate {p.iterate}" if p.iterate > 1 else ""
    table = Table(
        title=f"{escape(p.name)} ({p.format}, {dims(tuple(int(n or 0) for n in p.shape))}{iterate}): {report.backend} run",
        title_justify="left",
    )
    for col in ("field", "role", "shape", "dtype", "defined region", "source / written to"):
        table.add_column(col)
    for f in report.fields:
        table.add_row(f.name, f.role, dims(f.shape), f.dtype, region_text(f), escape(f.source))
    console.print(table)
    console.print(
        f"done in {report.seconds:.3f} s (kernel {report.compute_seconds:.3f} s, {report.gcells_per_s:.3g} GCell/s)"
    )


def run_csv(report: RunReport) -> None:
    """``--format csv``: one row per field (its shape, dtype, defined region and points, source or file)."""
    rows = [
        (f.name, f.role, "x".join(map(str, f.shape)), f.dtype, region_text(f), f.defined_points, f.source)
        for f in report.fields
    ]
    echo_csv(("field", "role", "shape", "dtype", "defined_region", "defined_points", "source"), rows)
