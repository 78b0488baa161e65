"""Static checks of the vendors' rules on generated text (issue 21), used by ``test_vendor_rules``.

Each returns the violations it finds (an empty list: the text obeys the rule):

* ``c_linkage``: the Vitis top function is declared and defined ``extern "C"`` (UG1393, C/C++ Kernels);
* ``output_port_reads``: in an HLS function whose memory port is writable (``ap_uint<B>* mem``, no
  ``const``), every use of ``mem`` is a store ``mem[…] = …`` — the port is never read, nor passed on;
* ``hls_stream_ends`` / ``opencl_channel_ends``: every stream has one writer and one reader;
* ``rolled_loops``: in OpenCL preprocessed as ``aoc`` sees it (``INTELFPGA_CL``), every loop is
  ``#pragma unroll`` but the main pipeline loops: a loop over beats (a ``long`` counter) and the tile
  loop directly around one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

_FUNCTION = re.compile(r"^(?:static )?void (\w+)\(([^)]*)\) \{$")
_STREAM = re.compile(r"hls::stream<.*?> (c\d+)\(")
_CALL = re.compile(r"^\s*(\w+)\(([^)]*)\);$")


def functions(text: str) -> dict[str, tuple[str, list[str]]]:
    """Top-level functions of generated C++: name → (parameter list, body lines)."""
    out: dict[str, tuple[str, list[str]]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FUNCTION.match(lines[i].removeprefix('extern "C" '))
        if m is None:
            i += 1
            continue
        body = []
        i += 1
        while i < len(lines) and lines[i] != "}":
            body.append(lines[i])
            i += 1
        out[m.group(1)] = (m.group(2), body)
    return out


def c_linkage(header: str, kernel: str, top: str) -> list[str]:
    found = []
    if not re.search(rf'^extern "C" void {top}\(', header, re.M):
        found.append(f'kernel.h: {top} is not declared extern "C"')
    if not re.search(rf'^extern "C" void {top}\(', kernel, re.M):
        found.append(f'kernel.cpp: {top} is not defined extern "C"')
    return found


def output_port_reads(kernel: str) -> list[str]:
    found = []
    for name, (params, body) in functions(kernel).items():
        if not re.search(r"(?<!const )ap_uint<\d+>\* mem\b", params):
            continue
        for line in body:
            code = line.split("//")[0]
            for m in re.finditer(r"\bmem\b", code):
                if not re.match(r"mem\[[^\]]*\]\s*=(?!=)", code[m.start() :]):
                    found.append(f"{name}: the output port is read or passed on: {line.strip()}")
    return found


def hls_stream_ends(kernel: str, top: str) -> list[str]:
    """Every ``hls::stream`` of the top function: one module writes it (an ``out`` parameter) and one
    reads it (an ``in`` parameter)."""
    funcs = functions(kernel)
    if top not in funcs:
        return [f"no top function {top}"]
    _, body = funcs[top]
    streams = {m.group(1) for line in body for m in [_STREAM.search(line)] if m}
    ends: dict[str, list[str]] = {s: [] for s in streams}
    for line in body:
        call = _CALL.match(line)
        if call is None or call.group(1) not in funcs:
            continue
        params = [a or b for a, b in re.findall(r"&\s*(\w+)|\*\s*(\w+)", funcs[call.group(1)][0])]
        args = [a.strip() for a in call.group(2).split(",")]
        for param, arg in zip(params, args, strict=False):
            if arg in ends:
                ends[arg].append("in" if param.startswith("in") else "out")
    found = []
    for s, roles in sorted(ends.items()):
        if sorted(roles) != ["in", "out"]:
            found.append(f"stream {s}: {roles.count('out')} writer(s), {roles.count('in')} reader(s)")
    return found


def opencl_channel_ends(kernel: str) -> list[str]:
    """Every channel ``ch_N``: written in one kernel, read in another, each in one place."""
    kernels = re.split(r"^__kernel ", kernel, flags=re.M)[1:]
    writes: dict[str, list[int]] = {}
    reads: dict[str, list[int]] = {}
    for k, text in enumerate(kernels):
        for m in re.finditer(r"write_channel_intel\((ch_\d+)", text):
            writes.setdefault(m.group(1), []).append(k)
        for m in re.finditer(r"read_channel_intel\((ch_\d+)", text):
            reads.setdefault(m.group(1), []).append(k)
    declared = set(re.findall(r"^channel \S+ (ch_\d+)", kernel, re.M))
    found = []
    for ch in sorted(declared | set(writes) | set(reads)):
        w, r = writes.get(ch, []), reads.get(ch, [])
        if len(w) != 1 or len(r) != 1 or w == r:
            found.append(f"{ch}: written in kernels {w}, read in kernels {r}")
    return found


def preprocess_for_aoc(folder: Path, name: str = "kernel.cl") -> str:
    """``name`` as Intel's offline compiler sees it (``INTELFPGA_CL`` defined), comments gone."""
    cc = shutil.which("gcc") or shutil.which("cc")
    assert cc is not None, "a C preprocessor is needed"
    done = subprocess.run(
        [cc, "-E", "-P", "-x", "c", "-DINTELFPGA_CL", f"-I{folder}", str(folder / name)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


_FOR = re.compile(r"(?:\w+:\s*)?for \((\w+) (\w+) = [^;]*; \2 < [^;]*;")


def rolled_loops(preprocessed: str) -> list[str]:
    """Loops without ``#pragma unroll`` other than the main ones (``long`` beat loops, the tile loop
    directly around one)."""
    lines = [ln.strip() for ln in preprocessed.splitlines() if ln.strip()]
    found = []
    for n, line in enumerate(lines):
        m = _FOR.search(line)
        if m is None or "for (" not in line:
            continue
        if n > 0 and lines[n - 1] == "#pragma unroll":
            continue
        if m.group(1) == "long":
            continue  # a loop over beats: the pipeline loop
        following = next((ln for ln in lines[n + 1 :] if "for (" in ln), "")
        inner = _FOR.search(following)
        if m.group(2) == "t" and inner is not None and inner.group(1) == "long" and lines[n + 1] == following:
            continue  # the tile loop around the beat loop
        found.append(f"rolled loop: {line}")
    return found
