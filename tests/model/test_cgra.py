"""CGRA paper §VI: the roofline choice of workers on the triggered-instruction CGRA (1.2 GHz, 256 MACs,
100 GB/s, double precision).

The paper's intensity counts the flops of the valid (interior) outputs over the bytes of the whole input
and output grids: (16·2 + 1)(194,400 − 16) / ((194,400 + 194,400)·8) = 2.06. ``analysis``'s
operational intensity counts every point, 33 / 16 = 2.0625; the roofline uses the paper's count for
programs whose boundaries all ``shrink`` (``workload.computed_points``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.roofline import roofline_cmd
from stencilmap.model.cgra import choose_workers, mac_fusions, pes_per_worker
from stencilmap.program import load_program
from tests.model.helpers import example, run_json, star_program, write_json_program


def test_1d_radius_8() -> None:
    """17-point 1-D stencil on 194,400 doubles: 2.06 flop/B, 206 GFLOPS, 6 workers (237 GFLOPS)."""
    r = run_json(roofline_cmd, str(example("stencil1d_r8.json")), "--device", "cgra-tia")
    assert r["operational_intensity"] == pytest.approx(33 * (194400 - 16) / ((194400 + 194400) * 8))
    assert round(r["operational_intensity"], 2) == 2.06
    assert r["analysis_intensity"] == pytest.approx(33 / 16)
    assert r["peak_gops"] == pytest.approx(614.4) and r["bandwidth_gbs"] == 100
    assert int(r["attainable_gops"]) == 206
    assert r["workers"] == 6
    assert r["worker_model"]["pes_per_worker"] == 17  # 16 MACs + 1 MUL
    assert int(r["worker_model"]["gops"]) == 237  # 6·16·2·1.2 + 6·1.2


def test_2d_radius_12(tmp_path: Path) -> None:
    """49-point 2-D star (r = 12) on 960 × 449: 5.59 flop/B, 559 GFLOPS, 5 workers (582 GFLOPS)."""
    prog = write_json_program(tmp_path / "star2d.json", star_program(12, [449, 960]))
    r = run_json(roofline_cmd, str(prog), "--device", "cgra-tia")
    assert r["operational_intensity"] == pytest.approx(97 * (449 - 24) * (960 - 24) / (2 * 960 * 449 * 8))
    assert round(r["operational_intensity"], 2) == 5.59
    assert int(r["attainable_gops"]) == 559
    assert r["workers"] == 5
    assert r["worker_model"]["max_workers"] == 5  # 256 // 49: "we can only fit 5 workers"
    assert r["worker_model"]["gops"] == pytest.approx(1.2 * (48 * 2 * 5 + 5))  # 582


def test_worker_choice_is_the_fewest_that_reach_the_roofline() -> None:
    w = choose_workers(206.2, 33, 17, 256, 1.2)
    assert (w.workers, w.max_workers) == (6, 15)
    w = choose_workers(10_000.0, 33, 17, 256, 1.2)  # compute-bound: all that fit
    assert w.workers == 15 and w.needed > 15
    assert choose_workers(100.0, 97, 300, 256, 1.2).workers == 0  # a worker larger than the fabric


def test_mac_fusion_counts() -> None:
    st = load_program(example("stencil1d_r8.json")).stencils[0]
    assert mac_fusions(st.expr) == 16
    laplace = load_program(example("laplace2d.soda"))
    assert mac_fusions(laplace.stencils[0].expr) == 0  # 0.25 × (a + b + c + d): no product under an add
    assert pes_per_worker(laplace) == 4


def test_estimate_uses_the_roofline_workers() -> None:
    r = run_json(estimate_cmd, str(example("stencil1d_r8.json")), "--device", "cgra-tia")
    assert r["arch"] == "cgra" and r["parameters"]["workers"] == 6
    assert r["resources"]["mac"] == {"used": 6 * 17, "available": 256, "limit": 1.0}
    # 6 workers ask 6 × 16 B × 1.2 GHz = 115 GB/s of 100, but the readers bind first (CGRA §VIII): one load
    # in 8 misses the cache and holds its reader 2 more cycles, 10 cycles per 8 loads: 92% of the roofline
    assert r["cgra_bound"] == "readers" and r["scenario"] == "compute"
    assert r["gops"] == pytest.approx(0.92 * r["roofline_gops"], rel=0.01)
    given = run_json(estimate_cmd, str(example("stencil1d_r8.json")), "--device", "cgra-tia", "--unroll", "2")
    assert given["parameters"]["workers"] == 2 and given["scenario"] == "compute"
