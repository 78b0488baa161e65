"""The gpu backend's CUDA compiled by NVIDIA's own compiler where there is no GPU: NVRTC (the runtime
compiler CuPy runs on a device), through NVIDIA's Python bindings (``cuda-bindings``, the ``nvrtc`` extra),
which need no driver and no device.

``nvrtc_compile`` compiles a CUDA text for one architecture (PTX, then ptxas to SASS) with the options the
backend runs it with (``NVRTC_OPTIONS``) and reads ptxas's report of every kernel: registers a thread, stack
frame and spilled bytes. ``codegen --target cuda --verify`` runs it where no GPU is (the kernels compile as
they would on the device, and their resources are known, though nothing runs), and the tests run it on every
bundled program's kernels: CI checks the text against the real compiler, not only the emulator's g++
(``tests/backends/gpu_emulator.py``), which accepts what NVRTC may not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stencilmap.errors import StencilmapError

#: How the backend compiles its CUDA (CuPy's ``RawModule``, NVRTC), and so how it is checked here.
#: ``--fmad=false``: NVRTC contracts ``a * b + c`` into one fused multiply-add by default, which rounds once
#: where the reference (and the cpu backend, ``-ffp-contract=off``) rounds twice (1-ulp differences).
NVRTC_OPTIONS = ("--std=c++14", "--fmad=false")
#: The architecture checked where none is named: compute capability 9.0 (H100, H200).
CHECK_ARCH = "sm_90"


@dataclass(frozen=True, slots=True)
class KernelResources:
    """What ptxas reports of one kernel: registers a thread, and the local memory it spilled to."""

    name: str
    registers: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int


@dataclass(frozen=True, slots=True)
class NvrtcBuild:
    """One compilation: NVRTC's version, the architecture, each kernel's resources (ptxas's order) and the
    PTX NVRTC made on the way."""

    version: str
    arch: str
    kernels: tuple[KernelResources, ...]
    ptx: str

    def loop_loads(self) -> int:
        """Global loads in the PTX's busiest loop — the block that branches back to itself with the most
        ``ld.global``: a kernel's unrolled interior loop (its loads a point: this over the unroll)."""
        blocks = re.split(r"\n(\$L__BB\d+_\d+):", self.ptx)
        loads = [0]
        for label, body in zip(blocks[1::2], blocks[2::2], strict=True):
            back = re.findall(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+)", body)
            if back and back[-1] == label:
                loads.append(len(re.findall(r"\bld\.global\.", body)))
        return max(loads)

    def summary(self, file: str = "kernel.cu") -> str:
        """One line: ``NVRTC 12.9 compiled kernel.cu for sm_90 (registers a thread: st_0 40; no spills)``."""
        regs = ", ".join(f"{k.name} {k.registers}" for k in self.kernels)
        spilled = [k.name for k in self.kernels if k.spill_stores or k.spill_loads]
        spills = f"{', '.join(spilled)} spill to local memory" if spilled else "no spills"
        return f"NVRTC {self.version} compiled {file} for {self.arch} (registers a thread: {regs}; {spills})"


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise StencilmapError(f"NVRTC is not installed (pip install 'stencilmap[nvrtc]': {exc})") from None
    return nvrtc


def nvrtc_version() -> str:
    """NVRTC's version, ``12.9``; a ``StencilmapError`` saying why where NVRTC cannot be loaded."""
    nvrtc = _nvrtc()
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as exc:  # cuda-bindings raises its own errors where libnvrtc is missing
        raise StencilmapError(f"NVRTC could not be loaded ({exc})") from None
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise StencilmapError(f"NVRTC could not be loaded ({err.name})")
    return f"{major}.{minor}"


def supported_archs() -> tuple[str, ...]:
    """The architectures this NVRTC compiles for, oldest first (NVRTC 12.9: ``sm_50`` to ``sm_121``)."""
    nvrtc = _nvrtc()
    nvrtc_version()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise StencilmapError(f"NVRTC did not list its architectures ({err.name})")
    return tuple(f"sm_{a}" for a in archs)


def nvrtc_missing() -> str:
    """Why NVRTC cannot compile here (``""``: it can)."""
    try:
        nvrtc_version()
    except StencilmapError as exc:
        return exc.message
    return ""


def _text(prog: Any, size: Any, get: Any) -> str:
    """A log or the PTX: NVRTC fills a buffer of the size it gives (the bindings' documented use)."""
    _, n = size(prog)
    buf = b" " * int(n)
    get(prog, buf)
    return buf.rstrip(b"\0").decode("utf-8", "replace")


def nvrtc_compile(source: str, arch: str = CHECK_ARCH, file: str = "kernel.cu") -> NvrtcBuild:
    """Compile ``source`` for ``arch`` (``sm_90``) as the backend does; a ``StencilmapError`` naming
    ``file``, the line and NVRTC's first error where it does not compile."""
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise StencilmapError(f"unknown CUDA architecture '{arch}' (sm_<major><minor>, e.g. sm_90)")
    version, known = nvrtc_version(), supported_archs()
    if re.sub(r"[a-z]$", "", arch) not in known:  # sm_90a: sm_90's architecture-specific features
        raise StencilmapError(
            f"NVRTC {version} does not compile for {arch} (it knows {known[0]} to {known[-1]})"
        )
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode("utf-8"), file.encode("utf-8"), 0, [], [])
    options = [o.encode() for o in (*NVRTC_OPTIONS, f"--gpu-architecture={arch}", "--ptxas-options=-v")]
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        log = _text(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise StencilmapError(_first_error(log, file) or f"{file}: NVRTC failed ({err.name})")
        ptx = _text(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return NvrtcBuild(version, arch, parse_ptxas(log), ptx)


def _first_error(log: str, file: str) -> str:
    """NVRTC's first error as ``kernel.cu:12: error: ...`` (its own form is ``kernel.cu(12): error: ...``);
    an option NVRTC refuses has no line."""
    for line in log.splitlines():
        m = re.match(rf"{re.escape(file)}\((\d+)\): (?:catastrophic )?error: (.*)", line)
        if m:
            return f"{file}:{m.group(1)}: error: {m.group(2).strip()}"
        if "error" in line.lower():
            return f"{file}: {line.strip()}"
    return ""


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")


def parse_ptxas(log: str) -> tuple[KernelResources, ...]:
    """Every kernel ptxas's verbose report (``-v``) names, with its registers, stack and spills."""
    kernels: list[KernelResources] = []
    name, frame = "", (0, 0, 0)
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            name, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and name:
            frame = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and name:
            kernels.append(KernelResources(name, int(m.group(1)), *frame))
            name = ""
    return tuple(kernels)
