"""Running generated code here, without vendor tools: HLS C++ as a g++ C simulation, OpenCL kernels on
PoCL (``opencl_run``). Inputs go in as raw files, outputs come back as arrays for the caller to
compare with the reference.

Executables are cached by the SHA-256 of everything compiled (sources, headers, flags), so a test
session compiles each design once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from stencilmap.codegen.ctypes_ import storage
from stencilmap.codegen.registry import Generated, Port
from stencilmap.errors import StencilmapError

Array = npt.NDArray[Any]
#: g++ flags of the C simulation: IEEE arithmetic as written (no contraction into FMA, no fast math);
#: -O0 because compiling dominates (C simulations here run in milliseconds).
CSIM_FLAGS = ("-std=c++14", "-O0", "-ffp-contract=off", "-fno-fast-math", "-Wno-unknown-pragmas", "-w")
#: A C simulation that runs longer than this has gone wrong (designs here run in well under a second).
RUN_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class CsimResult:
    """Outputs of one run (by field, in the program's shape) and how it went."""

    status: Literal["done", "deadlock", "failed"]
    outputs: Mapping[str, Array]
    compile_seconds: float
    run_seconds: float
    message: str = ""


def write_data(folder: Path, ports: tuple[Port, ...], values: Mapping[str, Array]) -> None:
    """``folder/<field>.bin`` for every input port: raw little-endian C order (bool as one byte)."""
    folder.mkdir(parents=True, exist_ok=True)
    for p in ports:
        if p.direction == "in":
            arr = np.ascontiguousarray(np.asarray(values[p.field]).astype(storage(p.dtype)))
            arr.astype(arr.dtype.newbyteorder("<"), copy=False).tofile(folder / f"{p.field}.bin")


def read_outputs(folder: Path, ports: tuple[Port, ...], shape: tuple[int, ...]) -> dict[str, Array]:
    out: dict[str, Array] = {}
    for p in ports:
        if p.direction != "out":
            continue
        raw = np.fromfile(folder / f"{p.field}.bin", dtype=np.dtype(storage(p.dtype)).newbyteorder("<"))
        arr = raw.reshape(shape)
        out[p.field] = arr.astype(bool) if p.dtype == "bool" else arr.astype(p.dtype)
    return out


def gxx() -> str:
    found = shutil.which("g++")
    if found is None:
        raise StencilmapError("g++ not found: C simulation of generated code needs it on PATH")
    return found


def _include_dirs(gen: Generated, root: Path, hls_include: Path | None) -> list[Path]:
    dirs = []
    for d in gen.include_dirs:
        if hls_include is not None and d in gen.standins:
            dirs.append(hls_include)
        else:
            dirs.append(root / d)
    return dirs


def _fingerprint(gen: Generated, includes: list[Path], extra: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for name, text in gen.files:
        h.update(name.encode())
        h.update(text.encode())
    for d in includes:
        h.update(str(d.resolve()).encode())
    h.update(" ".join(CSIM_FLAGS + extra).encode())
    return h.hexdigest()[:24]


def compile_csim(
    gen: Generated, root: Path, hls_include: Path | None, cache: Path | None
) -> tuple[Path, float]:
    """The C-simulation executable of the files under ``root`` (cached), and the seconds compiling took."""
    if hls_include is not None and not hls_include.is_dir():
        raise StencilmapError(f"--hls-include {hls_include}: no such folder")
    compiler = gxx()
    includes = _include_dirs(gen, root, hls_include)
    key = _fingerprint(gen, includes, gen.flags)
    folder = cache if cache is not None else Path(tempfile.mkdtemp(prefix="stencilmap-csim-"))
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / f"csim-{key}"
    if exe.exists():
        return exe, 0.0
    start = time.perf_counter()
    tmp = folder / f".csim-{key}.{os.getpid()}.tmp"
    cmd = [
        compiler,
        *CSIM_FLAGS,
        *gen.flags,
        *(f"-I{d}" for d in includes),
        *(str(root / s) for s in gen.sources),
        "-o",
        str(tmp),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        lines = [ln for ln in done.stderr.splitlines() if "error" in ln] or done.stderr.splitlines() or ["?"]
        raise CompileError(lines[0].strip())
    os.replace(tmp, exe)
    return exe, time.perf_counter() - start


class CompileError(Exception):
    """The generated code did not compile (a bug of the emitter or of the headers given)."""


def run_csim(
    gen: Generated,
    root: Path,
    data: Path,
    shape: tuple[int, ...],
    hls_include: Path | None = None,
    cache: Path | None = None,
) -> CsimResult:
    """Compile (or reuse) and run the C simulation on ``data``; read the outputs back. Without a ``cache``
    the executable lives in a temporary folder removed afterwards (issue 19: no temporaries left behind)."""
    if cache is None:
        with tempfile.TemporaryDirectory(prefix="stencilmap-csim-") as folder:
            return run_csim(gen, root, data, shape, hls_include, Path(folder))
    try:
        exe, compile_s = compile_csim(gen, root, hls_include, cache)
    except CompileError as exc:
        return CsimResult("failed", {}, 0.0, 0.0, f"g++ failed: {exc}")
    with tempfile.TemporaryDirectory(prefix="stencilmap-csim-out-") as out:
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [str(exe), str(data), out], capture_output=True, text=True, timeout=RUN_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return CsimResult(
                "failed", {}, compile_s, RUN_TIMEOUT_S, f"C simulation ran past {RUN_TIMEOUT_S:.0f} s"
            )
        run_s = time.perf_counter() - start
        if done.returncode != 0:
            status: Literal["deadlock", "failed"] = "deadlock" if done.returncode == 4 else "failed"
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            tail = next((ln for ln in lines if ln.startswith(("deadlock", "error"))), lines[-1])
            return CsimResult(status, {}, compile_s, run_s, tail)
        return CsimResult("done", read_outputs(Path(out), gen.ports, shape), compile_s, run_s)
