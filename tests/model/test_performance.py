"""The pure formulas: scenarios, launches, the total time of OpenCL eq. 1, the roofline, work intensity."""

from __future__ import annotations

import pytest

from stencilmap.model.performance import (
    attainable_gops,
    compute_seconds,
    launches,
    required_bandwidth,
    ridge_intensity,
    scenario,
    soda_ideal_throughput,
    total_seconds,
)
from stencilmap.model.resources import binding_resource, is_power_of_two, pcm_resources
from stencilmap.model.workload import workload
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.model.helpers import example


def test_required_bandwidth_and_scenarios() -> None:
    b_req = required_bandwidth(8.0, 16, 270e6)  # OpenCL eq. 2: Laplace, P_cell = 16
    assert b_req == pytest.approx(34.56e9)
    assert scenario(b_req, 20.48e9) == "bandwidth" and scenario(b_req / 2, 20.48e9) == "compute"
    assert scenario(20.48e9, 20.48e9) == "bandwidth"  # eq. 4: B_req ≥ B_prac is scenario 2


def test_compute_seconds_stretches_by_the_bandwidth_ratio() -> None:
    assert compute_seconds(1000, 1e6, 1.0, 2.0) == pytest.approx(1e-3)  # eq. 5
    assert compute_seconds(1000, 1e6, 4.0, 2.0) == pytest.approx(2e-3)  # eq. 6: × B_req / B_prac


def test_launches_and_total_time() -> None:
    assert launches(15360, 146) == 106 and launches(15360, 80) == 192 and launches(3, 8) == 1
    assert total_seconds(1.0, 10, 0.1, 2.0, 0.5) == pytest.approx(1.0 + 10 * 2.1 + 0.5)  # eq. 1


def test_soda_ideal_throughput_without_halo_is_kqf() -> None:
    assert soda_ideal_throughput(4, 2, 1e8, (100,), (1,)) == pytest.approx(8e8)
    assert soda_ideal_throughput(1, 1, 1.0, (10, 10), (3, 3)) == pytest.approx(0.64)
    assert soda_ideal_throughput(1, 10, 1.0, (10,), (3,)) == 0  # the halo eats the tile


def test_roofline_formulas() -> None:
    assert attainable_gops(614.4, 2.0623, 100.0) == pytest.approx(206.23)
    assert attainable_gops(614.4, 10.0, 100.0) == 614.4
    assert ridge_intensity(614.4, 100.0) == pytest.approx(6.144)


def test_resource_helpers() -> None:
    assert pcm_resources(21, 8, 827, 155, 67349) == 21 * (8 * 827 + 155) + 67349  # OpenCL eqs. 9–10
    assert binding_resource({"alm": 90, "dsp": 10}, {"alm": 100, "dsp": 20}) == "alm"
    assert binding_resource({}, {"alm": 100}) is None
    assert all(is_power_of_two(v) for v in (0.25, 0.5, 1, 2, 1024, -4))
    assert not any(is_power_of_two(v) for v in (0, 0.2, 3, 0.3))


def test_work_intensity_counts_interior_points_of_shrinking_programs() -> None:
    program = bind_shape(load_program(example("stencil1d_r8.json")), {}, None)
    w = workload(program, (194400,))
    assert (w.points, w.computed_points, w.ops_per_point, w.bytes_per_point) == (194400, 194384, 33, 16.0)
    assert w.intensity() == pytest.approx(w.analysis_intensity * 194384 / 194400)
    assert w.intensity(4) == pytest.approx(4 * w.intensity())
    assert w.dtype == "float64"
    heat = bind_shape(load_program(example("heat3d.json")), {}, None)  # copy boundary: every point
    hw = workload(heat, (32, 64, 64))
    assert hw.computed_points == hw.points and hw.intensity() == pytest.approx(hw.analysis_intensity)
    assert hw.input_bytes == hw.output_bytes == 4 * 32 * 64 * 64
