"""``stencilmap codegen``: a thin click command over ``stencilmap.jobs.codegen`` (files written, and with
``--verify`` the verdict of running them here against the reference).

Exit status: 0 written (and, with ``--verify``, valid); 1 a mismatch, a deadlock or a failed build of the
generated code — a result, reported on stdout; 2 bad input (one line on stderr).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from stencilmap.cli.common import (
    SEED,
    fuse_option,
    fused_line,
    make_console,
    parse_inputs,
    parse_shape,
    partition_options,
    partition_table,
    user_errors,
    warn,
)

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from stencilmap.jobs.codegen import CodegenReport

ARCHS = ["soda", "stencilflow", "pcm"]


def codegen_json(report: CodegenReport) -> dict[str, Any]:
    """The report as one JSON-ready dict (deterministic but for the seconds)."""
    v = report.verification
    out: dict[str, Any] = {
        "program": report.program.name,
        "fused": [list(pair) for pair in report.fused],
        "target": report.generated.target,
        "arch": report.design.arch,
        "design": {k: list(x) if isinstance(x, tuple) else x for k, x in report.design.parameters},
        "top": report.generated.top,
        "out": str(report.out_dir),
        "files": list(report.files),
        "generate_seconds": report.generate_seconds,
    }
    if report.partition is not None:
        out["partition"] = report.partition.to_json()
    if v is not None:
        val = v.validation
        first = val.first_mismatch
        out.update(
            valid=v.valid,
            status=val.status,
            bit_exact=val.bit_exact,
            max_abs_error=val.max_abs_error if math.isfinite(val.max_abs_error) else None,
            first_mismatch=None if first is None else {"output": first[0], "index": list(first[1].index)},
            message=v.message or None,
            compile_seconds=v.compile_seconds,
            run_seconds=v.run_seconds,
            outputs=[str(p) for p in v.outputs],
        )
    return out


def _print(report: CodegenReport) -> None:
    g = report.generated
    click.echo(
        f"{report.program.name}: {g.target} code of the {report.design.arch} design ({g.top}) in {report.out_dir}/"
    )
    for f in report.files:
        click.echo(f"  {f}")
    click.echo(f"generated in {report.generate_seconds:.2f} s")
    if report.partition is not None:
        make_console().print(partition_table(report.partition))
    v = report.verification
    if v is None:
        return
    val = v.validation
    runner = (
        "PoCL" if g.runner == "pocl" else ("channel emulation" if g.target == "opencl" else "C simulation")
    )
    if v.valid:
        exact = "bit-exact" if val.bit_exact else f"within tolerance (max abs error {val.max_abs_error:.3g})"
        click.echo(f"verified by {runner}: valid, {exact} against the reference")
    else:
        why = v.message or f"{sum(o.mismatches for o in val.outputs)} points beyond tolerance"
        click.echo(f"verified by {runner}: INVALID ({val.status}): {why}")
        first = val.first_mismatch
        if first is not None and val.status == "done":
            m = first[1]
            click.echo(f"  first mismatch: {first[0]}{list(m.index)} = {m.got}, expected {m.expected}")
    click.echo(f"compile {v.compile_seconds:.2f} s, run {v.run_seconds:.3f} s")


@click.command("codegen")
@click.argument("program", type=click.Path(path_type=Path))
@click.option(
    "--target", required=True, metavar="hls|opencl", help="Vitis HLS C++ (hls) or Intel FPGA OpenCL (opencl)."
)
@click.option(
    "--arch", type=click.Choice(ARCHS),
    help="Microarchitecture  [default: hls: soda / stencilflow by format; opencl: pcm / stencilflow].",
)  # fmt: skip
@click.option("--unroll", type=int, metavar="K", help="PEs per stage k (SODA) / P_cell (PCM).")
@click.option("--iterate", type=int, metavar="Q", help="Time steps chained on chip: q stages / d PCMs.")
@click.option("--vector", type=int, metavar="W", help="Vector width W (StencilFlow).")
@click.option("--tile", callback=parse_shape, metavar="T1,...", help="SODA tile sizes of the inner axes.")
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@click.option("--device", metavar="NAME", help="Target device (recorded in the design).")
@click.option(
    "--input", "inputs", multiple=True, callback=parse_inputs, metavar="NAME=FILE.npy",
    help="Use this .npy array for input NAME (C order).",
)  # fmt: skip
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for generated inputs.")
@click.option(
    "--delay-buffers", type=click.Choice(["computed", "min"]), default="computed", show_default=True,
    help="StencilFlow delay buffers: the computed depths, or depth 1 (to see a deadlock).",
)  # fmt: skip
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Output folder (replaced; an existing one only if empty or written by stencilmap).",
)
@click.option("--force", is_flag=True, help="Replace --out DIR even if stencilmap did not write it.")
@click.option(
    "--verify",
    is_flag=True,
    help="Run the code here (g++ C simulation / PoCL) and compare with the reference.",
)
@click.option(
    "--hls-include", type=click.Path(path_type=Path), metavar="DIR",
    help="Compile --verify against these hls_stream.h / ap_int.h (e.g. $XILINX_HLS/include).",
)  # fmt: skip
@fuse_option
@partition_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@user_errors
def codegen_cmd(
    program: Path,
    target: str,
    arch: str | None,
    unroll: int | None,
    iterate: int | None,
    vector: int | None,
    tile: tuple[int, ...] | None,
    shape: tuple[int, ...] | None,
    device: str | None,
    inputs: dict[str, Path],
    seed: int,
    delay_buffers: str,
    out_dir: Path,
    verify: bool,
    hls_include: Path | None,
    force: bool,
    fuse: bool,
    devices: int | None,
    partition_file: Path | None,
    as_json: bool,
) -> None:
    """Generate vendor code for PROGRAM's design: Vitis HLS C++ (soda, stencilflow, pcm designs) or
    Intel FPGA OpenCL (pcm, stencilflow designs), with host program, Makefile and README. With --verify,
    run it here — HLS as a g++ C simulation, a PCM kernel on PoCL, StencilFlow channels in a threaded
    emulation — and compare with the reference; outputs go to DIR/csim/<output>.npy.

    With --devices N / --partition FILE (a stencilflow design, --target opencl, a --device whose file
    gives its network) the design is split over devices: DIR/deviceN/ holds each device's kernels, cut
    streams become SMI send/receive kernels, and --verify runs all devices in one emulation (SMI stand-in).

    Exit status: 0 written (and valid); 1 mismatch or deadlock; 2 bad input.

    \b
    Examples:
      stencilmap codegen examples/jacobi2d.soda --target hls --unroll 2 --out out/jacobi2d_hls --verify
      stencilmap codegen examples/laplace2d.soda --target opencl --iterate 2 --out out/laplace_cl --verify
      stencilmap codegen examples/dag_listing1.json --target opencl --vector 2 --out out/dag_cl --verify --json
      stencilmap codegen examples/dag_listing1.json --target opencl --device stratix10 --partition examples/partitions/dag_listing1.json --out out/dag_smi --verify
    """  # fmt: skip
    from stencilmap.jobs.codegen import CodegenConfig, codegen

    config = CodegenConfig(
        program, target, out_dir, arch, unroll, iterate, vector, tile, shape, device, inputs, seed, verify,
        hls_include, "min" if delay_buffers == "min" else "computed", fuse=fuse, devices=devices,
        partition=partition_file, force=force,
    )  # fmt: skip
    report = codegen(config)
    warn(report.program.warnings)
    if as_json:
        click.echo(json.dumps(codegen_json(report), indent=2))
    else:
        if fuse:
            click.echo(fused_line(report.fused))
        _print(report)
    if report.verification is not None and not report.verification.valid:
        sys.exit(1)
