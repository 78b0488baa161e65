"""The explorer's arrays against built designs: every timing fact and every resource, point by point."""

from __future__ import annotations

import numpy as np
import pytest

from stencilmap.arch import arch as arch_of
from stencilmap.design.common import with_iterate
from stencilmap.explore import design_space
from stencilmap.explore.resources import ResourceTable, build_candidate
from stencilmap.explore.tables import arch_tables
from stencilmap.model.resources import design_resources
from stencilmap.model.timing import design_timing
from tests.explore.helpers import config

CASES = [
    ("jacobi2d.soda", "ku060", (64, 256), 8),
    ("heat3d.json", "stratix10", (16, 32, 32), 8),  # 3-D tiles, down to 8 × 8 (taps of rows meet)
    ("dag_listing1.json", "ku060", (8, 16, 16), 1),  # a DAG, a lower-dimensional input, delays
    ("laplace2d.soda", "de5", (32, 128), 4),  # segments of 2 beats: chain rate 4/5
    ("stencil1d_r8.json", "stratix10", (4096,), 4),
]


@pytest.mark.parametrize(("name", "device", "shape", "iterations"), CASES, ids=[c[0] for c in CASES])
def test_tables_and_resources_equal_the_built_designs(
    name: str, device: str, shape: tuple[int, ...], iterations: int
) -> None:
    space = design_space(config(name, device, shape, iterations))
    for arch in space.archs:
        tables = arch_tables(space, arch)
        resources = ResourceTable(arch, space.program, space.device, space.q_max)
        for ti, tile in enumerate(tables.tiles):
            for li, lanes in enumerate(int(p) for p in tables.lanes[:3]):
                for q in sorted({1, 2, 3, space.q_max}):
                    if q > space.q_max or not tables.valid[q - 1, ti]:
                        continue
                    program = with_iterate(space.program, q)
                    design = build_candidate(arch, space.program, lanes, q, tile, space.builder_device)
                    t = design_timing(design, program, lanes=arch_of(design.arch).lanes)
                    assert int(tables.latency[q - 1, ti, li]) == t.latency
                    assert int(tables.drain[q - 1, ti, li]) == t.drain
                    assert int(tables.vectors[q - 1, ti, li]) == t.vectors
                    assert int(tables.tile_count[q - 1, ti]) == t.tiles
                    assert float(tables.chain_rate[ti, li]) == t.chain_rate
                    assert int((tables.tile_count[q - 1, ti] - 1) * tables.reach[ti, li]) == t.bubble
                    banks = {b.bank: (b.read_bytes, b.write_bytes) for b in t.banks}
                    ours = {
                        b: (float(tables.read_bytes[q - 1, ti, i]), float(tables.write_bytes[i]))
                        for i, b in enumerate(tables.banks)
                    }
                    assert ours == banks
                    one, delta = resources.affine(lanes, tile)
                    used = design_resources(design, program, space.device).used
                    assert np.array_equal(one + (q - 1) * delta, [used[n] for n in resources.names])


def test_resources_are_affine_in_q() -> None:
    """q = 5 from the q = 1 and q = 2 designs, for each builder (SODA tiled too)."""
    space = design_space(config("jacobi2d.soda", "ku060", (64, 256), iterations=5))
    for arch in space.archs:
        table = ResourceTable(arch, space.program, space.device, space.q_max)
        tile = min(t for t in space.tiles_of(arch) if t[0] >= 64)  # wider than 5 stages' halo
        one, delta = table.affine(4, tile)
        design = build_candidate(arch, space.program, 4, 5, tile)
        used = design_resources(design, with_iterate(space.program, 5), space.device).used
        assert np.array_equal(one + 4 * delta, [used[n] for n in table.names])
    assert table.builds == 2
