"""The flows ``compile`` follows, one per kind of device: what it chooses, builds, generates, verifies
and simulates there.

* ``FpgaFlow`` — explore the FPGA builders under the device's resources, build the winner, HLS C++
  (Xilinx) or OpenCL (Intel) for it, verified by C simulation, simulated cycle by cycle;
* ``EmaxFlow`` — the EMAX library's mapping (the most packed p that fits), its mnemonics, run by the
  EMAX simulator (which interprets them: verification and simulation are the same run);
* ``HostFlow`` — CPUs and GPUs: the roofline's prediction, the host backends' generated C or CUDA,
  verified by running it here (the GPU only where CuPy and a device exist); nothing to simulate.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from stencilmap.design.ir import Design
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError
from stencilmap.names import path_argument
from stencilmap.program.ir import Program

if TYPE_CHECKING:
    from stencilmap.explore.report import Candidate, ExploreResult
    from stencilmap.jobs.compile import CompileConfig
    from stencilmap.model.report import EstimateReport

Report = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Choice:
    """The configuration ``compile`` picked, its prediction for all time steps, and why."""

    device: Device
    program: Program  # shape-bound, one time step (iterate 1)
    source: str  # the program's file as the commands name it
    iterations: int
    arch: str
    parameters: tuple[tuple[str, Any], ...]  # unroll / vector / iterate / tile as the CLI names them
    predicted_seconds: float
    why: str
    target: str | None  # codegen target (hls, opencl) or what is written (emax-asm, c, cuda)
    estimate: EstimateReport | None = None
    explored: ExploreResult | None = None
    candidate: Candidate | None = None
    #: (what it reproduces, the exact command line)
    commands: tuple[tuple[str, str], ...] = ()
    device_ref: str = ""  # the device as the user named it: a catalog name or a PATH.json
    #: ``--input NAME=FILE.npy``: the user's arrays on the program's full grid, and the files as given
    supplied: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    input_files: tuple[tuple[str, str], ...] = ()

    def values(self, program: Program) -> dict[str, Any]:
        """The inputs and params of ``program`` (the chosen one, or a copy on a smaller grid the code or
        the simulation is checked on): the user's ``--input`` arrays, cut to that grid (their leading
        corner), the others as the program says or generated from seed 0."""
        from stencilmap.program.data import field_shape, make_inputs

        cut: dict[str, Any] = {}
        for inp in program.inputs:
            if inp.name in self.supplied:
                corner = tuple(slice(0, n) for n in field_shape(program, inp))
                cut[inp.name] = self.supplied[inp.name][corner]
        cut |= {p.name: self.supplied[p.name] for p in program.params if p.name in self.supplied}
        return make_inputs(program, cut, 0)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n or 0) for n in self.program.shape)

    @property
    def q(self) -> int:
        return int(dict(self.parameters).get("iterate") or 1)

    def parameters_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.parameters}

    def options(self) -> list[str]:
        """The parameters as command-line options."""
        out = ["--arch", self.arch]
        for key, value in self.parameters:
            if value is None:
                continue
            text = ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
            out += [f"--{key}", text]
        return out

    def command(self, verb: str, *extra: str, shape: tuple[int, ...] | None = None) -> str:
        """The exact command line that reproduces one of the numbers."""
        source = path_argument(self.source)
        args = ["stencilmap", verb, source, *extra, "--shape", ",".join(map(str, shape or self.shape))]
        if verb in ("simulate", "codegen", "run"):  # the commands that read input data
            args += [a for name, path in self.input_files for a in ("--input", f"{name}={path}")]
        return shlex.join(args)


@dataclass(frozen=True, slots=True)
class Csim:
    """The generated code run here and compared with the reference (None: not run, ``how`` says why)."""

    valid: bool | None
    how: str
    shape: tuple[int, ...] = ()
    scaled: bool = False
    message: str = ""
    compile_seconds: float = 0.0
    run_seconds: float = 0.0
    command: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "how": self.how,
            "shape": list(self.shape),
            "scaled": self.scaled,
            "message": self.message,
            "compile_seconds": round(self.compile_seconds, 3),
            "run_seconds": round(self.run_seconds, 3),
            "command": self.command,
        }


@dataclass(frozen=True, slots=True)
class SimOutcome:
    """The cycle-level simulation of the chosen design (on ``shape``; ``scaled`` when smaller than the
    program's grid) against the model's cycles for that same design and grid."""

    valid: bool
    status: str
    cycles: int
    predicted_cycles: int
    shape: tuple[int, ...]
    scaled: bool
    seconds: float
    message: str = ""
    command: str = ""
    extra: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def prediction_error(self) -> float | None:
        if self.status != "done" or self.cycles <= 0:
            return None
        return (self.predicted_cycles - self.cycles) / self.cycles

    def as_csim(self, how: str) -> Csim:
        """This simulation as the code-run verdict, where running the code is simulating the mapping it
        describes (EMAX mnemonics, CGRA assembly)."""
        return Csim(
            self.valid,
            how=how,
            shape=self.shape,
            scaled=self.scaled,
            message=self.message,
            compile_seconds=0.0,
            run_seconds=self.seconds,
            command=self.command,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "status": self.status,
            "cycles": self.cycles,
            "predicted_cycles": self.predicted_cycles,
            "prediction_error": self.prediction_error,
            "shape": list(self.shape),
            "scaled": self.scaled,
            "seconds": round(self.seconds, 3),
            "message": self.message,
            "command": self.command,
            **dict(self.extra),
        }


class Flow(Protocol):
    def choose(
        self, program: Program, device: Device, config: CompileConfig, source: str, report: Report
    ) -> Choice: ...

    def build(self, choice: Choice) -> Design | None: ...

    def generate(self, choice: Choice, design: Design | None, folder: Path) -> tuple[str, ...]: ...

    def verify(self, choice: Choice, stage: Path, cap: int) -> Csim: ...

    def simulate(
        self, choice: Choice, cap: int, report: Report, notify: Callable[[str], None] | None
    ) -> SimOutcome | None: ...


def flow_for(device: Device, arch: str | None) -> Flow:
    """The flow of ``device``'s kind (``FLOWS``); ``arch`` (if given) must be one the device models."""
    if arch is not None and arch not in device.archs:
        raise StencilmapError(
            f"device '{device.name}' ({device.kind}) models {', '.join(device.archs)}, not '{arch}'"
        )
    flow = FLOWS.get(device.kind, _mapping_flow)(device)
    if flow is None:
        raise StencilmapError(
            f"compile has no flow for device '{device.name}' ({device.kind}, {', '.join(device.archs)})"
        )
    return flow


def _fpga_flow(device: Device) -> Flow:
    from stencilmap.jobs.flow_fpga import FpgaFlow

    return FpgaFlow()


def _mapping_flow(device: Device) -> Flow | None:
    """A CGRA-kind device: the flow of the mapping its architecture makes (CGRA assembly, EMAX mnemonics)."""
    from stencilmap.arch import ARCHS

    mappings = {ARCHS[a].mapping for a in device.archs if a in ARCHS}
    if "assembly" in mappings:
        from stencilmap.jobs.flow_cgra import CgraFlow

        return CgraFlow()
    if "mnemonics" in mappings:
        from stencilmap.jobs.flow_emax import EmaxFlow

        return EmaxFlow()
    return None


def _host_flow(device: Device) -> Flow:
    """A CPU or GPU: the host backends (unless the device's file names a CGRA mapping)."""
    from stencilmap.jobs.flow_host import HostFlow

    return _mapping_flow(device) or HostFlow()


#: The chooser of ``compile``'s flow for each kind of device (``Device.kind``; other kinds: a mapping's).
FLOWS: dict[str, Callable[[Device], Flow | None]] = {
    "fpga": _fpga_flow,
    "cgra": _mapping_flow,
    "cpu": _host_flow,
    "gpu": _host_flow,
}


def time_steps(program: Program, iterations: int | None) -> int:
    """T: the time steps asked for, else the program's own ``iterate``."""
    return iterations if iterations is not None else max(1, program.iterate)


def shrink_outer(program: Program, cap: int, min_rows: int) -> tuple[int, ...]:
    """The program's grid with its outermost axis cut so that about ``cap`` points remain (at least
    ``min_rows`` rows; the inner axes, which set the design's structure, kept)."""
    shape = tuple(int(n or 0) for n in program.shape)
    if prod(shape) <= cap:
        return shape
    plane = max(1, prod(shape[1:]))
    return (min(shape[0], max(min_rows, cap // plane)), *shape[1:])


def verdict(valid: bool, bit_exact: bool, max_abs_error: float) -> str:
    """A validation in a few words."""
    if not valid:
        return f"mismatch, max |error| {max_abs_error:.3g}"
    return "bit-exact" if bit_exact else f"within tolerance, max |error| {max_abs_error:.3g}"


def validate_outputs(
    got: Mapping[str, Any], program: Program, values: Mapping[str, Any]
) -> tuple[bool, bool, float]:
    """Compare outputs with the reference run of ``program`` on ``values``: valid, bit-exact, max |error|."""
    from stencilmap.backends.reference import run_reference
    from stencilmap.sim.validate import validate

    reference = run_reference(program, values)
    v = validate("done", got, reference.outputs, reference.defined)
    return v.valid, v.bit_exact, v.max_abs_error
