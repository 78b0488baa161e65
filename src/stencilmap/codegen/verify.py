"""Running generated code here, without vendor tools: HLS C++ as a g++ C simulation, OpenCL kernels on
PoCL (``opencl_run``). Inputs go in as raw files, outputs come back as arrays for the caller to
compare with the reference.

``native`` builds the executables (cached in a folder the caller names, so a test session compiles each
design once; else built in a temporary folder, removed after the run) and runs them in a scratch folder,
with no network where ``unshare`` allows.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from stencilmap import native
from stencilmap.codegen.ctypes_ import storage
from stencilmap.codegen.registry import Generated, Port
from stencilmap.errors import StencilmapError, param

Array = npt.NDArray[Any]
#: g++ flags of the C simulation: IEEE arithmetic as written (no contraction into FMA, no fast math);
#: -O0 because compiling dominates (C simulations here run in milliseconds).
CSIM_FLAGS = ("-std=c++14", "-O0", "-ffp-contract=off", "-fno-fast-math", "-Wno-unknown-pragmas", "-w")
#: A C simulation that runs longer than this has gone wrong (designs here run in well under a second).
RUN_TIMEOUT_S = 300.0
#: Said once in the verdict of a run that could not be cut off from the network.
NOT_ISOLATED = "ran with the network: unshare --net is not available here"


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
    found = native.find_compiler(["g++"])
    if found is None:
        raise StencilmapError("g++ not found: C simulation of generated code needs it on PATH")
    return found


#: The headers ``--hls-include`` stands in for (the C simulation includes both).
HLS_HEADERS = ("ap_int.h", "hls_stream.h")


def check_hls_include(hls_include: Path | None) -> None:
    """``--hls-include``: a folder holding ``HLS_HEADERS`` (a user error, said before anything is written;
    not a failed verification after it)."""
    if hls_include is None:
        return
    if not hls_include.is_dir():
        raise StencilmapError(f"{param('hls_include')} {hls_include}: no such folder")
    missing = [h for h in HLS_HEADERS if not (hls_include / h).is_file()]
    if missing:
        raise StencilmapError(f"{param('hls_include')} {hls_include}: no {' or '.join(missing)} in it")


def csim_unit(gen: Generated, hls_include: Path | None) -> native.Unit:
    """The C simulation's build: the generated files, compiled with ``CSIM_FLAGS`` and the target's own,
    the include folders (``--hls-include`` in place of the stand-in headers)."""
    check_hls_include(hls_include)
    includes = tuple(
        str(hls_include.resolve()) if hls_include is not None and d in gen.standins else d
        for d in gen.include_dirs
    )
    return native.Unit("csim", gxx(), gen.files, gen.sources, (*CSIM_FLAGS, *gen.flags), (), includes)


def run_csim(
    gen: Generated,
    root: Path,
    data: Path,
    shape: tuple[int, ...],
    hls_include: Path | None = None,
    cache: Path | None = None,
) -> CsimResult:
    """Compile (or reuse, from ``cache``) and run the C simulation on ``data``; read the outputs back. It
    runs in a scratch folder with no network where ``native.network_isolation()``. ``root``, where the files
    were written, is not read: they are compiled from ``gen``, and keyed by their text."""
    del root
    unit = csim_unit(gen, hls_include)
    try:
        with (
            native.executable(unit, cache) as (exe, compile_s),
            native.scratch("stencilmap-csim-out-") as out,
        ):
            start = time.perf_counter()
            done = native.run([str(exe), str(data.resolve()), str(out)], timeout=RUN_TIMEOUT_S, isolate=True)
            run_s = time.perf_counter() - start
            if done.timed_out:
                return CsimResult(
                    "failed", {}, compile_s, RUN_TIMEOUT_S, f"C simulation ran past {RUN_TIMEOUT_S:.0f} s"
                )
            if done.returncode != 0:
                status: Literal["deadlock", "failed"] = "deadlock" if done.returncode == 4 else "failed"
                lines = done.stderr.strip().splitlines()
                if done.returncode < 0:  # killed: the signal first, then what it said last
                    return CsimResult(status, {}, compile_s, run_s, ": ".join([done.ending, *lines[-1:]]))
                lines = lines or [done.ending]
                tail = next((ln for ln in lines if ln.startswith(("deadlock", "error"))), lines[-1])
                return CsimResult(status, {}, compile_s, run_s, tail)
            note = "" if done.isolated else NOT_ISOLATED
            return CsimResult("done", read_outputs(out, gen.ports, shape), compile_s, run_s, note)
    except native.CompileError as exc:
        return CsimResult("failed", {}, 0.0, 0.0, f"g++ failed: {exc.first_error}")
