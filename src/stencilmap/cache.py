"""Where compiled code is cached across processes: ``$STENCILMAP_CACHE_DIR``, else the user's cache folder."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """The folder for one kind of cached artefact (created on demand), e.g. ``cache_dir("cpu")``."""
    root = os.environ.get("STENCILMAP_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "stencilmap"
    path = base / kind
    path.mkdir(parents=True, exist_ok=True)
    return path
