"""The CPU and GPU baseline (``model.baseline``): compute, memory and blocking-cache ceilings of the
papers' codes, temporal blocking, split kernels; the catalog's ``cores`` block."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import stencilmap as sm
from stencilmap.device.catalog import device_names, load_device
from stencilmap.errors import StencilmapError
from stencilmap.model.baseline import CODES, baseline_step, instructions_per_point
from stencilmap.model.workload import workload

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CATALOG = ROOT / "src" / "stencilmap" / "device" / "files"


def _prog(name: str, shape: tuple[int, ...]) -> sm.Program:
    return sm.load(EXAMPLES / name, shape=shape)


def test_fused_multiply_adds_count_one_instruction() -> None:
    prog = _prog("jacobi2d_9pt.soda", (64, 64))  # 8 additions, 9 multiplications
    assert instructions_per_point(prog, fma=False) == 17
    assert instructions_per_point(prog, fma=True) == 9


@pytest.mark.parametrize("name", [n for n in device_names() if load_device(n).kind in ("cpu", "gpu")])
def test_every_cpu_and_gpu_describes_its_cores(name: str) -> None:
    d = load_device(name)
    assert d.cores is not None
    # the issue rate (× 2 with fused multiply-adds) is the quoted float32 peak (checked within 5%)
    lanes = d.cores.instructions_per_second("float32", d.clock_mhz) / 1e9
    assert d.cores.peak_gops("float32", d.clock_mhz) == lanes * (2 if d.cores.fma else 1)
    assert d.cores.peak_gops("float32", d.clock_mhz) == pytest.approx(d.peak("float32"), rel=0.05)


def test_stores_that_allocate_read_the_output_line_too() -> None:
    prog = _prog("jacobi2d_5pt.soda", (512, 512))
    dev = load_device("xeon-e5-2620v3-2s")
    no_wa = baseline_step(prog, (512, 512), dev, replace(CODES["halide"], write_allocate=False))
    wa = baseline_step(prog, (512, 512), dev, CODES["halide"])
    assert (no_wa.memory_bytes_per_point, wa.memory_bytes_per_point) == (8.0, 12.0)
    assert wa.bound == "memory" and wa.memory_seconds == pytest.approx(1.5 * no_wa.memory_seconds)


def test_time_is_the_longest_of_compute_memory_and_cache() -> None:
    prog = _prog("jacobi2d_9pt.soda", (1024, 1024))
    step = baseline_step(prog, (1024, 1024), load_device("xeon-e5-1650v3"), CODES["halide"])
    assert step.seconds == max(step.compute_seconds, step.memory_seconds, step.cache_seconds)
    w = workload(prog, (1024, 1024))
    d = load_device("xeon-e5-1650v3")
    assert d.cores is not None
    issue = d.cores.instructions_per_second("float32", d.clock_mhz) * d.cores.compute_efficiency
    assert step.compute_seconds == pytest.approx(17 * w.computed_points / issue)


def test_temporal_blocking_divides_memory_traffic_by_the_depth_it_picks() -> None:
    shape = (4096, 4096)
    prog = _prog("laplace2d.soda", shape)
    dev = load_device("gtx960")
    blocked = baseline_step(prog, shape, dev, CODES["opencl-gpu"], steps=100)
    flat = baseline_step(prog, shape, dev, replace(CODES["opencl-gpu"], temporal_blocking=False), steps=100)
    assert flat.blocking == 1 and flat.tile == 0
    assert blocked.blocking > 1 and blocked.tile > 0
    assert blocked.seconds < flat.seconds  # the faster of blocked and not (OpenCL §5.3)
    # traffic falls by b, rises by the overlapped tile's halo
    assert flat.memory_seconds / blocked.blocking < blocked.memory_seconds < flat.memory_seconds
    # one step in a run: nothing to chain
    assert baseline_step(prog, shape, dev, CODES["opencl-gpu"], steps=1).blocking == 1


def test_split_kernels_stream_every_stencils_inputs() -> None:
    shape = (128, 128, 80)
    prog = _prog("stencilflow_hdiff_like.json", shape)
    dev = load_device("v100")
    split = baseline_step(prog, shape, dev, CODES["dawn-gpu"])
    fused = baseline_step(prog, shape, dev, replace(CODES["dawn-gpu"], kernel_split=False))
    # four stencils, each reading five float32 fields and writing one (the 1-D coefficients are small)
    assert split.memory_bytes_per_point == pytest.approx(4 * 6 * 4, abs=0.1)
    assert fused.memory_bytes_per_point == pytest.approx(workload(prog, shape).bytes_per_point)
    assert split.memory_seconds > 2 * fused.memory_seconds


def test_window_reads_bound_a_large_radius_on_shared_memory() -> None:
    """CGRA §VII/§VIII-A: r = 12 is limited on chip, r = 2 by the 850 GB/s copy bandwidth."""
    big = sm.load(EXAMPLES / "stencil2d_r12.json")
    small = sm.load(EXAMPLES / "cgra_stencil2d_r2.json")
    dev = load_device("v100")
    assert baseline_step(big, (449, 960), dev, CODES["cuda-smem"]).bound == "cache"
    assert baseline_step(small, (449, 960), dev, CODES["cuda-smem"]).bound == "memory"


def test_a_device_without_cores_is_refused() -> None:
    prog = _prog("laplace2d.soda", (64, 64))
    with pytest.raises(StencilmapError, match="describes no cores"):
        baseline_step(prog, (64, 64), load_device("ku060"), CODES["halide"])


def _device_file(tmp_path: Path, name: str, **change: object) -> Path:
    data = json.loads((CATALOG / f"{name}.json").read_text(encoding="utf-8"))
    data.update(change)
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_cores_disagreeing_with_the_peak_are_refused(tmp_path: Path) -> None:
    data = json.loads((CATALOG / "v100.json").read_text(encoding="utf-8"))
    cores = {**data["cores"], "units": 40}
    with pytest.raises(StencilmapError, match=r"disagrees with peak_gops\.float32"):
        load_device(str(_device_file(tmp_path, "v100", cores=cores)))


def test_cores_on_an_fpga_are_refused(tmp_path: Path) -> None:
    cores = json.loads((CATALOG / "v100.json").read_text(encoding="utf-8"))["cores"]
    with pytest.raises(StencilmapError, match="kind cpu or gpu"):
        load_device(str(_device_file(tmp_path, "ku060", cores=cores)))


def test_cores_fields_are_validated(tmp_path: Path) -> None:
    data = json.loads((CATALOG / "v100.json").read_text(encoding="utf-8"))
    cores = {**data["cores"], "cache_efficiency": 1.5}
    with pytest.raises(StencilmapError, match=r"cores\.cache_efficiency"):
        load_device(str(_device_file(tmp_path, "v100", cores=cores)))


def test_a_code_uses_the_threads_and_vector_width_it_names() -> None:
    """EMAX Table 2's gcc -msse2 code: one core, 128-bit vectors (4 float32 lanes of the i5-4670's 8)."""
    prog = _prog("laplace2d.soda", (1024, 1024))
    dev = load_device("i5-4670")
    sse2 = baseline_step(prog, (1024, 1024), dev, CODES["gcc-sse2"])
    wide = baseline_step(prog, (1024, 1024), dev, replace(CODES["gcc-sse2"], threads=None, vector_bits=None))
    assert sse2.compute_seconds == pytest.approx(wide.compute_seconds * 4 * 2)


def test_a_device_without_fused_multiply_add_issues_both() -> None:
    """The i7-4960X (Ivy Bridge) has no FMA: a code that would fuse issues every multiply and add."""
    prog = _prog("jacobi2d_9pt.soda", (256, 256))
    assert (
        baseline_step(prog, (256, 256), load_device("i7-4960x"), CODES["opencl-cpu"]).instructions_per_point
        == 17
    )
    assert (
        baseline_step(
            prog, (256, 256), load_device("xeon-e5-1650v3"), CODES["opencl-cpu"]
        ).instructions_per_point
        == 9
    )


def test_devices_json_shows_the_cores() -> None:
    cores = load_device("v100").to_json()["cores"]
    assert (
        isinstance(cores, dict) and cores["units"] == 80 and cores["lanes"] == {"float32": 64, "float64": 32}
    )
    assert load_device("ku060").to_json()["cores"] is None
