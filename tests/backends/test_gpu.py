"""The GPU backend: its CUDA source is generated for every bundled program it accepts (checked here,
no GPU needed); runs are compared with the reference only where CuPy and a CUDA device exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.backends.cexpr import Unsupported
from stencilmap.backends.gpu import cuda_source
from stencilmap.backends.plan import make_plan
from stencilmap.backends.reference import run_reference
from stencilmap.backends.registry import HostOptions, execute
from tests.backends.common import assert_matches, bundled_params, inputs_for, load_bound


@pytest.mark.parametrize("path", bundled_params())
def test_cuda_source_has_one_kernel_per_stencil(path: Path) -> None:
    p = load_bound(path)
    try:
        src = cuda_source(make_plan(p))
    except Unsupported as exc:
        assert "float16" in str(exc)
        return
    for k in range(len(p.stencils)):
        assert f'extern "C" __global__ void st_{k}(' in src
    assert "_Float16" not in src and "#include" not in src  # NVRTC compiles it without system headers


def _gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


@pytest.mark.skipif(not _gpu_available(), reason="no CuPy or no CUDA device")
@pytest.mark.parametrize("path", bundled_params())
def test_every_bundled_program_equals_the_reference_on_the_gpu(path: Path) -> None:
    p = load_bound(path)
    values = inputs_for(p)
    got = execute(p, values, HostOptions("gpu")).result
    assert_matches(p, run_reference(p, values), got)
