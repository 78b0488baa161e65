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
    design_options,
    fused_line,
    input_option,
    make_console,
    parse_shape,
    partition_table,
    user_errors,
    warn,
)
from stencilmap.point import DesignPoint

if TYPE_CHECKING:  # the job is imported when the command runs: `--help` stays instant
    from stencilmap.jobs.codegen import CodegenReport

ARCHS = ["soda", "stencilflow", "pcm", "emax", "cgra"]
#: ``Generated.runner`` in words: what ``--verify`` ran
RUNNERS = {
    "pocl": "PoCL",
    "csim": "C simulation",
    "emax-sim": "the EMAX simulator",
    "cgra-sim": "the CGRA simulator",
    "cpu": "the cpu backend",
    "gpu": "CuPy on the GPU",
}


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
    if report.not_run:
        out["verified"] = report.not_run
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
    if report.not_run:
        click.echo(f"verify: {report.not_run}")
    v = report.verification
    if v is None:
        return
    val = v.validation
    runner = "channel emulation" if g.runner == "csim" and g.target == "opencl" else RUNNERS[g.runner]
    if v.valid:
        exact = "bit-exact" if val.bit_exact else f"within tolerance (max abs error {val.max_abs_error:.3g})"
        note = f" ({v.message})" if v.message else ""  # e.g. it ran with the network (no unshare)
        click.echo(f"verified by {runner}: valid, {exact} against the reference{note}")
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
    "--target",
    required=True,
    metavar="T",
    help="hls (Vitis HLS C++), opencl (Intel FPGA OpenCL), emax (mnemonics), cgra (assembly + DFG), dot, "
    "c-openmp (the cpu backend's C), cuda (the gpu backend's CUDA).",
)
@design_options(
    "arch",
    "unroll",
    "iterate",
    "vector",
    "tile",
    "device",
    "delay_buffers",
    "fuse",
    "devices",
    "partition",
    help={
        "arch": "Microarchitecture  [default: hls, dot: soda / stencilflow by format; opencl: pcm / stencilflow; "
        "emax: emax; cgra: cgra; none for c-openmp, cuda].",
        "unroll": "PEs per stage k (SODA) / P_cell (PCM) / p (EMAX) / workers (CGRA).",
        "vector": "Vector width W (StencilFlow).",
    },
    choices={"arch": ARCHS},
)
@click.option("--shape", callback=parse_shape, metavar="D0,D1,...", help="Iteration shape in C order.")
@input_option()
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for generated inputs.")
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
    help="Run the code here (g++ C simulation / PoCL / EMAX or CGRA simulator / cpu backend / CuPy) and "
    "compare with the reference.",
)
@click.option(
    "--hls-include",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Compile --verify against these hls_stream.h / ap_int.h (e.g. $XILINX_HLS/include).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@user_errors
def codegen_cmd(
    program: Path,
    target: str,
    point: DesignPoint,
    shape: tuple[int, ...] | None,
    inputs: dict[str, Path],
    seed: int,
    out_dir: Path,
    verify: bool,
    hls_include: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Generate vendor code for PROGRAM's design: Vitis HLS C++ (soda, stencilflow, pcm designs) or
    Intel FPGA OpenCL (pcm, stencilflow designs), with host program, Makefile and README; EMAX mnemonics
    (emax.asm), CGRA assembly and DFG (cgra.asm, cgra_dfg.dot), the design's DOT (design.dot), or the host
    backends' C with OpenMP (kernel.c) or CUDA (kernel.cu). With --verify, run it here — HLS as a g++ C
    simulation, a PCM kernel on PoCL, StencilFlow channels in a threaded emulation, the EMAX and CGRA
    simulators, the cpu backend; CUDA only on a GPU (without one NVRTC compiles it for sm_90 and says each
    kernel's registers, "not run: no GPU"), DOT never — and compare with the reference; outputs go to
    DIR/csim/<output>.npy.

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
    """
    from stencilmap.jobs.codegen import CodegenConfig, codegen

    config = CodegenConfig(
        program=program,
        target=target,
        out_dir=out_dir,
        point=point,
        shape=shape,
        inputs=inputs,
        seed=seed,
        verify=verify,
        hls_include=hls_include,
        force=force,
    )
    report = codegen(config)
    warn(report.program.warnings)
    if as_json:
        click.echo(json.dumps(codegen_json(report), indent=2))
    else:
        if point.fuse:
            click.echo(fused_line(report.fused))
        _print(report)
    if report.verification is not None and not report.verification.valid:
        sys.exit(1)
