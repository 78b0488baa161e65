"""Code-generation targets, looked up by name: ``emit("hls", design, program, values)``.

A target turns a Design IR (the design the simulator validated) into the text files of a vendor flow;
``Generated`` holds them, with what verification needs to run them. Every artifact is a target:

=========  ===========================================  ===================================================
target     files                                        run here (``--verify``)
=========  ===========================================  ===================================================
hls        Vitis HLS C++ (soda, stencilflow, pcm)       g++ C simulation
opencl     Intel FPGA OpenCL (pcm, stencilflow)         PoCL / channel emulation
emax       EMAX mnemonics (emax)                        the EMAX simulator interprets the mapping
cgra       CGRA assembly + DFG (cgra)                   the CGRA simulator fires the mapped PEs
dot        Graphviz DOT of any design                   none: a drawing
c-openmp   the cpu backend's C (from the program)       the cpu backend compiles and runs that C
cuda       the gpu backend's CUDA (from the program)    CuPy on a GPU; without one NVRTC only compiles it
=========  ===========================================  ===================================================

``c-openmp`` and ``cuda`` generate from the program alone: their design is ``program_design``'s stand-in
(arch ``host``, no modules). The checks that need a simulator or a backend run in the jobs layer
(``jobs.codegen_checks``): codegen sits beside ``sim`` and ``backends`` and imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy.typing as npt

from stencilmap.design.ir import Design
from stencilmap.errors import StencilmapError
from stencilmap.names import identifier
from stencilmap.program.ir import Program

Values = Mapping[str, npt.NDArray[Any]]
#: How ``--verify`` runs the files: g++ C simulation, an OpenCL kernel on PoCL, the EMAX or the CGRA
#: simulator, the cpu backend, the gpu backend (CuPy), or nothing at all.
Runner = Literal["csim", "pocl", "emax-sim", "cgra-sim", "cpu", "gpu", "none"]
#: The arch of ``program_design``: code generated from the program, no hardware design.
HOST = "host"


@dataclass(frozen=True, slots=True)
class Port:
    """A memory argument of the generated top function / kernel, in argument order."""

    field: str
    direction: Literal["in", "out"]
    dtype: str
    elements: int
    bank: int
    per_row: int = 0  # elements per row where the field spans the rows (the HLS kernel's runtime axis)


@dataclass(frozen=True, slots=True)
class Generated:
    """The files of one target (relative path → text), sorted, and how to verify them."""

    target: str
    files: tuple[tuple[str, str], ...]
    top: str
    ports: tuple[Port, ...]
    runner: Runner
    sources: tuple[str, ...]  # files compiled together for verification
    include_dirs: tuple[str, ...]  # folders (relative) on the include path in verification
    standins: tuple[str, ...] = ()  # folders replaced by --hls-include when given
    flags: tuple[str, ...] = ()  # extra compiler flags of the verification build


Emitter = Callable[[Design, Program, Values], Generated]


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    archs: tuple[str, ...]  # the design archs it expresses (``HOST``: generated from the program)
    emit: Emitter
    summary: str = ""  # one line: what it writes and how --verify runs it


_TARGETS: dict[str, Target] = {}


def register(name: str, archs: tuple[str, ...], summary: str = "") -> Callable[[Emitter], Emitter]:
    def add(fn: Emitter) -> Emitter:
        _TARGETS[name] = Target(name, archs, fn, summary)
        return fn

    return add


def targets() -> tuple[str, ...]:
    _load()
    return tuple(sorted(_TARGETS))


def target(name: str) -> Target:
    _load()
    if name not in _TARGETS:
        raise StencilmapError(f"unknown target '{name}' (known: {', '.join(sorted(_TARGETS))})")
    return _TARGETS[name]


def emit(name: str, design: Design, program: Program, values: Values) -> Generated:
    """The files of target ``name`` for ``design``; a design the target cannot express is refused."""
    t = target(name)
    if design.arch not in t.archs:
        raise StencilmapError(
            f"target '{name}' cannot express a '{design.arch}' design (it takes: {', '.join(t.archs)})"
        )
    check_identifiers(program)
    return t.emit(design, program, values)


def check_identifiers(program: Program) -> None:
    """Refuse two of the program's names that generated code would spell alike: identifiers drop leading
    and trailing underscores (``names.identifier``), so ``_v`` and ``v`` would declare one symbol twice."""
    seen: dict[str, str] = {}
    fields = [*(i.name for i in program.inputs), *(s.name for s in program.stencils)]
    for n in [*fields, *(p.name for p in program.params), *(c.name for c in program.constants)]:
        other = seen.setdefault(identifier(n), n)
        if other != n:
            raise StencilmapError(
                f"'{other}' and '{n}' are one name in generated code ({identifier(n)}: leading and trailing "
                "underscores are dropped); rename one",
                program.path,
            )


def program_design(program: Program) -> Design:
    """The stand-in design of a target that generates from the program alone (``c-openmp``, ``cuda``)."""
    return Design(program.name, HOST, (), (), (("iterate", program.iterate),))


def from_program(name: str) -> bool:
    """Whether target ``name`` generates from the program alone (no design is built for it)."""
    return target(name).archs == (HOST,)


def _load() -> None:
    from stencilmap.codegen import cgra, dot, emax, hls, host, opencl  # noqa: F401
