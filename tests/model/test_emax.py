"""EMAX 3D-stencil library: data-transfer volume (§4.5), rows (§4.6) and the five-state timeline (§5.1)."""

from __future__ import annotations

import pytest

from stencilmap.cli.estimate import estimate_cmd
from stencilmap.model import emax
from tests.model.helpers import example, invoke, run_json


def test_transfer_formulas() -> None:
    d, p, y, z = 1, 2, 320, 320
    assert emax.first_streams(d, p) == (4 * d + 1) + p * (2 * d + 1)  # (1)
    assert emax.next_streams(d, p) == 2 * d + p  # (2) = (2d + 1) + (p − 1)
    assert emax.sweep_streams(d, p, y) == y * (2 * d + p)  # (3)
    assert emax.total_streams(d, p, y, z) == z * (emax.first_streams(d, p) + y * (2 * d + p)) / p  # (4)
    assert emax.approx_streams(d, p, y, z) == y * z * (2 * d + p) / p  # (5)
    # (5) approximates (4) when p ≪ y: (1) is negligible
    assert emax.approx_streams(d, p, y, z) == pytest.approx(emax.total_streams(d, p, y, z), rel=0.02)


@pytest.mark.parametrize(("degree", "limit"), [(1, 1 / 3), (2, 1 / 5), (3, 1 / 7)])
def test_packing_reduces_transfers_to_one_over_2d_plus_1(degree: int, limit: float) -> None:
    """§4.5: the ratio to p = 1 is (2d + p)/(p(2d + 1)) → 1/3, 1/5, 1/7 as p grows."""
    y = z = 320
    base = emax.approx_streams(degree, 1, y, z)
    ratios = [emax.approx_streams(degree, p, y, z) / base for p in (1, 2, 4, 8, 64, 10**6)]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] == 1
    assert ratios[1] == pytest.approx((2 * degree + 2) / (2 * (2 * degree + 1)))
    assert ratios[-1] == pytest.approx(limit, rel=1e-5)
    assert ratios[-1] > limit  # a bound approached, never passed
    assert emax.unbounded_ratio(degree) == pytest.approx(limit)  # §4.5's figure: rows without bound


def test_row_counts() -> None:
    """§4.6: degree 1 uses 7 rows at p = 1, 8 at p = 2 (the mirrored pattern), 11 / 12 at p = 3 / 4;
    degree 3 uses 11p (EMAX's 8 columns)."""
    assert [emax.rows(1, p, 8) for p in range(1, 7)] == [7, 8, 11, 12, 15, 16]
    assert [emax.rows(3, p, 8) for p in range(1, 5)] == [11, 22, 33, 44]
    assert emax.max_mappings(1, 12, 320, 8) == 4 and emax.max_mappings(3, 12, 320, 8) == 1
    assert emax.max_mappings(3, 10, 320, 8) == 0


def test_row_counts_follow_the_columns() -> None:
    """Wider than 8 columns, degree 3 pairs mirrored patterns as degree 1 does on 8 (each pair 8 rows lower);
    narrower, degree 1 stacks 7-row patterns."""
    assert [emax.rows(3, p, 16) for p in range(1, 5)] == [11, 12, 19, 20]
    assert [emax.rows(1, p, 7) for p in range(1, 4)] == [7, 14, 21]
    assert emax.max_mappings(3, 20, 320, 16) == 4 and emax.max_mappings(1, 20, 320, 4) == 2


def test_x_split_when_a_row_exceeds_the_lmm() -> None:
    assert emax.x_chunks(320, 1, 8, 8192) == 1  # 322 doubles fit 8 KB
    assert emax.x_chunks(2048, 1, 8, 8192) == 3  # 2048 + 2 do not: ⌈2048 / 3⌉ + 2 = 685 ≤ 1024
    with pytest.raises(ValueError):
        emax.x_chunks(16, 600, 8, 8192)


def test_timeline_is_latency_plus_interval() -> None:
    """T = Σ t_s + (E − 1)·max(t1 + t5, t2 + t3, t4): one execution pays every state once, more overlap
    on the busiest exclusive path."""
    tl = emax.timeline(800.0, 400.0, 100.0, 1, 400.0, 800.0, 100.0)
    assert tl.states == (2.0, 1.0, 1.0, 0.5, 1.0)
    assert tl.seconds == pytest.approx(5.5)
    many = emax.timeline(800.0, 400.0, 100.0, 10, 400.0, 800.0, 100.0)
    assert many.bottleneck == "host" and many.interval == pytest.approx(3.0)
    assert many.seconds == pytest.approx(5.5 + 9 * 3.0)
    shared = emax.timeline(800.0, 400.0, 100.0, 10, None, 800.0, 100.0)  # no host copies
    assert shared.bottleneck == "lmm" and shared.seconds == pytest.approx(2.5 + 9 * 2.0)


def test_estimate_on_emax_packs_z_planes() -> None:
    one = run_json(estimate_cmd, str(example("star3d_degree3.soda")), "--device", "emax", "--unroll", "1")
    best = run_json(estimate_cmd, str(example("star3d_degree3.soda")), "--device", "emax")
    assert one["parameters"] == {"degree": 3, "p": 1, "rows": 11, "x_chunks": 1}
    assert best["parameters"]["p"] == 5 and best["parameters"]["rows"] == 55  # 11p ≤ 64 rows
    assert best["transfer_streams"] < one["transfer_streams"]
    assert best["predicted_seconds"] < one["predicted_seconds"]
    assert best["resources"]["pe_rows"]["used"] == 55


def test_emax_needs_3d_programs() -> None:
    result = invoke(estimate_cmd, str(example("laplace2d.soda")), "--device", "emax")
    assert result.exit_code == 2 and "3-D" in result.output and len(result.output.strip().splitlines()) == 1
