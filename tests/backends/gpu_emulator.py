"""A host emulation of a CUDA device for the gpu backend's tests (there is no GPU in CI): ``run_gpu`` drives it
through the same ``Device`` interface as CuPy's, so its launches, ping-pong buffers and masks, and every
generated kernel, run here and are compared with the reference.

The kernels' text (``cuda_source``) is compiled by g++ as C++ inside a namespace, against the stand-in
``cuda_runtime.h`` (``tests/codegen/standins/cuda``, marked as not NVIDIA's), whose ``SM_LAUNCH`` runs every
thread of every block in turn, in CUDA's order. Each kernel gets an ``extern "C"`` launcher whose arguments
are unpacked by the kernel's own parameter types (a template over its function type), so nothing here
restates a signature. Device arrays are NumPy arrays. It says nothing about speed, nor about what only a
GPU checks (NVRTC's dialect, races between threads: the kernels write disjoint points and never synchronise).
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from stencilmap.backends.gpu import Launch

STANDIN = Path(__file__).parent.parent / "codegen" / "standins" / "cuda"
GXX = shutil.which("g++")

LAUNCHER = """
#include <utility>
template <typename... A, std::size_t... I>
static void sm_emu(void (*k)(A...), const unsigned *at, void **args, std::index_sequence<I...>) {
  SM_LAUNCH(k, dim3(at[0], at[1], at[2]), dim3(at[3], at[4], at[5]), (*(A *)args[I])...);
}
template <typename... A> static void sm_emu(void (*k)(A...), const unsigned *at, void **args) {
  sm_emu(k, at, args, std::index_sequence_for<A...>());
}
"""

_BUILT: dict[str, ctypes.CDLL] = {}


def _library(source: str, names: list[str]) -> ctypes.CDLL:
    text = "\n".join(
        [
            "#include <math.h>",
            '#include "cuda_runtime.h"',
            "#undef INFINITY",
            "#undef NAN",
            "namespace sm {",
            source,
            "}",
            LAUNCHER,
            *[
                f'extern "C" void emu_{n}(const unsigned *at, void **args) {{ sm_emu(sm::{n}, at, args); }}'
                for n in names
            ],
            "",
        ]
    )
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    if key not in _BUILT:
        assert GXX is not None, "the gpu emulator needs g++"
        folder = Path(tempfile.mkdtemp(prefix="sm-gpu-emu-"))
        (folder / "k.cpp").write_text(text, encoding="utf-8")
        command = [GXX, "-std=c++14", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-DSM_STANDIN_RUN"]
        command += ["-w", f"-I{STANDIN}", "k.cpp", "-o", "k.so", "-lm"]
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-4000:]
        _BUILT[key] = ctypes.CDLL(str(folder / "k.so"))
    return _BUILT[key]


def _argument(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        assert a.flags.c_contiguous
        return ctypes.c_void_p(a.ctypes.data)
    if isinstance(a, np.int32):
        return ctypes.c_int32(int(a))
    assert isinstance(a, np.int64), type(a)
    return ctypes.c_int64(int(a))


class EmulatedDevice:
    """``backends.gpu.Device`` on the host: NumPy arrays, kernels compiled by g++ and run thread by thread.
    ``launches`` records every launch (for tests of the launch geometry)."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []

    def kernels(self, source: str, names: list[str]) -> list[Callable[[Launch, tuple[Any, ...]], None]]:
        lib = _library(source, names)

        def launcher(name: str) -> Callable[[Launch, tuple[Any, ...]], None]:
            fn = getattr(lib, f"emu_{name}")
            fn.restype = None

            def run(at: Launch, args: tuple[Any, ...]) -> None:
                self.launches.append(at)
                geometry = (ctypes.c_uint * 6)(*at.grid, *at.block)
                values = [_argument(a) for a in args]
                pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
                fn(geometry, pointers)

            return run

        return [launcher(n) for n in names]

    def asarray(self, a: Any) -> Any:
        return np.ascontiguousarray(a).copy()

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return _junk(shape, dtype)

    def ones(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return np.ones(shape, dtype)

    def asnumpy(self, a: Any) -> Any:
        return np.array(a, copy=True)

    def synchronize(self) -> None:
        return None


def _junk(shape: tuple[int, ...], dtype: Any) -> Any:
    """Uninitialised device memory, made visible: every byte 0x5A (a point never written stays wrong)."""
    return np.full(int(np.prod(shape)) * np.dtype(dtype).itemsize, 0x5A, np.uint8).view(dtype).reshape(shape)
