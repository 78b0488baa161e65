"""``stencilmap simulate``: a thin click command over ``stencilmap.jobs.simulate``; how its report looks (Rich
tables for people, one JSON object for ``--json``) is ``cli.simulate_report``.

Exit status: 0 when the simulation finished and its outputs match the reference; 1 when it did not (a
mismatch, a deadlock, or the cycle limit) — a result, reported in full on stdout; 2 for bad input (one
line on stderr, as every stencilmap command).

``stencilmap.cli`` registers the command on its group (``main.add_command``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from stencilmap.cli.common import (
    SEED,
    data_dir_option,
    design_options,
    format_options,
    fused_line,
    input_option,
    make_console,
    output_format,
    parse_shape,
    user_errors,
    warn,
)
from stencilmap.cli.simulate_report import print_simulation, simulate_csv, simulate_json
from stencilmap.point import DesignPoint

# ----------------------------------------------------------------------------------------- progress


class ProgressBar:
    """A Rich progress bar on stderr that appears only once a run has taken ``after`` seconds (and only on
    a terminal); ``update`` is the job's ``progress(cycle, total)`` callback."""

    def __init__(self, after: float = 1.0, console: Console | None = None) -> None:
        self.after = after
        self.console = console if console is not None else make_console(stderr=True)
        self.start = time.perf_counter()
        self.bar: Progress | None = None
        self.task: Any = None

    def update(self, cycle: int, total: int) -> None:
        if self.bar is None:
            if time.perf_counter() - self.start < self.after or not self.console.is_terminal:
                return
            self.bar = Progress(
                TextColumn("simulating"),
                BarColumn(),
                TextColumn("{task.completed:,} / ~{task.total:,.0f} cycles"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("simulate", total=total)
        self.bar.update(self.task, completed=cycle, total=max(total, cycle))

    def note(self, line: str) -> None:
        """A line on stderr (the job says it is compiling), whether or not the bar shows."""
        click.echo(line, err=True)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.bar is not None:
            self.bar.stop()


# ---------------------------------------------------------------------------------------------- command


@click.command("simulate")
@click.argument("program", type=click.Path(path_type=Path))
@design_options(
    "arch",
    "unroll",
    "iterate",
    "workers",
    "strip",
    "tiles",
    "vector",
    "device",
    "tile",
    "delay_buffers",
    "fuse",
    "devices",
    "partition",
    help={
        "iterate": "Time steps chained on chip: q stages / d PCMs / CGRA layers.",
        "device": "Limit memory to this device's bandwidth per bank (stencilmap devices)  [default: unlimited; emax for --arch emax, cgra-tia for --arch cgra].",
    },
)
@input_option()
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for generated inputs.")
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Where to write the simulated <output>.npy files  [default: out/<program name>/sim, beside run's].",
)
@click.option(
    "--trace",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Write per-module activity per cycle: JSON Lines (.jsonl) or VCD (.vcd).",
)
@click.option(
    "--trace-cycles",
    type=click.IntRange(0),
    default=10_000,
    show_default=True,
    metavar="N",
    help="Cycles --trace records.",
)
@click.option(
    "--max-cycles",
    type=int,
    metavar="N",
    help="Stop after N cycles  [default: 10× the stream length or twice the predicted cycles, whichever is more, + 100000].",
)
@click.option(
    "--from-asm",
    "from_asm",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Run the mapping this text describes instead of building one (--arch cgra: the assembly, --arch emax: the mnemonics that analyze --asm and codegen write, edited or not); validated against PROGRAM's reference.",
)
@data_dir_option
@click.option("--verbose", "-v", is_flag=True, help="Every table in full: stalls, channel peaks, traffic.")
@format_options
@user_errors
def simulate_cmd(
    program: Path,
    point: DesignPoint,
    inputs: dict[str, Path],
    seed: int,
    shape: tuple[int, ...] | None,
    out_dir: Path | None,
    trace: Path | None,
    trace_cycles: int,
    max_cycles: int | None,
    from_asm: Path | None,
    data_dir: Path | None,
    verbose: bool,
    fmt: str,
    as_json: bool,
) -> None:
    """Simulate PROGRAM's design cycle by cycle and check its outputs against the reference: cycles, the
    validation verdict, stalls, channel peaks, off-chip traffic and bandwidth; on a deadlock, the modules
    waiting and the channels they wait on. Outputs are written like `run`'s.

    Exit status: 0 valid; 1 mismatch, deadlock or cycle limit; 2 bad input.

    \b
    Examples:
      stencilmap simulate examples/jacobi2d.soda --unroll 4 --device ku060
      stencilmap simulate examples/dag_listing1.json --delay-buffers min
      stencilmap simulate examples/heat3d.json --vector 4 --trace heat3d.vcd --json
      stencilmap simulate examples/star3d_degree3.soda --arch emax --unroll 2 --shape 16,32,64
      stencilmap simulate examples/stencil1d_r8.json --arch cgra --json
      stencilmap analyze examples/laplace2d.soda --arch cgra --asm l2d.asm
      stencilmap simulate examples/laplace2d.soda --arch cgra --from-asm l2d.asm
      stencilmap simulate examples/heat3d.json --iterate 4 --device stratix10 --devices 2
    """
    from stencilmap.jobs.simulate import SimulateConfig, simulate

    fmt = output_format(fmt, as_json)
    config = SimulateConfig(
        program=program,
        point=point,
        inputs=inputs,
        seed=seed,
        shape=shape,
        out_dir=out_dir,
        trace=trace,
        trace_cycles=trace_cycles,
        max_cycles=max_cycles,
        data_dir=data_dir,
        from_asm=from_asm,
    )
    with ProgressBar() as bar:
        report = simulate(config, bar.update, bar.note)
    warn(report.program.warnings)
    if fmt == "json":
        click.echo(json.dumps(simulate_json(report), indent=2))
    elif fmt == "csv":
        simulate_csv(report)
    else:
        if point.fuse:
            click.echo(fused_line(report.fused))
        print_simulation(report, make_console(), verbose)
    if not report.valid:
        sys.exit(1)
