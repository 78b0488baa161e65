"""``--verify`` of the targets whose "run it here" needs a simulator or a backend (``codegen.registry``):
codegen sits beside ``sim`` and ``backends`` and imports neither, so their runs live here.

* ``emax`` — the EMAX simulator (``sim.emax``) runs the written mnemonics as the assembler reads them, and
  the library's C call written beside them, compiled and run here, must compute the same values;
* ``cgra`` — the CGRA simulator (``sim.cgra``) fires the PEs the assembly lists;
* ``c-openmp`` — the cpu backend compiles exactly the written ``kernel.c`` and runs it;
* ``cuda`` — CuPy compiles the written ``kernel.cu`` on a GPU and the backend runs it; without one NVRTC
  compiles it for sm_90 (``backends.nvrtc``: a compile error fails the check; else "not run: no GPU" with
  each kernel's registers), and without NVRTC either: "not run: no GPU";
* ``dot`` — a drawing: "not run: a drawing has nothing to run".

Each returns the outputs as a ``CsimResult`` (compared with the reference by ``jobs.codegen``), or a
one-line reason why nothing ran.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from stencilmap.codegen.registry import Generated
from stencilmap.codegen.verify import CsimResult
from stencilmap.design.ir import Design
from stencilmap.errors import StencilmapError
from stencilmap.io import Array
from stencilmap.program.ir import Program

#: the reason a target's check did not run
NO_GPU = "not run: no GPU"
A_DRAWING = "not run: a drawing has nothing to run"


def run_here(
    gen: Generated, design: Design, program: Program, values: Mapping[str, Array]
) -> CsimResult | str:
    """Run ``gen`` here as its runner says; a string: why it did not run."""
    if gen.runner == "emax-sim":
        return _emax(gen, design, program, values)
    if gen.runner == "cgra-sim":
        return _cgra(design, program, values)
    if gen.runner == "cpu":
        return _cpu(gen, program, values)
    if gen.runner == "gpu":
        return _gpu(gen, program, values)
    if gen.runner == "none":
        return A_DRAWING
    raise StencilmapError(f"target '{gen.target}': no check runs '{gen.runner}' here")


def _emax(gen: Generated, design: Design, program: Program, values: Mapping[str, Array]) -> CsimResult:
    from stencilmap.codegen.emax import device_program
    from stencilmap.design.emax.asm import assemble
    from stencilmap.device.catalog import load_device
    from stencilmap.sim.emax import simulate_emax

    mapping = assemble(dict(gen.files)["emax.asm"], "emax.asm", device_program(program, design))
    run = simulate_emax(mapping, values[mapping.field], load_device(mapping.device))
    shape = tuple(int(n or 0) for n in program.shape)
    simulated = run.output.reshape(shape)
    # the library's C call (stencil_<name>.c and emax.h) compiled and run here must compute the same
    from stencilmap.codegen.emax_c import compile_and_run, source_name

    source, start = source_name(mapping), time.perf_counter()
    c_files = tuple((name, text) for name, text in gen.files if name.endswith((".c", ".h")))
    try:
        compiled = compile_and_run(mapping, c_files, values[mapping.field]).reshape(shape)
    except StencilmapError as exc:
        why = f"{source} not run: {exc}"
        return CsimResult("done", {mapping.output: simulated}, 0.0, run.sim_seconds, why)
    seconds = time.perf_counter() - start
    if not np.array_equal(compiled, simulated, equal_nan=True):
        why = f"{source} compiled and run here differs from the simulator's run of emax.asm"
        return CsimResult("failed", {mapping.output: compiled}, seconds, run.sim_seconds, why)
    same = f"{source} compiled and run here: the same values bit for bit"
    return CsimResult("done", {mapping.output: simulated}, seconds, run.sim_seconds, same)


def _cgra(design: Design, program: Program, values: Mapping[str, Array]) -> CsimResult:
    from stencilmap.codegen.cgra import assembly, mapping_of
    from stencilmap.codegen.cgra_asm import parse_asm
    from stencilmap.design.cgra.mapping import fabric
    from stencilmap.jobs.simulate import as_field_dtype
    from stencilmap.model.roofline import roofline_of
    from stencilmap.sim.cgra import simulate_cgra

    mapping = parse_asm(assembly(mapping_of(design, program)), "cgra.asm")  # the text written, run
    device = fabric(mapping.device).device
    shape = tuple(int(n or 0) for n in program.shape)
    roofline = roofline_of(program, shape, device, mapping.layers).attainable_gops
    run = simulate_cgra(mapping, dict(values), device, roofline)
    outputs = {k: as_field_dtype(v, program.field_dtype(k)) for k, v in run.outputs.items()}
    message = "" if run.status == "done" else f"the CGRA simulation ended: {run.status}"
    if run.status in ("done", "deadlock"):
        return CsimResult(
            "done" if run.status == "done" else "deadlock", outputs, 0.0, run.sim_seconds, message
        )
    return CsimResult("failed", outputs, 0.0, run.sim_seconds, message)


def _cpu(gen: Generated, program: Program, values: Mapping[str, Array]) -> CsimResult:
    from stencilmap.backends.cpu import compile_program, run_cpu

    written = dict(gen.files)["kernel.c"]
    compiled = compile_program(program)
    if compiled.source != written:  # the backend must run the text written, not a regenerated one
        raise StencilmapError("target 'c-openmp': the cpu backend's C differs from kernel.c")
    start = time.perf_counter()
    result, timing = run_cpu(program, values)
    return CsimResult("done", dict(result.outputs), timing.compile_seconds, time.perf_counter() - start)


def gpu_present() -> bool:
    """Whether CuPy and a CUDA device are here."""
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:  # no CuPy, no driver, no device: CuPy raises its own errors
        return False


def _gpu(gen: Generated, program: Program, values: Mapping[str, Array]) -> CsimResult | str:
    from stencilmap.backends.gpu import run_gpu
    from stencilmap.codegen.host import host_source

    written = dict(gen.files)["kernel.cu"]
    if host_source(program, "gpu") != written:
        raise StencilmapError("target 'cuda': the gpu backend's CUDA differs from kernel.cu")
    if not gpu_present():
        return _nvrtc(written)
    execution = run_gpu(program, values)
    outputs = {k: np.asarray(v) for k, v in execution.result.outputs.items()}
    return CsimResult("done", outputs, execution.compile_seconds or 0.0, execution.compute_seconds)


def _nvrtc(written: str) -> CsimResult | str:
    """No GPU: NVRTC compiles ``kernel.cu`` for an H100/H200 (sm_90) as CuPy would on one, and says each
    kernel's registers (``backends.nvrtc``); nothing runs. Without NVRTC: just "not run: no GPU"."""
    from stencilmap.backends.nvrtc import nvrtc_compile, nvrtc_missing

    if nvrtc_missing():
        return NO_GPU
    start = time.perf_counter()
    try:
        build = nvrtc_compile(written)
    except StencilmapError as exc:
        why = f"NVRTC did not compile kernel.cu: {exc.message}"
        return CsimResult("failed", {}, time.perf_counter() - start, 0.0, why)
    return f"{NO_GPU}; {build.summary()}"
