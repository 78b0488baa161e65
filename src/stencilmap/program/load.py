"""Load a program file in either format, then verify it."""

from __future__ import annotations

from pathlib import Path

from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from stencilmap.program.soda import load_soda
from stencilmap.program.stencilflow import load_stencilflow
from stencilmap.program.verify import verify


def load_program(path: str | Path) -> Program:
    """Parse a ``.soda`` or StencilFlow ``.json`` program and check its invariants."""
    p = Path(path)
    if not p.exists():
        raise StencilmapError("no such file", str(p))
    suffix = p.suffix.lower()
    if suffix == ".soda":
        program = load_soda(p)
    elif suffix == ".json":
        program = load_stencilflow(p)
    else:
        raise StencilmapError("unknown program format: expected a .soda or .json file", str(p))
    verify(program)
    return program
