"""User-facing errors: one line that says where (file:line:col or a JSON path) and what."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Location:
    """Where in the user's input a problem lies: a file with line/column, or a JSON path."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    json_path: str | None = None

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file is not None:
            parts.append(self.file)
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        text = ":".join(parts)
        if self.json_path is not None:
            text = f"{text}: {self.json_path}" if text else self.json_path
        return text


class StencilmapError(Exception):
    """An error caused by the user's input; the CLI prints it as one line and exits with status 2."""

    def __init__(self, message: str, where: Location | str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        where = str(self.where) if self.where is not None else ""
        return f"{where}: {self.message}" if where else self.message


# ----------------------------------------------------------------------------- parameters in messages

#: How the front end running names its parameters: ``cli`` (``--unroll``) or ``api`` (``unroll``).
_NAMING: ContextVar[Literal["cli", "api"]] = ContextVar("stencilmap_naming", default="cli")


def param(name: str) -> str:
    """Parameter ``name`` (``"unroll"``, ``"clock_mhz"``) as the front end running names it: ``--unroll``,
    ``--clock-mhz`` on the command line; ``unroll``, ``clock_mhz`` in the Python API (``api_naming``)."""
    return name if _NAMING.get() == "api" else "--" + name.replace("_", "-")


def input_param(name: str, file: str | None = None) -> str:
    """Input ``name`` supplied by the user: ``--input v`` / ``--input v=FILE`` on the command line,
    ``inputs['v']`` / ``inputs={'v': array}`` in the Python API."""
    if _NAMING.get() == "api":
        return f"inputs['{name}']" if file is None or file != "FILE.npy" else f"inputs={{'{name}': array}}"
    return f"--input {name}" if file is None else f"--input {name}={file}"


@contextmanager
def api_naming() -> Iterator[None]:
    """Name parameters as the Python API does in the messages raised within (``param``)."""
    token = _NAMING.set("api")
    try:
        yield
    finally:
        _NAMING.reset(token)
