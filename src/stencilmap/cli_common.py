"""What every command shares: one-line user errors (exit status 2) and option parsers."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from stencilmap.errors import StencilmapError

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(fn: F) -> F:
    """Turn a StencilmapError into one line on stderr and exit status 2 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StencilmapError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def parse_shape(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        dims = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected sizes like 64,128, got '{value}'") from None
    if not dims or any(d < 1 for d in dims):
        raise click.BadParameter(f"sizes must be positive integers, got '{value}'")
    return dims


def parse_inputs(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in value:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=FILE.npy, got '{item}'")
        out[name] = Path(path)
    return out
