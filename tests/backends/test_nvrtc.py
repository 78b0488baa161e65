"""The gpu backend's CUDA through NVIDIA's own compiler (NVRTC, ``backends.nvrtc``), with no GPU: every bundled
program's kernels compile for sm_90 as CuPy compiles them on a device, keep every value in registers (no
spills), read their inputs through the read-only path (``ld.global.nc``: the ``const __restrict__``
parameters) and divide no 64-bit integers (the flattened-index divisions of the first design); random
programs compile too. The emulator (``test_gpu.py``) checks what the kernels compute, this what NVRTC accepts.
CI installs NVRTC (the ``nvrtc`` extra); without it these tests skip, saying so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from stencilmap.backends.cexpr import Unsupported
from stencilmap.backends.gpu import Tuning, cuda_source
from stencilmap.backends.nvrtc import (
    KernelResources,
    NvrtcBuild,
    nvrtc_compile,
    nvrtc_missing,
    parse_ptxas,
)
from stencilmap.backends.plan import make_plan
from stencilmap.errors import StencilmapError
from stencilmap.program import Program
from tests.backends.common import bundled_params, load_bound
from tests.conftest import EXAMPLES
from tests.strategies import programs

MISSING = nvrtc_missing()
needs_nvrtc = pytest.mark.skipif(bool(MISSING), reason=MISSING or "NVRTC is here")


def _source(p: Program, tuning: Tuning | None = None) -> str | None:
    try:
        return cuda_source(make_plan(p), tuning or Tuning())
    except Unsupported as exc:
        assert "float16" in str(exc)
        return None


@needs_nvrtc
@pytest.mark.parametrize("rotate", [False, True], ids=["loads", "rotated"])
@pytest.mark.parametrize("path", bundled_params())
def test_every_bundled_program_compiles_for_sm_90_in_registers(path: Path, rotate: bool) -> None:
    p = load_bound(path)
    source = _source(p, Tuning(rotate=rotate))
    if source is None:
        return
    build = nvrtc_compile(source)
    assert sorted(k.name for k in build.kernels) == sorted(f"st_{k}" for k in range(len(p.stencils)))
    assert all(k.spill_stores == k.spill_loads == 0 for k in build.kernels), build.summary()
    loads = re.findall(r"\bld\.global\.(\w+)", build.ptx)
    assert loads and set(loads) == {"nc"}  # every input through the read-only (non-coherent) path
    assert not re.search(r"\b(div|rem)\.[su]64\b", build.ptx)


@needs_nvrtc
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_compile(program: Program) -> None:
    source = _source(program)
    if source is not None:
        assert len(nvrtc_compile(source).kernels) == len(program.stencils)


@needs_nvrtc
def test_64_bit_coordinates_compile_for_an_older_architecture() -> None:
    from dataclasses import replace

    p = replace(load_bound(EXAMPLES / "heat3d.json"), shape=(1024, 1024, 1024))
    source = _source(p)
    assert source is not None and "typedef long long sm_i;" in source
    build = nvrtc_compile(source, "sm_70")
    assert build.arch == "sm_70" and build.kernels[0].registers > 0


@needs_nvrtc
def test_an_error_names_the_file_and_line() -> None:
    with pytest.raises(StencilmapError) as err:
        nvrtc_compile('extern "C" __global__ void f(int *o) {\n  o[0] = y;\n}\n')
    assert err.value.message == 'kernel.cu:2: error: identifier "y" is undefined'
    with pytest.raises(StencilmapError, match="unknown CUDA architecture 'sm90'"):
        nvrtc_compile("", "sm90")
    with pytest.raises(
        StencilmapError, match=r"NVRTC 12\.\d+ does not compile for sm_20 \(it knows sm_50 to "
    ):
        nvrtc_compile("", "sm_20")  # a form NVRTC reads, an architecture it no longer knows


PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'st_0' for 'sm_90'
ptxas info    : Function properties for st_0
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers
ptxas info    : Compiling entry function 'st_1' for 'sm_90'
ptxas info    : Function properties for st_1
ptxas         .     16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers
ptxas info    : Compile time = 19.332 ms
"""


def test_ptxas_report_is_read_kernel_by_kernel() -> None:
    kernels = parse_ptxas(PTXAS_LOG)
    assert kernels == (KernelResources("st_0", 40, 0, 0, 0), KernelResources("st_1", 255, 16, 12, 8))
    summary = NvrtcBuild("12.9", "sm_90", kernels, "").summary()
    assert summary == (
        "NVRTC 12.9 compiled kernel.cu for sm_90 (registers a thread: st_0 40, st_1 255; "
        "st_1 spill to local memory)"
    )


@needs_nvrtc
def test_a_shallower_unroll_holds_fewer_registers_on_a_large_window() -> None:
    from tests.conftest import CORPUS_SODA

    plan = make_plan(load_bound(next(p for p in CORPUS_SODA if p.name == "contrast.soda")))
    deep, shallow = (nvrtc_compile(cuda_source(plan, Tuning(u))).kernels[0].registers for u in (4, 2))
    assert shallow < deep


@needs_nvrtc
@pytest.mark.parametrize(
    ("name", "before", "after"), [("heat3d.json", 26, 20), ("jacobi2d_9pt.soda", 18, 12)]
)
def test_rotation_takes_loads_out_of_the_interior_loop(name: str, before: int, after: int) -> None:
    """NVRTC already shares some rows between the four unrolled points; the register queue leaves one load
    a column a point: heat3d 7-point 6.5 → 5 a point, the 9-point 2-D box 4.5 → 3."""
    plan = make_plan(load_bound(EXAMPLES / name))
    loads = [nvrtc_compile(cuda_source(plan, Tuning(rotate=r))).loop_loads() for r in (False, True)]
    assert loads == [before, after]
