"""``compile`` on a CPU or a GPU: the roofline model's prediction (each time step streams the grid once,
at min(peak, bandwidth × intensity)), the host backends' generated code — C with OpenMP and temporal
blocking (``backends/cgen.py``) or CUDA (``backends/gpu.py``) — verified by running it here against the
reference (the CUDA kernel only where CuPy and a GPU exist). There is no hardware design to simulate."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.design.ir import Design
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError
from stencilmap.jobs.compile_flows import (
    Choice,
    Csim,
    Report,
    SimOutcome,
    shrink_outer,
    time_steps,
    validate_outputs,
    verdict,
)
from stencilmap.program.ir import Program

if TYPE_CHECKING:
    from stencilmap.jobs.compile import CompileConfig

#: what each kind of device gets: (file written, backend, generator description)
HOST_CODE = {"cpu": ("kernel.c", "cpu"), "gpu": ("kernel.cu", "gpu")}


class HostFlow:
    """See the module docstring."""

    def choose(
        self, program: Program, device: Device, config: CompileConfig, source: str, report: Report
    ) -> Choice:
        from stencilmap.jobs.estimate import EstimateConfig, estimate
        from stencilmap.point import DesignPoint

        one_pass = replace(program, iterate=1)
        iterations = time_steps(program, config.iterations)
        point = DesignPoint(arch="roofline", device=config.device)
        est = estimate(EstimateConfig(program=one_pass, point=point, iterations=iterations))
        bound = "bandwidth" if est.scenario == "bandwidth" else "compute"
        why = (
            f"a {device.kind} runs the program as streamed sweeps of the grid, one per time step; the "
            f"roofline bounds it ({bound}-bound at {est.roofline_gops:.4g} GOp/s)"
        )
        choice = Choice(
            device,
            one_pass,
            source,
            iterations,
            "roofline",
            (),
            est.predicted_seconds,
            why,
            HOST_CODE[device.kind][1],
            est,
            input_files=config.input_files,
        )
        cmd = choice.command(
            "estimate", "--device", config.device, "--arch", "roofline", "--iterations", str(iterations)
        )
        return replace(choice, commands=(("estimate", cmd),), device_ref=config.device)

    def build(self, choice: Choice) -> Design | None:
        return None

    def generate(self, choice: Choice, design: Design | None, folder: Path) -> tuple[str, ...]:
        from stencilmap.backends.cexpr import Unsupported
        from stencilmap.backends.plan import make_plan

        name, backend = HOST_CODE[choice.device.kind]
        try:
            plan = make_plan(choice.program)
        except Unsupported as exc:
            raise StencilmapError(f"the {backend} backend cannot run this program: {exc}") from None
        if backend == "gpu":
            from stencilmap.backends.gpu import cuda_source

            text = cuda_source(plan)
        else:
            from stencilmap.backends.cgen import generate

            text = generate(plan)
        folder.mkdir(parents=True)
        (folder / name).write_text(text, encoding="utf-8")
        return (f"code/{name}",)

    def verify(self, choice: Choice, stage: Path, cap: int) -> Csim:
        from stencilmap.backends.registry import HostOptions, execute

        _, backend = HOST_CODE[choice.device.kind]
        shape = shrink_outer(choice.program, cap, min_rows=16)
        program = choice.program.with_shape(shape)
        values = choice.values(program)
        how = f"the {backend} backend's generated code run here"
        command = choice.command("run", "--backend", backend, shape=shape)
        start = time.perf_counter()
        try:
            got = execute(program, values, HostOptions(backend)).result.outputs
        except StencilmapError as exc:
            if backend == "gpu":
                return _compiled_only(choice, stage / "code" / "kernel.cu", exc.message, command)
            return Csim(
                None, how=how, shape=shape, scaled=shape != choice.shape, message=exc.message, command=command
            )
        seconds = time.perf_counter() - start
        valid, exact, error = validate_outputs(got, program, values)
        return Csim(
            valid,
            how=how,
            shape=shape,
            scaled=shape != choice.shape,
            message=verdict(valid, exact, error),
            compile_seconds=0.0,
            run_seconds=seconds,
            command=command,
        )

    def simulate(
        self, choice: Choice, cap: int, report: Report, notify: Callable[[str], None] | None
    ) -> SimOutcome | None:
        return None


def _compiled_only(choice: Choice, written: Path, why: str, command: str) -> Csim:
    """No GPU ran the written ``kernel.cu`` (``why``): NVRTC compiles it for the device's compute capability
    (``backends.nvrtc``; sm_90 where the device file gives none) — a compile error fails the check; else it
    is not run, saying what NVRTC made of it. Without NVRTC (or for an architecture it no longer knows) only
    ``why``."""
    from stencilmap.backends.nvrtc import CHECK_ARCH, nvrtc_compile, nvrtc_missing, supported_archs

    arch = choice.device.cuda_arch or CHECK_ARCH
    how = "the generated kernel.cu, compiled by NVRTC alone"
    shape, start, missing = choice.shape, time.perf_counter(), nvrtc_missing()
    if missing:
        return Csim(None, how=how, shape=shape, message=f"{why}; {missing}", command=command)
    if arch not in supported_archs():
        why = f"{why}; NVRTC does not compile for the {choice.device.name}'s {arch}"
        return Csim(None, how=how, shape=shape, message=why, command=command)
    try:
        build = nvrtc_compile(written.read_text(encoding="utf-8"), arch)
    except StencilmapError as exc:
        seconds = time.perf_counter() - start
        return Csim(
            False, how=how, shape=shape, message=exc.message, compile_seconds=seconds, command=command
        )
    message, seconds = f"{why}; {build.summary()}", time.perf_counter() - start
    return Csim(None, how=how, shape=shape, message=message, compile_seconds=seconds, command=command)
