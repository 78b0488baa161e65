"""Running a generated single-kernel OpenCL program here, on PoCL through pyopencl (imported only here and
in ``opencl_child``, the process the kernel runs in).

A missing pyopencl or OpenCL runtime is a user error (exit 2) with what to install.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from stencilmap import native
from stencilmap.codegen import opencl_child
from stencilmap.codegen.ctypes_ import storage
from stencilmap.codegen.registry import Generated
from stencilmap.codegen.verify import NOT_ISOLATED, RUN_TIMEOUT_S, Array, CsimResult
from stencilmap.errors import StencilmapError

INSTALL = "install PoCL (apt-get install pocl-opencl-icd ocl-icd-libopencl1, or `make opencl`)"


def cpu_device() -> Any:
    """PoCL's CPU device (any CPU OpenCL device when PoCL is absent)."""
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        raise StencilmapError(
            f"pyopencl is not installed: running OpenCL here needs it and PoCL ({INSTALL})"
        ) from None
    device = opencl_child.cpu_device()
    if device is None:
        raise StencilmapError(f"no OpenCL CPU runtime found: {INSTALL}")
    return device


def pocl_available() -> bool:
    try:
        cpu_device()
    except StencilmapError:
        return False
    return True


def run_pocl(gen: Generated, root: Path, data: Path, shape: tuple[int, ...]) -> CsimResult:
    """Build ``kernel.cl`` for the CPU device and run the kernel as one work-item, in a child process
    (``opencl_child``: a crash there is a failed run, "killed by SIGSEGV", not a dead stencilmap) in a
    scratch folder with no network where ``unshare`` allows; read the outputs back."""
    cpu_device()  # first: a missing pyopencl or runtime is a one-line user error
    with native.scratch("stencilmap-pocl-") as out:
        job = {
            "source": str((root / gen.sources[0]).resolve()),
            "include": str(root.resolve()),
            "top": gen.top,
            "ports": [[p.field, p.direction, storage(p.dtype), p.elements] for p in gen.ports],
            "data": str(data.resolve()),
            "out": str(out),
        }
        done = native.run(_child_command(), stdin=json.dumps(job), timeout=RUN_TIMEOUT_S, isolate=True)
        if done.timed_out:
            return CsimResult(
                "failed", {}, 0.0, RUN_TIMEOUT_S, f"the OpenCL run ran past {RUN_TIMEOUT_S:.0f} s"
            )
        if done.returncode != 0:
            last = done.stderr.strip().splitlines()[-1:]
            return CsimResult("failed", {}, 0.0, 0.0, ": ".join([done.ending, *last]))
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        compile_s, run_s = float(answer["compile_seconds"]), float(answer["run_seconds"])
        if answer["status"] != "done":
            return CsimResult("failed", {}, compile_s, run_s, str(answer["message"]))
        note = "" if done.isolated else NOT_ISOLATED
        return CsimResult("done", _outputs(gen, out, shape), compile_s, run_s, note)


def _child_command() -> list[str]:
    """This Python running ``opencl_child.py`` as a script (the package is not loaded there)."""
    code = f"import runpy; runpy.run_path({opencl_child.__file__!r}, run_name='__main__')"
    return [sys.executable, "-c", code]


def _outputs(gen: Generated, folder: Path, shape: tuple[int, ...]) -> dict[str, Array]:
    result = {}
    for p in gen.ports:
        if p.direction == "out":
            arr = np.fromfile(folder / f"{p.field}.bin", dtype=np.dtype(storage(p.dtype))).reshape(shape)
            result[p.field] = arr.astype(bool) if p.dtype == "bool" else arr.astype(p.dtype)
    return result
