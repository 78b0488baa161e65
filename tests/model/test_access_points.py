"""Memory efficiency against the number and width of access points (StencilFlow §VIII-D, Fig. 16).

The 520N's memory system delivers 32 bits a cycle to every scalar access point up to about 24 of them, then
flattens at 36.4 GB/s (47% of 76.8); 4-wide access points reach 58.3 GB/s (76%, B_prac). ``stratix10``'s
``access_point_bandwidth`` holds the two plateaus: the 32-bit one fitted to Fig. 16's 40-point bar (its
``sources`` say so), the 128-bit one B_prac (fitted to the 48-operand 4-wide bar); the other bars are
predicted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stencilmap.cli.estimate import estimate_cmd
from stencilmap.device.catalog import device_text, load_device, parse_device
from stencilmap.errors import StencilmapError
from tests.model.helpers import run_json, write_json_program

#: Fig. 16: operands a cycle → GB/s measured, scalar (W = 1) and 4-wide (W = 4) access points
FIG16 = {
    1: {8: 10.2, 16: 20.2, 24: 29.9, 32: 34.8, 40: 36.4, 48: 35.7},
    4: {8: 9.9, 16: 20.3, 24: 30.2, 32: 40.2, 40: 49.3, 48: 58.3},
}


def test_plateau_by_width() -> None:
    s10 = load_device("stratix10")
    assert s10.access_point_plateau_gbs(32) == 36.4
    assert s10.access_point_plateau_gbs(128) == pytest.approx(58.3)
    assert s10.access_point_plateau_gbs(256) == pytest.approx(58.3)  # 8-wide: "similar bandwidth"
    assert s10.access_point_plateau_gbs(80) == pytest.approx((36.4 + 58.3) / 2)
    assert s10.access_point_plateau_gbs(None) == s10.practical_bandwidth_gbs
    de5 = load_device("de5")  # no access-point curve: B_prac whatever the ports
    assert de5.access_point_plateau_gbs(32) == de5.practical_bandwidth_gbs
    assert de5.bank_rate(False, None, 32) == de5.bank_rate(False)


@pytest.mark.parametrize("w", [1, 4])
def test_fig16_bars(w: int) -> None:
    """Every bar within 10%: operands × 4 B at 300 MHz, capped at the plateau of W-wide access points."""
    s10 = load_device("stratix10")
    for operands, measured in FIG16[w].items():
        predicted = min(operands * 4 * s10.clock_mhz / 1e3, s10.access_point_plateau_gbs(32 * w))
        assert predicted == pytest.approx(measured, rel=0.10), (w, operands)
    fitted = [s for s in s10.sources if s.startswith("fitted: stencilflow-fig16")]
    assert sorted(s.split()[1] for s in fitted) == [
        "stencilflow-fig16-novec-40-bandwidth", "stencilflow-fig16-vec4-48-bandwidth"
    ]  # fmt: skip


def _many_inputs(n: int) -> dict[str, Any]:
    inputs = {f"f{i}": {"data": "random:0-1", "data_type": "float32"} for i in range(n)}
    body = " + ".join(f"f{i}[i, j, k]" for i in range(n))
    return {
        "inputs": inputs,
        "outputs": ["o"],
        "dimensions": [64, 64, 64],
        "program": {
            "o": {"computation_string": f"o = {body}", "boundary_conditions": {}, "data_type": "float32"}
        },
    }


def test_estimate_reports_and_uses_the_plateau(tmp_path: Path) -> None:
    """40 scalar inputs and one output ask 41 × 4 B × 300 MHz = 49.2 GB/s, under B_prac = 58.3: without the
    access-point curve the design is compute-bound; with it, bandwidth-bound at 36.4 GB/s — one launch
    takes 49.2 / 36.4 times as long (to the fill). W = 4 (128-bit points): the plateau is B_prac again."""
    prog = write_json_program(tmp_path / "wide.json", _many_inputs(40))
    text, _ = device_text("stratix10")
    spec = json.loads(text)
    del spec["access_point_bandwidth"]
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps(spec))
    args = [str(prog), "--arch", "stencilflow", "--vector", "1", "--iterate", "1"]
    with_curve = run_json(estimate_cmd, *args, "--device", "stratix10")
    without = run_json(estimate_cmd, *args, "--device", str(flat))
    assert with_curve["access_points"] == 41 == without["access_points"]
    assert with_curve["required_bandwidth_gbs"] == pytest.approx(49.2)
    assert with_curve["achieved_bandwidth_gbs"] == pytest.approx(36.4)
    assert without["achieved_bandwidth_gbs"] == pytest.approx(49.2)
    assert (with_curve["scenario"], without["scenario"]) == ("bandwidth", "compute")
    ratio = with_curve["compute_seconds_per_launch"] / without["compute_seconds_per_launch"]
    assert ratio == pytest.approx(49.2 / 36.4, rel=0.01)
    wide = run_json(estimate_cmd, *args[:3], "--vector", "4", "--iterate", "1", "--device", "stratix10")
    assert wide["achieved_bandwidth_gbs"] == pytest.approx(58.3)


def test_bad_curve_is_refused() -> None:
    text, _ = device_text("stratix10")
    spec = json.loads(text)
    spec["access_point_bandwidth"] = [[128, 58.3], [32, 36.4]]
    with pytest.raises(StencilmapError, match=r"access_point_bandwidth: .*strictly increasing"):
        parse_device(json.dumps(spec), "bad.json")
