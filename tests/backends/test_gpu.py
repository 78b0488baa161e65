"""The GPU backend. Without a GPU (CI): its CUDA source for every bundled program, and ``run_gpu`` over a
host emulation of the device (``gpu_emulator``: g++ runs the very kernels, thread by thread) compared with
the reference on every bundled program, on random programs, and on shapes and launches that exercise the
partial blocks, chunks and strided rows of ``launch``. Where CuPy and a CUDA device exist, the real runs too."""

from __future__ import annotations

from dataclasses import replace
from math import prod
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.backends import gpu
from stencilmap.backends.cexpr import Unsupported
from stencilmap.backends.gpu import GpuRun, Tuning, cuda_source, index_type, launch, run_gpu
from stencilmap.backends.plan import make_plan
from stencilmap.backends.reference import run_reference
from stencilmap.backends.registry import HostOptions, execute
from stencilmap.errors import StencilmapError
from stencilmap.program import Program
from stencilmap.program.data import bind_shape
from tests.backends.common import assert_matches, bundled_params, inputs_for, load_bound
from tests.backends.gpu_emulator import GXX, EmulatedDevice
from tests.conftest import EXAMPLES
from tests.strategies import programs

needs_gxx = pytest.mark.skipif(GXX is None, reason="the gpu emulator needs g++")


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


@pytest.mark.skipif(not _gpu_available(), reason="no CuPy or no CUDA device")
@pytest.mark.parametrize("chunk", [3, 64])
@pytest.mark.parametrize("name", ["heat3d.json", "jacobi2d.soda", "dag_listing1.json"])
def test_marching_threads_equal_the_reference_on_the_gpu(name: str, chunk: int) -> None:
    """Small grids march one point a thread by default: chunks of several points, forced, on the device."""
    from stencilmap.program import load_program

    p = bind_shape(load_program(EXAMPLES / name), {}, {"jacobi2d.soda": (61, 70)}.get(name, (9, 19, 40)))
    values = inputs_for(p)
    assert_matches(p, run_reference(p, values), run_gpu(p, values, chunk=chunk).result)


def _emulated(p: Program, chunk: int | None = None, tuning: Tuning | None = None) -> None:
    values = inputs_for(p)
    try:
        got = run_gpu(p, values, EmulatedDevice(), chunk, tuning or Tuning()).result
    except StencilmapError as exc:
        assert "float16" in str(exc)
        return
    assert_matches(p, run_reference(p, values), got)


@needs_gxx
@pytest.mark.parametrize("rotate", [False, True], ids=["loads", "rotated"])
@pytest.mark.parametrize("path", bundled_params())
def test_every_bundled_program_equals_the_reference_on_the_emulated_gpu(path: Path, rotate: bool) -> None:
    """Also with ``Tuning.rotate`` (columns along the marched axis passed on in registers; a chunk of 5 so
    that a thread's interior loop runs several points even on the small grids)."""
    _emulated(load_bound(path), 5 if rotate else None, Tuning(rotate=rotate))


@needs_gxx
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.sampled_from([None, 1, 2, 5]), st.booleans())
def test_random_programs_equal_the_reference_on_the_emulated_gpu(
    program: Program, chunk: int | None, rotate: bool
) -> None:
    _emulated(program, chunk, Tuning(rotate=rotate))


