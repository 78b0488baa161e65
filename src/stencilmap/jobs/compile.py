"""The ``compile`` job: the main job end to end, one call per stage.

    program ─[analyze]→ facts ─[choose]→ the best configuration on the device (explore on FPGAs)
      ─[build]→ Design ─[generate]→ code for the device's flow ─[verify]→ the code run here (C simulation)
      ─[simulate]→ cycles against the model (on a scaled grid when large) ─[report]→ report.md / .html

The device's kind picks the flow: FPGAs get the explored design and HLS C++ (Xilinx) or OpenCL (Intel);
EMAX gets its mapping's mnemonics, verified and simulated by the EMAX simulator; CPUs and GPUs get the
host backends' generated C / CUDA and the roofline's prediction (no hardware to simulate). Everything is
staged in a folder beside DIR and renamed into place at the end: all files or none.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path
from typing import Any

from stencilmap.analysis import ProgramAnalysis, analyze_program
from stencilmap.design.ir import Design
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError
from stencilmap.io import read_npy
from stencilmap.jobs.codegen import publish_folder, stage_folder
from stencilmap.jobs.compile_flows import Choice, Csim, Flow, SimOutcome, flow_for
from stencilmap.jobs.compile_report import write_report
from stencilmap.point import DesignPoint
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.ir import Program
from stencilmap.program.load import as_program

#: progress(stage, done, total): the stage's name and its advance (the simulation reports cycles)
Progress = Callable[[str, int, int], None]

#: the stages in order, as the progress display names them
STAGES = ("analyze", "choose", "build", "generate", "verify", "simulate", "report")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileConfig:
    """Everything ``stencilmap compile`` was asked to do (None: the program's or device's default):
    ``point.device`` names the device, ``point.arch`` the architecture if one is imposed."""

    program: Path | Program
    point: DesignPoint
    out_dir: Path
    iterations: int | None = None  # T: the application's time steps (default: the program's iterate)
    shape: tuple[int, ...] | None = None
    sim_points: int = 1 << 16  # the cycle-level simulation streams at most about this many points
    csim_points: int = 1 << 12  # the C simulation runs code generated for at most this many points
    force: bool = False  # replace an out_dir stencilmap did not write (jobs.codegen.check_replace_folder)
    inputs: Mapping[str, Path] = field(default_factory=dict)  # --input NAME=FILE.npy on the full grid
    hybrid: bool = False  # CGRA: simulate §IV's CPU + CGRA divide-and-conquer (jobs.hybrid_cgra)

    @property
    def device(self) -> str:
        assert self.point.device is not None, "compile needs a device"
        return self.point.device

    @property
    def input_files(self) -> tuple[tuple[str, str], ...]:
        """``--input`` as the reproducing commands name it."""
        return tuple((name, str(path)) for name, path in self.inputs.items())


@dataclass(frozen=True, slots=True)
class CompileReport:
    """What ``compile`` chose, predicted, generated, verified and simulated, and the files it wrote."""

    program: Program
    source: str  # the program's file, as the reproducing commands name it
    device: Device
    facts: ProgramAnalysis
    choice: Choice
    design: Design | None
    code: tuple[str, ...]  # files of the generated code, relative to out_dir
    csim: Csim
    simulation: SimOutcome | None
    out_dir: Path
    files: tuple[str, ...]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        sim = self.simulation
        return {
            "program": self.program.name,
            "device": self.device.name,
            "shape": list(self.choice.shape),
            "iterations": self.choice.iterations,
            "best": {"arch": self.choice.arch, **self.choice.parameters_json()},
            "predicted_seconds": self.choice.predicted_seconds,
            "why": self.choice.why,
            "target": self.choice.target,
            "simulation": None if sim is None else sim.to_json(),
            "csim": self.csim.to_json(),
            "out_dir": str(self.out_dir),
            "files": list(self.files),
            "commands": dict(self.choice.commands),
            "seconds": round(self.seconds, 3),
        }


def compile_program(
    config: CompileConfig, progress: Progress | None = None, notify: Callable[[str], None] | None = None
) -> CompileReport:
    """Run every stage; see the module docstring."""
    report = progress if progress is not None else _quiet
    start = time.perf_counter()
    device = load_device(config.device)
    supplied = {name: read_npy(name, path) for name, path in config.inputs.items()}
    program = bind_shape(as_program(config.program), supplied, config.shape)
    if supplied:  # checked on the full grid before any work: names, shapes, dtypes
        make_inputs(program, supplied, 0)
    source = str(config.program) if isinstance(config.program, Path) else f"{program.name}.{_suffix(program)}"
    check_grid(program)
    flow: Flow = flow_for(device, config.point.arch)
    if config.hybrid and not hasattr(flow, "hybrid"):
        raise StencilmapError(
            f"--hybrid is the CGRA paper's CPU + CGRA division (§IV): not for '{device.name}'"
        )
    stage = stage_folder(config.out_dir, config.force)
    try:
        report("analyze", 0, 1)
        facts = analyze_program(replace(program, iterate=1))
        report("choose", 0, 1)
        choice = flow.choose(program, device, config, source, report)
        choice = replace(choice, supplied=supplied)
        report("build", 0, 1)
        design = flow.build(choice)
        report("generate", 0, 1)
        code = flow.generate(choice, design, stage / "code")
        report("verify", 0, 1)
        csim = flow.verify(choice, stage, config.csim_points)
        simulation = flow.simulate(choice, config.sim_points, report, notify)
        report("report", 0, 1)
        result = CompileReport(
            program,
            source=source,
            device=device,
            facts=facts,
            choice=choice,
            design=design,
            code=code,
            csim=csim,
            simulation=simulation,
            out_dir=config.out_dir,
            files=(),
            seconds=0.0,
        )
        files = write_report(result, stage)
        publish_folder(stage, config.out_dir, config.force)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return replace(result, files=files, seconds=time.perf_counter() - start)


def _suffix(program: Program) -> str:
    return "soda" if program.format == "soda" else "json"


def _quiet(stage: str, done: int, total: int) -> None:
    return None


def check_grid(program: Program) -> None:
    """A grid of no points cannot be compiled (a shape of zeros from a bad ``--shape`` is caught earlier)."""
    if prod(int(n or 0) for n in program.shape) < 1:
        raise StencilmapError("the program's grid has no points")
