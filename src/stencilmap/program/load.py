"""Load a program file in any format (``.soda``, StencilFlow ``.json``, Python ``.py``), then verify it."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from stencilmap.program.python import parse_python
from stencilmap.program.soda import parse_soda
from stencilmap.program.stencilflow import parse_stencilflow
from stencilmap.program.verify import verify

#: Largest program file accepted (the bundled and corpus programs are all under 20 kB).
MAX_PROGRAM_BYTES = 4 * 2**20


def load_program(path: str | Path) -> Program:
    """Parse a ``.soda``, StencilFlow ``.json`` or Python ``.py`` program and check its invariants."""
    p = Path(path)
    parse = _PARSERS.get(p.suffix.lower())
    if parse is None:
        raise StencilmapError("unknown program format: expected a .soda, .json or .py file", str(p))
    program = parse(read_program_text(p), str(p))
    verify(program)
    return program


_PARSERS: dict[str, Callable[[str, str], Program]] = {
    ".soda": parse_soda,
    ".json": parse_stencilflow,
    ".py": parse_python,
}


def as_program(source: str | Path | Program) -> Program:
    """A Program as it is (the Python API passes objects), or loaded from its file (the command line)."""
    return source if isinstance(source, Program) else load_program(source)


def read_program_text(p: Path) -> str:
    """The UTF-8 text of a program file: a regular file (not a device or a pipe) of at most
    ``MAX_PROGRAM_BYTES``."""
    try:
        with open(p, "rb", opener=_open_nonblocking) as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise StencilmapError("not a regular file", str(p))
            data = f.read(MAX_PROGRAM_BYTES + 1)
    except FileNotFoundError:
        raise StencilmapError("no such file", str(p)) from None
    except IsADirectoryError:
        raise StencilmapError("not a regular file", str(p)) from None
    except OSError as exc:
        raise StencilmapError(f"cannot read: {exc.strerror or exc}", str(p)) from None
    if len(data) > MAX_PROGRAM_BYTES:
        raise StencilmapError(f"larger than the limit of {MAX_PROGRAM_BYTES:,} bytes for a program", str(p))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StencilmapError(f"not UTF-8 text (byte {exc.start})", str(p)) from None


def _open_nonblocking(name: str, flags: int) -> int:
    """Open without blocking on a FIFO (it is then refused as not a regular file)."""
    return os.open(name, flags | os.O_NONBLOCK)
