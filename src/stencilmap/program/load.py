"""Load a program file in any format (``.soda``, StencilFlow ``.json``, Python ``.py``), then verify it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import cast

from stencilmap.errors import StencilmapError
from stencilmap.io import read_user_text
from stencilmap.program.ir import Program
from stencilmap.program.verify import verify

#: Largest program file accepted (the bundled and corpus programs are all under 20 kB).
MAX_PROGRAM_BYTES = 4 * 2**20


def load_program(path: str | Path) -> Program:
    """Parse a ``.soda``, StencilFlow ``.json`` or Python ``.py`` program and check its invariants."""
    p = Path(path)
    front_end = _PARSERS.get(p.suffix.lower())
    if front_end is None:
        raise StencilmapError("unknown program format: expected a .soda, .json or .py file", str(p))
    module, name = front_end  # imported here: each front end's libraries (lark, pydantic) load when used
    parse = cast(Callable[[str, str], Program], getattr(importlib.import_module(module), name))
    program = parse(read_program_text(p), str(p))
    verify(program)
    return program


#: Suffix → (module, function) of its front end.
_PARSERS: dict[str, tuple[str, str]] = {
    ".soda": ("stencilmap.program.soda", "parse_soda"),
    ".json": ("stencilmap.program.stencilflow", "parse_stencilflow"),
    ".py": ("stencilmap.program.python", "parse_python"),
}


def as_program(source: str | Path | Program) -> Program:
    """A Program as it is (the Python API passes objects), or loaded from its file (the command line)."""
    return source if isinstance(source, Program) else load_program(source)


def read_program_text(p: Path) -> str:
    """The UTF-8 text of a program file: a regular file (not a device or a pipe) of at most
    ``MAX_PROGRAM_BYTES`` (``io.read_user_text``)."""
    return read_user_text(p, str(p), MAX_PROGRAM_BYTES, "a program")
