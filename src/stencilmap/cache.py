"""The one directory where stencilmap keeps compiled code: ``$STENCILMAP_CACHE_DIR``, else the user's
cache directory (``$XDG_CACHE_HOME/stencilmap``, ``~/.cache/stencilmap``). Clearing it costs only
recompilation."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``<cache>/<parts...>``, created if missing."""
    root = os.environ.get("STENCILMAP_CACHE_DIR")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "stencilmap"
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
