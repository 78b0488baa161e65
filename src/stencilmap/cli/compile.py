"""``stencilmap compile``: a thin click command over ``stencilmap.jobs.compile`` — one progress display
across the stages on stderr, a short summary (or ``--json``) on stdout.

Exit status: 0 the report is written and every check passed; 1 written, but the generated code or the
simulation did not match the reference (a result, reported); 2 bad input (one line on stderr).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from stencilmap.cli.common import input_option, make_console, parse_shape, user_errors
from stencilmap.errors import StencilmapError

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from rich.progress import Progress

    from stencilmap.jobs.compile import CompileConfig, CompileReport

#: what the progress display says each stage is doing (``jobs.compile.STAGES``)
STAGE_TEXT = {
    "analyze": "analyzing the program",
    "choose": "choosing the design",
    "build": "building it",
    "generate": "generating its code",
    "verify": "running the code here",
    "simulate": "simulating cycle by cycle",
    "report": "writing the report",
}


class _Display:
    """One line on stderr: the stage, its step of seven, and a bar for the stages that report advance."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task = progress.add_task("", total=None)
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        from stencilmap.jobs.compile import STAGES

        if stage != self.stage:
            self.stage = stage
            number = STAGES.index(stage) + 1 if stage in STAGES else 0
            text = f"[{number}/{len(STAGES)}] {STAGE_TEXT.get(stage, stage)}"
            self.progress.update(self.task, description=text, completed=0, total=None)
        if total > 1:
            self.progress.update(self.task, completed=min(done, total), total=total)


def run_compile(config: CompileConfig) -> CompileReport:
    """The job with its progress display on stderr (hidden when stderr is not a terminal)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from stencilmap.jobs.compile import compile_program

    err = make_console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as progress:
        return compile_program(config, _Display(progress), lambda line: click.echo(line, err=True))


def print_summary(report: CompileReport) -> None:
    from stencilmap.jobs.compile_report import format_seconds

    c, sim, csim = report.choice, report.simulation, report.csim
    params = " ".join(
        f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
        for k, v in c.parameters
        if v is not None
    )
    click.echo(f"{report.program.name} on {report.device.name}: {c.arch} {params}".rstrip())
    click.echo(f"  why:        {c.why}")
    click.echo(f"  predicted:  {format_seconds(c.predicted_seconds)} for {c.iterations:,} time step(s)")
    click.echo(f"  code:       {c.target}, {len(report.code)} file(s) in {report.out_dir / 'code'}")
    ran = {True: "valid", False: "INVALID", None: "not run"}[csim.valid]
    grid = "×".join(map(str, csim.shape))
    click.echo(f"  code run:   {ran} ({csim.message}; {csim.how}, {grid}{' scaled' if csim.scaled else ''})")
    if sim is not None:
        grid = "×".join(map(str, sim.shape))
        err = sim.prediction_error
        click.echo(
            f"  simulated:  {'valid' if sim.valid else 'INVALID'}, {sim.cycles:,} cycles vs "
            f"{sim.predicted_cycles:,} predicted ({'n/a' if err is None else f'{err:+.2%}'}) on "
            f"{grid}{' (scaled down)' if sim.scaled else ''}"
        )
    click.echo(
        f"  report:     {report.out_dir / 'report.html'} ({len(report.files)} files, {report.seconds:.1f} s)"
    )


@click.command("compile")
@click.argument("program", type=click.Path(path_type=Path))
@click.option(
    "--device",
    required=True,
    metavar="NAME|PATH",
    help="A device of the catalog (stencilmap devices) or a device file.",
)
@click.option("--arch", metavar="ARCH", help="Only this microarchitecture (one the device models).")
@click.option(
    "--iterations",
    type=int,
    metavar="T",
    help="The application's time steps  [default: the program's iterate].",
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@input_option(
    "Use this .npy array for input NAME on the full grid (C order); the checks on a smaller grid "
    "take its leading corner. Needed for programs whose data files are not at hand."
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Output folder, replaced as a whole (an existing one only if empty or written by stencilmap)  "
    "[default: out/<program>/compile].",
)
@click.option("--force", is_flag=True, help="Replace --out DIR even if stencilmap did not write it.")
@click.option(
    "--hybrid",
    is_flag=True,
    help="CGRA: simulate the CGRA paper's CPU + CGRA divide-and-conquer (§IV): the CPU the boundary and remainder, the CGRA the subtasks.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@user_errors
def compile_cmd(
    program: Path,
    device: str,
    arch: str | None,
    iterations: int | None,
    shape: tuple[int, ...] | None,
    inputs: dict[str, Path],
    out_dir: Path | None,
    force: bool,
    hybrid: bool,
    as_json: bool,
) -> None:
    """The main job end to end: analyze, explore the best design under the device's resources, build it,
    generate its code for the device's flow (HLS C++ on Xilinx, OpenCL on Intel, mnemonics on EMAX, C or
    CUDA on CPUs and GPUs), run the code here against the reference, simulate the design cycle by cycle
    (on a scaled-down grid when the real one is large), and write the report.

    \b
    DIR receives: code/ (and verify/ when the code was checked on a smaller grid), design.json,
    design.dot, design.svg, roofline.png, design_space.png, report.md, report.html, summary.json.

    \b
    Examples:
      stencilmap compile examples/jacobi2d.soda --device ku060 --out out/jacobi2d_ku060
      stencilmap compile examples/jacobi2d.soda --device de5 --shape 1024,1024 --iterations 100 --out out/j_de5
      stencilmap compile examples/jacobi3d.soda --device emax --shape 16,32,32 --out out/j3_emax --json
      stencilmap compile examples/heat3d.json --device cgra-tia --hybrid --out out/heat3d_hybrid
    """
    from stencilmap.jobs.compile import CompileConfig
    from stencilmap.point import DesignPoint

    if iterations is not None and iterations < 1:
        raise StencilmapError(f"--iterations must be ≥ 1, got {iterations}")
    name = program.stem
    target = out_dir if out_dir is not None else Path("out") / name / "compile"
    point = DesignPoint(arch=arch, device=device)
    report = run_compile(
        CompileConfig(
            program=program,
            point=point,
            out_dir=target,
            iterations=iterations,
            shape=shape,
            force=force,
            inputs=inputs,
            hybrid=hybrid,
        )
    )
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        print_summary(report)
    sim_ok = report.simulation is None or report.simulation.valid
    if report.csim.valid is False or not sim_ok:
        raise SystemExit(1)
