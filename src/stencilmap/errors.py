"""User-facing errors: one line that says where (file:line:col or a JSON path) and what."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal


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


# ------------------------------------------------------------------------------ schema (pydantic) errors

#: pydantic's bound errors, as stencilmap words them: ``resources.mac: must be at most 1,048,576, got 10**12``
_BOUNDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "at most"),
}


#: pydantic's type errors: ``iterate: must be an integer, got '4'``
_TYPES = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
}


def schema_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error's location as a JSON path (``inputs.a.dims[2]``), pydantic's union and validator tags
    (``function-after[...]``) left out."""
    text = ""
    for p in loc:
        if isinstance(p, str) and ("[" in p or p.startswith("function-")):
            continue
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


def schema_message(err: Mapping[str, Any]) -> str:
    """A pydantic error of a user's JSON file (program, device) in one line, worded as stencilmap's own:
    ``unknown field``, ``required field is missing``, ``must be at most N, got X``, ``must be an integer, got
    X``, ``must hold at least N items, got M``; any other in pydantic's words."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind in _BOUNDS and ctx:
        key, words = _BOUNDS[kind]
        return f"must be {words} {_figure(ctx[key])}, got {_figure(err['input'])}"
    if kind in _TYPES:
        return f"must be {_TYPES[kind]}, got {ascii(err.get('input'))[:40]}"
    if kind in ("too_short", "too_long") and "actual_length" in ctx:
        words, n = ("at least", ctx["min_length"]) if kind == "too_short" else ("at most", ctx["max_length"])
        return f"must hold {words} {n:,} item{'s' if n != 1 else ''}, got {ctx['actual_length']:,}"
    text = str(err["msg"])
    return text[:1].lower() + text[1:]


def _figure(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ascii(value)[:40]
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    return f"{value:g}"
