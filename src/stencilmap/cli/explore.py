"""``stencilmap explore``: a thin click command over ``stencilmap.explore``.

``stencilmap.cli`` registers it on its group (``main.add_command(explore_cmd)``). The progress bar goes to
stderr, so that ``--json`` output on stdout stays one JSON object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from stencilmap.cli.common import (
    dims,
    echo_csv,
    format_options,
    make_console,
    output_format,
    parse_shape,
    seconds,
    user_errors,
)

if TYPE_CHECKING:  # the search is imported when the command runs: `--help` stays instant
    from stencilmap.explore import ExploreConfig, ExploreResult

#: The builders explore searches (``explore.space.ARCHS``) and the largest q it may search
#: (``design.common.MAX_STAGES``); tests/test_cli_speed.py checks they agree.
ARCHS = ("soda", "stencilflow", "pcm")
MAX_STAGES = 1024

COLUMNS = (
    "#",
    "arch",
    "P",
    "q",
    "tile",
    "time",
    "Gpoints/s",
    "cycles/launch",
    "bound by",
    "binding",
    "use %",
)


def _dims(shape: tuple[int, ...] | None) -> str:
    return "-" if shape is None else dims(shape)


class _Bar:
    """One Rich task per phase (evaluating, bounding, simulating) on stderr."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, what: str, done: int, total: int) -> None:
        if what not in self.tasks:
            self.tasks[what] = self.progress.add_task(what, total=max(1, total))
        self.progress.update(self.tasks[what], completed=done, total=max(1, total))


