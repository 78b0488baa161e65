"""Programs and small queries over designs for the design tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from stencilmap.analysis.windows import access_sets
from stencilmap.design.ir import Channel, Design, Module
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from stencilmap.program.soda import parse_soda
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, corpus_or_skip

PROGRAM_FILES: list[Path] = corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW) + EXAMPLE_FILES

#: SODA §3.2 / Listing 1: the 5-point Jacobi kernel, row width M = 9, k = 3.
JACOBI_M9 = """kernel: j
input float: a(9, *)
output float: b(0, 0) = a(0, -1) + a(-1, 0) + a(0, 0) + a(1, 0) + a(0, 1)
unroll factor: 3
"""


@cache
def bound(path: Path) -> Program:
    """A corpus program or example, its shape bound to the program's own (defaults for SODA ``*``)."""
    return bind_shape(load_program(path), {}, None)


def soda(text: str, shape: tuple[int, ...]) -> Program:
    return bind_shape(parse_soda(text), {}, shape)


def ident(path: Path) -> str:
    return path.name


def modules(design: Design, kind: str, **where: object) -> list[Module]:
    """Modules of ``kind`` whose parameters match ``where``."""
    return [m for m in design.modules if m.kind == kind and all(m.param(k) == v for k, v in where.items())]


def feeder(design: Design, module: str, port: str = "") -> Channel:
    """The one channel into ``module`` at ``port``."""
    (channel,) = [c for c in design.channels if c.dst == module and c.dst_port == port]
    return channel


def source(design: Design, module: str, port: str = "") -> tuple[str, str]:
    """Where the data into ``module:port`` comes from, looking through broadcasts: (module, src_port)."""
    c = feeder(design, module, port)
    while design.module(c.src).kind == "broadcast":
        c = feeder(design, c.src)
    return c.src, c.src_port


def pe_count(program: Program) -> int:
    """Stencils of one pass (every corpus program and example uses all of them)."""
    return len(program.stencils)


def reads(program: Program) -> int:
    """(stencil, field) pairs of one pass."""
    return sum(len(access_sets(s)) for s in program.stencils)
