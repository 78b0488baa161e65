"""The vectorized model equals ``model.estimate`` point by point (time, scenario, resources)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stencilmap.explore import design_space
from stencilmap.explore.evaluate import lane_times
from stencilmap.explore.resources import ResourceTable
from stencilmap.explore.tables import arch_tables
from stencilmap.jobs.estimate import estimate
from stencilmap.model.report import EstimateConfig
from stencilmap.point import DesignPoint
from tests.explore.helpers import config

CASES = [
    ("jacobi2d.soda", "ku060", (512, 512), 100),
    ("heat3d.json", "stratix10", (32, 64, 64), 50),  # no bank pinned: all 4 interleaved
    ("dag_listing1.json", "de5", (32, 32, 32), 1),
    ("star3d_degree2.soda", "395-ab", (32, 64, 64), 10),
]


@pytest.mark.parametrize(("name", "device", "shape", "iterations"), CASES, ids=[c[0] for c in CASES])
def test_sampled_points_equal_estimate(
    name: str, device: str, shape: tuple[int, ...], iterations: int
) -> None:
    cfg = config(name, device, shape, iterations, max_iterate=16)
    space = design_space(cfg)
    rng = random.Random(0)
    for arch in space.archs:
        tables = arch_tables(space, arch)
        resources = ResourceTable(arch, space.program, space.device, space.q_max)
        for li, lanes in enumerate(int(p) for p in tables.lanes):
            times = lane_times(space, tables, li)
            for _ in range(2):
                ti, q = rng.randrange(len(tables.tiles)), rng.randrange(1, space.q_max + 1)
                if not tables.valid[q - 1, ti]:
                    continue
                tile = tables.tiles[ti]
                r = estimate(
                    EstimateConfig(
                        program=cfg.program,
                        point=DesignPoint(
                            device=device,
                            arch=arch,
                            unroll=None if arch == "stencilflow" else lanes,
                            iterate=q,
                            vector=lanes if arch == "stencilflow" else None,
                            tile=tile if arch == "soda" else None,
                        ),
                        iterations=iterations,
                        shape=shape,
                    )
                )
                # at the point's clock: the device's clock model at its utilization (ku060, de5)
                clocked = lane_times(space, tables, li, np.full(space.q_max, r.clock_mhz), ti)
                assert clocked.seconds[q - 1, 0] == pytest.approx(r.predicted_seconds, rel=1e-12)
                if r.clock_mhz == space.bound_clock_mhz:
                    assert times.seconds[q - 1, ti] == pytest.approx(r.predicted_seconds, rel=1e-12)
                assert int(times.launches[q - 1, 0]) == r.launches
                assert bool(times.bandwidth_bound[q - 1, ti]) == (r.scenario == "bandwidth")
                one, delta = resources.affine(lanes, tile)
                assert r.resources is not None
                assert np.array_equal(one + (q - 1) * delta, [r.resources.used[n] for n in resources.names])
