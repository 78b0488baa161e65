"""Code-generation targets, looked up by name: ``emit("hls", design, program, values)``.

A target turns a Design IR (the design the simulator validated) into the text files of a vendor flow;
``Generated`` holds them, with what verification needs to run them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy.typing as npt

from stencilmap.design.ir import Design
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program

Values = Mapping[str, npt.NDArray[Any]]
#: How ``--verify`` runs the files: g++ C simulation, or an OpenCL kernel on PoCL.
Runner = Literal["csim", "pocl"]


@dataclass(frozen=True, slots=True)
class Port:
    """A memory argument of the generated top function / kernel, in argument order."""

    field: str
    direction: Literal["in", "out"]
    dtype: str
    elements: int
    bank: int


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
    archs: tuple[str, ...]
    emit: Emitter


_TARGETS: dict[str, Target] = {}


def register(name: str, archs: tuple[str, ...]) -> Callable[[Emitter], Emitter]:
    def add(fn: Emitter) -> Emitter:
        _TARGETS[name] = Target(name, archs, fn)
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
    return t.emit(design, program, values)


def _load() -> None:
    from stencilmap.codegen import hls, opencl  # noqa: F401
