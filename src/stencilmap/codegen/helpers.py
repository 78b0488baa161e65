"""The arithmetic helpers generated code calls, one C function per (operation, type) actually used:
``scalar.helpers`` in the codegen dialects (``cpp`` is ``scalar``'s ``hls``)."""

from __future__ import annotations

from stencilmap.codegen.ctypes_ import Dialect, scalar_dialect
from stencilmap.scalar import helpers as _helpers


def helpers_text(needed: set[tuple[str, str]], dialect: Dialect) -> str:
    """The definitions of every helper in ``needed`` (and their dependencies)."""
    return _helpers.helpers_text(needed, scalar_dialect(dialect))
