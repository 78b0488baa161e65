"""Build generated C with the system compiler into a shared library, cached by content hash, and load it.

The cache key covers the source, the flags, the compiler's version and the CPU's feature flags (the code is
built with ``-march=native``), so a cached library is only reused where it was built for. Libraries are
written to a temporary name and renamed into place, so concurrent processes never load half a file.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from stencilmap.cache import cache_dir
from stencilmap.errors import StencilmapError

#: -fwrapv: signed overflow wraps (the documented semantics); -ffp-contract=off: no fused multiply-add, so
#: float results equal NumPy's operation by operation; -fexcess-precision=standard: every _Float16 cast rounds;
#: -fno-math-errno / -fno-trapping-math change no value, they only let sqrt and conditionals vectorise.
FLAGS = (
    "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=gnu11", "-fwrapv", "-ffp-contract=off",
    "-fexcess-precision=standard", "-fno-math-errno", "-fno-trapping-math", "-fno-strict-aliasing",
)  # fmt: skip


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise StencilmapError("the cpu backend needs a C compiler with OpenMP (gcc); none was found")
    return cc


@functools.cache
def _toolchain_id(cc: str) -> str:
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return version + cpu


_LOADED: dict[str, ctypes.CDLL] = {}


def build(source: str) -> tuple[ctypes.CDLL, bool]:
    """The loaded library for ``source`` and whether it had to be compiled now (False: from the cache)."""
    cc = compiler()
    key = hashlib.sha256("\0".join([source, " ".join(FLAGS), _toolchain_id(cc)]).encode()).hexdigest()[:32]
    if key in _LOADED:
        return _LOADED[key], False
    folder = cache_dir("cpu")
    lib_path = folder / f"sm_{key}.so"
    compiled = False
    if not lib_path.is_file():
        _compile(cc, source, folder, lib_path)
        compiled = True
    lib = ctypes.CDLL(str(lib_path))
    _LOADED[key] = lib
    return lib, compiled


def _compile(cc: str, source: str, folder: Path, lib_path: Path) -> None:
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src = Path(tmp) / "kernel.c"
        src.write_text(source, encoding="utf-8")
        out = Path(tmp) / "kernel.so"
        proc = subprocess.run([cc, *FLAGS, str(src), "-o", str(out), "-lm"], capture_output=True, text=True)
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["no message"])[0]
            how = (
                f"was killed by signal {-proc.returncode}"
                if proc.returncode < 0
                else f"exited {proc.returncode}"
            )
            raise StencilmapError(f"the C compiler {cc} {how} on the generated code: {first}")  # issue 19 §9
        os.replace(out, lib_path)
