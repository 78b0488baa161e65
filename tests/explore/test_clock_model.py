"""The device's clock model (OpenCL §5.1, Fig. 10) in the search: each point runs at the clock its logic
utilization gives, and the ranking follows those times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stencilmap.explore import ExploreConfig, explore
from stencilmap.jobs.estimate import estimate
from stencilmap.model.report import EstimateConfig
from stencilmap.point import DesignPoint
from tests.conftest import EXAMPLES

SHAPE = (32768, 4096)
DE5 = Path(__file__).resolve().parents[2] / "src/stencilmap/device/files/de5.json"


def _steep_de5(tmp_path: Path) -> str:
    """de5 with a clock that collapses above 60% of the ALMs: 300 MHz to 60%, 100 MHz from 70%."""
    doc = json.loads(DE5.read_text())
    doc["clock_model"] = {"resource": "alm", "points": [[0.0, 300], [0.6, 300], [0.7, 100], [1.0, 100]]}
    path = tmp_path / "de5_steep.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _explore(device: str, clock_mhz: float | None = None) -> ExploreConfig:
    return ExploreConfig(program=EXAMPLES / "laplace2d.soda", device=device, archs=("pcm",), iterations=15360, shape=SHAPE, clock_mhz=clock_mhz, max_iterate=256, top=5, simulate=False)  # fmt: skip


def test_ranking_follows_the_clock_model(tmp_path: Path) -> None:
    device = _steep_de5(tmp_path)
    fixed = explore(_explore(device, clock_mhz=300.0)).top[0]
    modelled = explore(_explore(device)).top
    best = modelled[0]
    # at a fixed 300 MHz the deepest pipeline under 90% of the ALMs wins; with the clock model a design
    # past 70% runs at 100 MHz, so the winner stays near the knee (60%) at (almost) 300 MHz
    assert dict(fixed.utilization)["alm"] > 0.85 and fixed.clock_mhz == 300.0
    used = dict(best.utilization)["alm"]
    assert used < 0.62 and best.clock_mhz == pytest.approx(300 - 2000 * max(0.0, used - 0.6))
    assert best.clock_mhz > 280
    assert all(c.predicted_seconds >= best.predicted_seconds for c in modelled)
    # the fixed-clock winner, run at the clock its 85%+ ALMs give, is slower than the modelled winner
    slow = estimate(
        EstimateConfig(
            program=EXAMPLES / "laplace2d.soda",
            point=DesignPoint(
                device=device, arch="pcm", unroll=fixed.lanes, iterate=fixed.iterate, vector=None
            ),
            iterations=15360,
            shape=SHAPE,
        )
    )
    assert slow.clock_mhz == pytest.approx(100.0)
    assert slow.predicted_seconds > 1.5 * best.predicted_seconds  # 123 s against 80.6 s


def test_explore_and_estimate_agree_under_the_clock_model(tmp_path: Path) -> None:
    """Every top point's time and clock is what ``estimate`` says for it (no --clock-mhz: the model's)."""
    device = _steep_de5(tmp_path)
    for c in explore(_explore(device)).top:
        r = estimate(
            EstimateConfig(
                program=EXAMPLES / "laplace2d.soda",
                point=DesignPoint(device=device, arch="pcm", unroll=c.lanes, iterate=c.iterate, vector=None),
                iterations=15360,
                shape=SHAPE,
            )
        )
        assert r.clock_mhz == pytest.approx(c.clock_mhz)
        assert r.predicted_seconds == pytest.approx(c.predicted_seconds, rel=1e-12)


def test_the_de5_optimum_runs_at_the_lower_limit() -> None:
    """Table 2 / 4's DE5 Laplace optimum (8, 21) uses 89% of the ALMs: 270 MHz by Fig. 10, as §5.1 assumes."""
    best = explore(_explore("de5")).top[0]
    assert (best.lanes, best.iterate) == (8, 21)
    assert best.clock_mhz == pytest.approx(270.0)
    assert best.predicted_seconds == pytest.approx(45.6, rel=0.01)