@needs_gxx
@pytest.mark.parametrize("grid_yz", [gpu.GRID_YZ, 2])
@pytest.mark.parametrize("chunk", [None, 1, 3, 64])
@pytest.mark.parametrize(
    ("name", "shape"),
    [("heat3d.json", (5, 19, 37)), ("jacobi2d.soda", (29, 33)), ("dag_listing1.json", (7, 9, 40))],
)
def test_partial_blocks_chunks_and_strided_rows(
    name: str, shape: tuple[int, ...], chunk: int | None, grid_yz: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Odd extents (partial blocks, a last chunk cut short), and a grid limit of 2 (the kernels' y loop
    strides; the chunk grows to fit the z limit) give the reference's outputs."""
    from stencilmap.program import load_program

    monkeypatch.setattr(gpu, "GRID_YZ", grid_yz)
    _emulated(bind_shape(load_program(EXAMPLES / name), {}, shape), chunk)


@given(st.lists(st.integers(1, 3000), min_size=1, max_size=3), st.sampled_from([None, 1, 7, 100]))
def test_a_launch_covers_the_grid_within_cuda_limits(shape: list[int], chunk: int | None) -> None:
    at = launch(tuple(shape), chunk)
    assert at.block[0] * at.grid[0] >= shape[-1] and prod(at.block) <= 1024
    assert max(at.grid[1:]) <= gpu.GRID_YZ and at.chunk >= 1
    if len(shape) == 1:
        return
    n0 = shape[0]
    marchers = at.grid[1] * at.block[1] if len(shape) == 2 else at.grid[2]  # threads (or blocks) along axis 0
    per = at.block[1] if len(shape) == 2 else 1
    assert marchers * at.chunk >= n0 > (marchers - per) * at.chunk  # no block without points
    if len(shape) == 3:
        assert at.grid[1] * at.block[1] >= shape[1] or at.grid[1] == gpu.GRID_YZ  # else the y loop strides
    fits = -(-n0 // (gpu.GRID_YZ * per))  # the fewest points a thread so that the grid fits
    assert at.chunk <= n0 and (chunk is None or at.chunk == max(min(chunk, n0), fits))


def test_big_grids_get_a_few_thousand_blocks_of_marching_threads() -> None:
    at = launch((512, 512, 512))
    assert at.block == (32, 8, 1) and 4096 <= prod(at.grid) <= 16384 and at.chunk > 1
    assert launch((32, 32, 32)).chunk == 1  # a small grid: one point a thread, every SM busy


def test_coordinates_are_32_bit_where_every_field_fits() -> None:
    p = load_bound(EXAMPLES / "jacobi3d.soda")
    assert index_type(make_plan(p)) == "int" and "typedef int sm_i;" in cuda_source(make_plan(p))
    big = replace(p, shape=(1024, 1024, 1024))
    assert index_type(make_plan(big)) == "long long"


@needs_gxx
def test_one_launch_a_stencil_a_step() -> None:
    p = load_bound(EXAMPLES / "fdtd2d_iterate.json")
    dev = EmulatedDevice()
    run_gpu(p, inputs_for(p), dev)
    assert len(dev.launches) == p.iterate * len(p.stencils)
    assert {at.grid for at in dev.launches} == {launch(tuple(int(n or 0) for n in p.shape)).grid}


@needs_gxx
@pytest.mark.parametrize("name", ["fdtd2d_iterate.json", "jacobi2d.soda"])
def test_a_loaded_run_launched_again_computes_the_same_outputs(name: str) -> None:
    """The benchmark times ``GpuRun.launch`` back to back: every launch starts from the uploaded inputs (the
    iterated fields' ping-pong buffers never overwrite them), so each computes the reference's outputs."""
    p = load_bound(EXAMPLES / name)
    values = inputs_for(p)
    ref, run = run_reference(p, values), GpuRun(p, values, EmulatedDevice(), 3)
    for _ in range(3):
        run.launch()
        assert_matches(p, ref, run.result())
    assert len(run.device.launches) == 3 * p.iterate * len(p.stencils)  # type: ignore[attr-defined]


@needs_gxx
def test_64_bit_coordinates_give_the_same_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grids of 2³⁰ points or more take 64-bit coordinates (and extents passed as int64): the same kernels."""
    monkeypatch.setattr(gpu, "index_type", lambda plan: "long long")
    p = load_bound(EXAMPLES / "heat3d.json")
    assert "typedef long long sm_i;" in cuda_source(make_plan(p))
    _emulated(p, 3)


@needs_gxx
@pytest.mark.parametrize("rotate", [False, True])
def test_the_tuning_is_a_choice_of_text_not_of_values(rotate: bool) -> None:
    p = load_bound(EXAMPLES / "heat3d.json")
    plan = make_plan(p)
    assert "#pragma unroll 4" in cuda_source(plan) and "#pragma unroll 2" in cuda_source(plan, Tuning(2))
    with pytest.raises(StencilmapError, match="unroll must be at least 1"):
        Tuning(0)
    _emulated(p, 3, Tuning(1, rotate))


def test_rotation_loads_each_column_once_a_point() -> None:
    """heat3d's 7-point star: the (x, y) column's three reads along the marched axis come from registers
    but the leading one; the four others are loads as before."""
    plan = make_plan(load_bound(EXAMPLES / "heat3d.json"))
    body = cuda_source(plan, Tuning(rotate=True)).split("#pragma unroll 4")[1].split("for (int part")[0]
    assert body.count("f0_v[") == 5 and "r0 = q0_0;" in body and "r6 = q0_1;" in body  # offsets -1, 0
    assert body.endswith("q0_0 = q0_1;\n      q0_1 = r1;\n    }\n    ")  # r1: offset +1, the leading read


def test_a_column_with_a_gap_holds_the_gap_in_the_queue() -> None:
    """StencilFlow's 3-D Jacobi reads a(-1) and a(+1) without the centre: the queue holds -1 and the gap 0
    (loaded once, before the loop), so a point loads +1 alone."""
    from tests.conftest import CORPUS_STENCILFLOW

    path = next(p for p in CORPUS_STENCILFLOW if p.name == "jacobi3d_32x32x32.json")
    body = cuda_source(make_plan(load_bound(path)), Tuning(rotate=True)).split("#pragma unroll 4")[1]
    body = body.split("for (int part")[0]
    assert (
        body.count("f0_v[") == 5 and "r0 = q0_0;" in body and "q0_0 = q0_1;" in body and "q0_1 = r1;" in body
    )
