"""Reading user arrays and writing results atomically (temporary file + rename: nothing half-written)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.errors import StencilmapError

Array = npt.NDArray[Any]


def read_npy(name: str, path: str | Path) -> Array:
    """Load a ``.npy`` array given with ``--input name=path``."""
    p = Path(path)
    where = f"--input {name}={p}"
    if not p.is_file():
        raise StencilmapError("no such file", where)
    try:
        arr = np.load(p, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise StencilmapError(f"not a readable .npy array ({exc})", where) from None
    if not isinstance(arr, np.ndarray):
        raise StencilmapError("expected a .npy array, got an archive", where)
    return arr


def _publish(tmp: str | Path, final: Path) -> None:
    """Give the temporary file the permissions a plain ``open`` would, then rename it into place."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, final)


def write_arrays_atomically(directory: Path, arrays: Mapping[str, Array]) -> dict[str, Path]:
    """Write ``directory/<name>.npy`` for every array; all files appear together or none does."""
    directory.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, arr in arrays.items():
            fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".npy.tmp", dir=directory)
            staged.append((name, Path(tmp_name)))
            with os.fdopen(fd, "wb") as f:
                np.save(f, arr, allow_pickle=False)
    except BaseException:
        for _, tmp_path in staged:
            with contextlib.suppress(OSError):
                tmp_path.unlink()
        raise
    written: dict[str, Path] = {}
    for name, tmp in staged:
        final = directory / f"{name}.npy"
        _publish(tmp, final)
        written[name] = final
    return written


def write_text_atomically(path: Path, text: str) -> None:
    """Write a text file through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        _publish(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
