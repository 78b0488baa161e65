"""The ``stencilmap`` command line: parse options, call the library, print. Nothing else lives here."""

from __future__ import annotations

import json
from pathlib import Path

import click

from stencilmap import __version__
from stencilmap.cli_common import (
    SEED,
    StencilmapGroup,
    data_dir_option,
    make_console,
    parse_inputs,
    parse_shape,
    user_errors,
)
from stencilmap.errors import StencilmapError

# Every command imports its job when it runs, so that `--help` answers at once.

#: The host backends (``backends.registry.BACKENDS``; tests/test_cli_speed.py checks they agree).
BACKENDS = ("numpy", "cpu", "dask", "gpu")


@click.group(cls=StencilmapGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stencilmap")
def main() -> None:
    """stencilmap: stencil programs (SODA .soda, StencilFlow .json) onto spatial dataflow hardware.

    \b
    Examples:
      stencilmap run examples/jacobi2d.soda
      stencilmap analyze examples/dag_listing1.json --dot dag.dot
      stencilmap simulate examples/jacobi2d.soda --device ku060
      stencilmap explore examples/jacobi2d.soda --device ku060 --shape 4096,4096
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
@click.option("--chunks", metavar="C0,C1,...", help="dask: chunk sizes in C order  [default: 512 per axis].")
@click.option("--scheduler", metavar="ADDRESS", help="dask: a distributed scheduler, e.g. tcp://host:8786.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
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
      stencilmap run examples/heat3d.json --input T=T.npy --out results/
    """  # fmt: skip
    from stencilmap import present
    from stencilmap.backends.registry import HostOptions
    from stencilmap.jobs.run import RunConfig, run

    host = HostOptions(backend, threads, _chunks(chunks), scheduler)
    report = run(RunConfig(program, inputs, seed, shape, out_dir, data_dir, host, iterate))
    _warn(report.program.warnings)
    if as_json:
        click.echo(json.dumps(present.run_json(report), indent=2))
    else:
        present.print_run(report, make_console())


def _chunks(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(v) for v in value.split(","))
    except ValueError:
        raise StencilmapError(f"--chunks: expected sizes like 256,256, got '{value}'") from None


def _warn(warnings: tuple[str, ...]) -> None:
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


@main.command("analyze")
@click.argument("program", type=click.Path(path_type=Path))
@click.option(
    "--arch",
    type=click.Choice(["soda", "stencilflow", "pcm", "emax", "cgra"]),
    help="Microarchitecture  [default: soda for .soda, stencilflow for .json].",
)
@click.option(
    "--unroll",
    type=int,
    metavar="K",
    help="PEs per stage k (SODA) / P_cell (PCM) / parallel Z mappings p (EMAX)  [default: the program's; "
    "EMAX: the most that fit].",
)
@click.option("--workers", type=int, metavar="W", help="CGRA workers w  [default: the §VI roofline's].")
@click.option(
    "--strip",
    type=int,
    metavar="WIDTH",
    help="CGRA vertical strip width (§III-B)  [default: one strip unless the buffering overflows].",
)
@click.option("--iterate", type=int, metavar="Q", help="Stages q (SODA) / PCMs d  [default: the program's].")
@click.option(
    "--vector", type=int, metavar="W", help="Vector width W (StencilFlow)  [default: the program's]."
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option(
    "--dot", type=click.Path(path_type=Path), metavar="FILE", help="Write the design as Graphviz DOT."
)
@click.option(
    "--asm", type=click.Path(path_type=Path), metavar="FILE",
    help="Write the EMAX mnemonics (--arch emax) or the CGRA assembly (--arch cgra).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@user_errors
def analyze_cmd(
    program: Path,
    arch: str | None,
    unroll: int | None,
    workers: int | None,
    strip: int | None,
    iterate: int | None,
    vector: int | None,
    shape: tuple[int, ...] | None,
    dot: Path | None,
    asm: Path | None,
    as_json: bool,
) -> None:
    """Analyze PROGRAM and build its spatial design: windows, halos, reuse chains, delay buffers,
    latency, runtime, operational intensity, module and FIFO totals.

    \b
    Examples:
      stencilmap analyze examples/jacobi2d.soda --unroll 4
      stencilmap analyze examples/dag_listing1.json --arch stencilflow --json
      stencilmap analyze examples/laplace2d.soda --arch pcm --iterate 8 --dot laplace.dot
      stencilmap analyze examples/star3d_degree3.soda --arch emax --unroll 2 --asm fd6.asm
      stencilmap analyze examples/stencil1d_r8.json --arch cgra --asm s1d.asm --dot s1d.dot
    """  # fmt: skip
    from stencilmap import present
    from stencilmap.analyze import AnalyzeConfig, analyze

    report = analyze(AnalyzeConfig(program, arch, unroll, iterate, vector, shape, dot, asm, workers, strip))
    _warn(report.program.warnings)
    if as_json:
        click.echo(json.dumps(present.analyze_json(report), indent=2))
    else:
        present.print_analysis(report, make_console())


from stencilmap.codegen_cli import codegen_cmd  # noqa: E402
from stencilmap.explore_cli import explore_cmd  # noqa: E402
from stencilmap.model_cli import devices_cmd, estimate_cmd, roofline_cmd  # noqa: E402
from stencilmap.sim_cli import simulate_cmd  # noqa: E402

main.add_command(simulate_cmd)
main.add_command(explore_cmd)
main.add_command(devices_cmd)
main.add_command(estimate_cmd)
main.add_command(roofline_cmd)
main.add_command(codegen_cmd)

if __name__ == "__main__":
    main()
