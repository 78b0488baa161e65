"""``compile`` on an FPGA: explore → build the winner → HLS C++ (Xilinx) or OpenCL (Intel) → C simulation
→ cycle-level simulation with the device's bandwidth."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError
from stencilmap.jobs.compile_flows import Choice, Csim, Report, SimOutcome, verdict
from stencilmap.program.ir import Program

if TYPE_CHECKING:
    from stencilmap.explore.report import Candidate
    from stencilmap.jobs.compile import CompileConfig

#: grids up to this many points ship their (generated) input data with the code, as ``codegen`` does
DATA_POINTS = 1 << 22

#: the codegen target of each FPGA vendor's flow, and the one to fall back on for a design it cannot express
VENDOR_TARGETS = {"xilinx": ("hls", "opencl"), "intel": ("opencl", "hls")}


def vendor(device: Device) -> str:
    """``xilinx`` for AMD/Xilinx parts (XC…), else ``intel`` (Stratix, Arria, Agilex)."""
    return "xilinx" if (device.part or "").upper().startswith("XC") else "intel"


def target_for(device: Device, arch: str) -> str:
    """The vendor's own target when it can express ``arch``'s designs, else the other one."""
    from stencilmap.codegen.registry import target

    for name in VENDOR_TARGETS[vendor(device)]:
        if arch in target(name).archs:
            return name
    raise StencilmapError(f"no code generator expresses '{arch}' designs")


def vendor_archs(device: Device) -> tuple[str, ...]:
    """The device's microarchitectures its vendor's own code generator expresses (OpenCL on Intel has
    no SODA reuse chains; ``--arch soda`` still gets HLS C++ there)."""
    from stencilmap.codegen.registry import target

    own = target(VENDOR_TARGETS[vendor(device)][0]).archs
    return tuple(a for a in device.archs if a in own) or tuple(device.archs)


class FpgaFlow:
    """See the module docstring."""

    def choose(
        self, program: Program, device: Device, config: CompileConfig, source: str, report: Report
    ) -> Choice:
        from stencilmap.explore.search import explore
        from stencilmap.explore.space import ExploreConfig
        from stencilmap.jobs.estimate import EstimateConfig, estimate
        from stencilmap.point import DesignPoint

        archs = (config.point.arch,) if config.point.arch is not None else vendor_archs(device)
        explored = explore(
            ExploreConfig(
                program=program,
                device=config.device,
                archs=archs,
                iterations=config.iterations,
                simulate=False,
            ),
            lambda _what, done, total: report("choose", done, total),
        )
        best = explored.best
        if best is None or not best.fits:
            notes = "; ".join(explored.notes) or "every candidate exceeds a resource"
            raise StencilmapError(f"no design fits device '{device.name}': {notes}")
        params = best.parameters()
        parameters = (
            ("unroll", params["unroll"]),
            ("vector", params["vector"]),
            ("iterate", best.iterate),
            ("tile", best.tile),
        )
        one_pass = explored.space.program
        point = DesignPoint(
            arch=best.arch,
            unroll=params["unroll"],
            iterate=best.iterate,
            vector=params["vector"],
            tile=best.tile,
            device=config.device,
        )
        est = estimate(EstimateConfig(program=one_pass, point=point, iterations=explored.space.iterations))
        choice = Choice(
            device,
            one_pass,
            source,
            explored.space.iterations,
            best.arch,
            parameters,
            best.predicted_seconds,
            _why(explored, best),
            target_for(device, best.arch),
            est,
            explored,
            best,
            input_files=config.input_files,
        )
        iters = ["--iterations", str(choice.iterations)]
        commands = (
            ("explore", choice.command("explore", "--device", config.device, *iters)),
            ("estimate", choice.command("estimate", "--device", config.device, *choice.options(), *iters)),
        )
        return replace(choice, commands=commands, device_ref=config.device)

    def build(self, choice: Choice) -> Design:
        return _build(choice, choice.program)

    def generate(self, choice: Choice, design: Design | None, folder: Path) -> tuple[str, ...]:
        from stencilmap.jobs.codegen import stage_code

        assert design is not None and choice.target is not None
        chained = with_iterate(choice.program, choice.q)
        folder.mkdir(parents=True)
        small = prod(choice.shape) <= DATA_POINTS
        values = choice.values(chained if small else chained.with_shape((1,) * chained.rank))
        if not small:  # the params (their own shapes) are in the code; the grid's data is the user's
            values = {p.name: values[p.name] for p in chained.params}
        gen = stage_code(
            chained, design=design, target_name=choice.target, values=values, folder=folder, data=small
        )
        return tuple(f"code/{f}" for f in gen.files)

    def verify(self, choice: Choice, stage: Path, cap: int) -> Csim:
        from stencilmap.jobs.codegen import stage_code

        assert choice.target is not None
        program, scaled = _scaled(choice, cap)
        chained = with_iterate(program, choice.q)
        design = _build(choice, program)
        folder = stage / "verify" if scaled else stage / "code"
        folder.mkdir(parents=True, exist_ok=True)
        report = stage_code(
            chained,
            design=design,
            target_name=choice.target,
            values=choice.values(chained),
            folder=folder,
            verify=True,
        )
        v = report.verification
        assert v is not None
        shape = tuple(int(n or 0) for n in program.shape)
        how = {"hls": "g++ C simulation of the HLS C++", "opencl": "the OpenCL kernels run here"}[
            choice.target
        ]
        out = f"out/{choice.program.name}_{choice.target}"
        command = choice.command(
            "codegen", "--target", choice.target, *choice.options(), "--out", out, "--verify", shape=shape
        )
        message = verdict(v.valid, v.validation.bit_exact, v.validation.max_abs_error)
        if v.message:
            message = f"{message}: {v.message}"
        return Csim(
            v.valid,
            how=how,
            shape=shape,
            scaled=scaled,
            message=message,
            compile_seconds=v.compile_seconds,
            run_seconds=v.run_seconds,
            command=command,
        )

    def simulate(
        self, choice: Choice, cap: int, report: Report, notify: Callable[[str], None] | None
    ) -> SimOutcome:
        from stencilmap.jobs.simulate import simulate_dataflow

        program, scaled = _scaled(choice, cap)
        chained = with_iterate(program, choice.q)
        design = replace(_build(choice, program), program=chained)
        values = choice.values(chained)
        progress = lambda c, n: report("simulate", c, n)  # noqa: E731
        sim = simulate_dataflow(chained, design, values, choice.device, progress=progress, notify=notify)
        shape = tuple(int(n or 0) for n in program.shape)
        v = sim.validation
        command = choice.command("simulate", "--device", choice.device_ref, *choice.options(), shape=shape)
        message = "deadlock" if sim.status == "deadlock" else verdict(v.valid, v.bit_exact, v.max_abs_error)
        return SimOutcome(
            valid=sim.valid,
            status=sim.status,
            cycles=sim.cycles,
            predicted_cycles=sim.predicted_cycles,
            shape=shape,
            scaled=scaled,
            seconds=sim.result.seconds,
            message=message,
            command=command,
        )


def _scaled(choice: Choice, cap: int) -> tuple[Program, bool]:
    """The program on the grid the winner is checked on (``explore.winner.scaled_shape``)."""
    from stencilmap.explore.winner import scaled_shape

    assert choice.candidate is not None
    shape = scaled_shape(choice.program, choice.candidate, cap)
    return choice.program.with_shape(shape), shape != choice.shape


def _build(choice: Choice, program: Program) -> Design:
    from stencilmap.explore.resources import build_candidate

    c: Candidate | None = choice.candidate
    assert c is not None
    design = build_candidate(
        c.arch, program=program, lanes=c.lanes, q=c.iterate, tile=c.tile, device=choice.device_ref
    )
    return design


def _why(explored: object, best: Candidate) -> str:
    from stencilmap.explore.report import ExploreResult

    assert isinstance(explored, ExploreResult)
    util = dict(best.utilization).get(best.binding, 0.0)
    return (
        f"the fastest of {explored.points_feasible:,} designs that fit, out of {explored.space_size:,} "
        f"candidates ({explored.points_evaluated:,} predicted, {explored.points_pruned:,} pruned by their "
        f"time bound); {best.scenario}-bound; its binding resource is {best.binding} at {util:.0%}"
    )