def run_explore(config: ExploreConfig, err: Console) -> ExploreResult:
    """``explore`` with a progress bar on ``err`` (hidden when it is not a terminal)."""
    columns = (TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    from stencilmap.explore import explore

    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as progress:
        return explore(config, _Bar(progress), lambda line: click.echo(line, err=True))


def print_explore(result: ExploreResult, console: Console) -> None:
    from stencilmap.arch import arch

    s = result.space
    cm = s.clock_model
    clock = (
        f"{s.clock_mhz:g} MHz"
        if cm is None
        else (
            f"{min(f for _, f in cm.points):g}–{cm.fastest_mhz:g} MHz (clock model: f of {cm.resource} use)"
        )
    )
    console.print(
        f"[bold]{escape(s.program.name)}[/bold] ({_dims(s.shape)}, {s.iterations} time step(s)) on "
        f"[bold]{s.device.name}[/bold] at {clock}: {', '.join(s.archs)}; "
        f"P ∈ {{{', '.join(str(p) for p in s.lanes)}}}, q ≤ {s.q_max}"
        + (f", {len(s.tiles)} SODA tiling(s)" if any(arch(a).tiled for a in s.archs) else "")
    )
    table = Table(title=f"best {len(result.top)} configurations", title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("arch", "tile", "bound by", "binding") else "right")
    for n, c in enumerate(result.top, start=1):
        table.add_row(
            str(n),
            c.arch,
            str(c.lanes),
            str(c.iterate),
            _dims(c.tile),
            seconds(c.predicted_seconds),
            f"{c.throughput(s):.4g}",
            f"{c.cycles_per_launch:,.0f}",
            c.scenario,
            c.binding,
            f"{100 * dict(c.utilization)[c.binding]:.1f}",
        )
    console.print(table)
    console.print(
        f"{result.points_evaluated:,} candidate points evaluated in {result.seconds:.2f} s "
        f"({result.points_per_second:,.0f} points/s): resources checked for {result.points_checked:,}, "
        f"{result.points_pruned:,} pruned by the bound, {result.points_feasible:,} fit; "
        f"{result.designs_built} designs built"
    )
    w = result.winner
    if w is not None:
        where = f"{_dims(w.shape)}" + (f" (scaled from {_dims(s.shape)})" if w.scaled else "")
        line = (
            f"winner simulated on {where} at {w.bytes_per_cycle_per_bank:.4g} B/cycle per bank: "
            f"model {w.predicted_cycles:,.0f} cycles, simulator {w.simulated_cycles:,} ({w.status})"
        )
        if w.prediction_error is not None:
            line += f": prediction error [bold]{100 * w.prediction_error:+.2f}%[/bold]"
        console.print(line)
        if w.note:
            console.print(f"note: {w.note}")
    for note in result.notes:
        console.print(f"note: {note}")


def explore_csv(result: ExploreResult) -> None:
    """The ranked configurations (``--top`` of them) as CSV: one row each, every utilization a column."""
    resources = sorted({n for c in result.top for n, _ in c.utilization})
    header = [
        "rank",
        "arch",
        "unroll",
        "vector",
        "iterate",
        "tile",
        "tiles",
        "predicted_seconds",
        "throughput_gpoints_per_s",
        "cycles_per_launch",
        "launches",
        "scenario",
        "binding_resource",
        *(f"utilization.{n}" for n in resources),
    ]
    rows = []
    for n, c in enumerate(result.top, start=1):
        p, util = c.parameters(), dict(c.utilization)
        rows.append(
            [
                n,
                c.arch,
                p["unroll"],
                p["vector"],
                c.iterate,
                _dims(c.tile),
                c.tiles,
                c.predicted_seconds,
                c.throughput(result.space),
                c.cycles_per_launch,
                c.launches,
                c.scenario,
                c.binding,
                *(util.get(r) for r in resources),
            ]
        )
    echo_csv(header, rows)


@click.command("explore")
@click.argument("program", type=click.Path(path_type=Path))
@click.option("--device", required=True, metavar="NAME", help="An FPGA of the catalog (stencilmap devices).")
@click.option(
    "--arch",
    "archs",
    type=click.Choice(ARCHS),
    multiple=True,
    help="Builders to search  [default: all the device models].",
)
@click.option(
    "--iterations",
    type=int,
    metavar="T",
    help="The application's time steps  [default: the program's iterate].",
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option("--clock-mhz", type=float, metavar="F", help="Design clock  [default: the device's].")
@click.option("--top", type=click.IntRange(1), default=10, show_default=True, help="Configurations to list.")
@click.option(
    "--max-iterate",
    type=click.IntRange(1, MAX_STAGES),
    default=MAX_STAGES,
    show_default=True,
    metavar="Q",
    help="Largest q searched.",
)
@click.option(
    "--tiles-per-axis",
    type=click.IntRange(1, 256),
    default=24,
    show_default=True,
    metavar="N",
    help="SODA tile sizes per inner axis.",
)
@click.option("--exhaustive", is_flag=True, help="Check the resources of every point (no bound pruning).")
@click.option("--simulate/--no-simulate", default=True, show_default=True, help="Simulate the winner.")
@click.option(
    "--sim-points",
    type=click.IntRange(1024, 1 << 24),
    default=1 << 17,
    show_default=True,
    metavar="N",
    help="Scale the simulated grid down to about N points.",
)
@format_options
@click.option(
    "--plot", type=click.Path(path_type=Path), metavar="FILE", help="Draw the design space (.png or .svg)."
)
@click.option(
    "--save",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Write the winner's design.json, design.dot and commands.txt (its estimate and simulate) to DIR.",
)
@user_errors
def explore_cmd(
    program: Path,
    device: str,
    archs: tuple[str, ...],
    iterations: int | None,
    shape: tuple[int, ...] | None,
    clock_mhz: float | None,
    top: int,
    max_iterate: int,
    tiles_per_axis: int,
    exhaustive: bool,
    simulate: bool,
    sim_points: int,
    fmt: str,
    as_json: bool,
    plot: Path | None,
    save: Path | None,
) -> None:
    """Search unroll/lanes P, iterate q and SODA tile sizes of PROGRAM on an FPGA, under its resources;
    list the best configurations and simulate the winner (scaled down when the grid is large).

    \b
    Examples:
      stencilmap explore examples/jacobi2d.soda --device ku060 --iterations 1000 --shape 4096,4096
      stencilmap explore examples/heat3d.json --device stratix10 --json --plot space.png
      stencilmap explore examples/jacobi2d.soda --device ku060 --shape 1024,1024 --save winner --format csv
    """
    from stencilmap.explore import ExploreConfig
    from stencilmap.explore.plot import write_space_plot
    from stencilmap.jobs.explore import check_save_dir, save_winner
    from stencilmap.model.plot import check_plot_path

    fmt = output_format(fmt, as_json)

    config = ExploreConfig(
        program=program,
        device=device,
        archs=archs or None,
        iterations=iterations,
        shape=shape,
        clock_mhz=clock_mhz,
        top=top,
        max_iterate=max_iterate,
        tiles_per_axis=tiles_per_axis,
        exhaustive=exhaustive,
        simulate=simulate,
        sim_points=sim_points,
    )
    if plot is not None:
        check_plot_path(plot)
    if save is not None:
        check_save_dir(save)
    result = run_explore(config, make_console(stderr=True))
    if plot is not None:
        write_space_plot(plot, result)
    saved = save_winner(result, config, save) if save is not None else ()
    if fmt == "json":
        click.echo(json.dumps({**result.to_json(), "saved": [str(p) for p in saved]}, indent=2))
    elif fmt == "csv":
        explore_csv(result)
    else:
        console = make_console()
        print_explore(result, console)
        if plot is not None:
            console.print(f"plot written to {escape(str(plot))}")
        if saved:
            console.print("winner saved to " + escape(", ".join(str(p) for p in saved)))
