"""Tiling (SODA §4.2): overlapping tiles, and outputs placed by ownership so that tiles add up exactly."""

from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stencilmap.analysis.halos import Halo, program_halo
from stencilmap.backends.reference import run_reference
from stencilmap.design.ir import Design, Module
from stencilmap.design.registry import BuildConfig, build
from stencilmap.design.tiling import axis_tiling, tile_plan
from stencilmap.errors import StencilmapError
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.ir import Program
from tests.conftest import CORPUS, EXAMPLES

from .helpers import JACOBI_M9, modules, soda


@given(st.integers(1, 200), st.integers(1, 64), st.integers(0, 6), st.integers(0, 6))
def test_owned_ranges_partition_the_axis(size: int, tile: int, low: int, high: int) -> None:
    if size > tile and tile <= low + high:
        with pytest.raises(StencilmapError, match="must exceed the accumulated halo"):
            axis_tiling(1, size, tile, low, high)
        return
    a = axis_tiling(1, size, tile, low, high)
    assert a.tile == min(size, tile)
    owned = [a.owned(t) for t in range(a.count)]
    assert owned[0][0] == 0 and owned[-1][1] == size  # no gap at the ends
    assert all(lo < hi for lo, hi in owned)  # every tile writes something
    assert all(owned[t][1] == owned[t + 1][0] for t in range(a.count - 1))  # abutting: no gap, no overlap
    for t, start in enumerate(a.starts):
        assert start >= 0 and start + a.tile <= size  # every tile is read in full, inside the grid
        lo, hi = a.valid(t)
        assert lo <= owned[t][0] and owned[t][1] <= hi  # owned points do not see a local border
        if t > 0:
            assert a.starts[t] <= a.starts[t - 1] + a.tile - low - high  # overlap ≥ the halo
    if size > tile:  # as few tiles as the stride T − H allows
        stride = tile - low - high
        assert a.count == 1 + -(-(size - tile) // stride)


def test_worked_example() -> None:
    # 150 points, tiles of 64, halo 4 + 4: stride 56; the last tile is shifted back to end at 150
    a = axis_tiling(1, 150, 64, 4, 4)
    assert a.starts == (0, 56, 86)
    assert [a.owned(t) for t in range(3)] == [(0, 60), (60, 116), (116, 150)]
    assert [a.valid(t) for t in range(3)] == [(0, 60), (60, 116), (90, 150)]


def test_plan_and_errors() -> None:
    plan = tile_plan((5, 40, 50), (16, 64), Halo((1, 1, 1), (1, 2, 1)))
    assert plan.counts == (3, 1) and plan.total == 3 and plan.stream_shape == (5, 16, 50)
    assert plan.points_read == 3 * 5 * 16 * 50
    assert list(plan.tiles()) == [(0, 0), (1, 0), (2, 0)]
    assert plan.input_box((1, 0)) == ((0, 5), (13, 29), (0, 50))
    assert plan.owned_box((1, 0)) == ((0, 5), (14, 27), (0, 50))
    with pytest.raises(StencilmapError, match="must give 2 positive"):
        tile_plan((5, 40, 50), (16,), Halo.zero(3))
    with pytest.raises(StencilmapError, match="must exceed"):
        build("soda", soda(JACOBI_M9, (20, 30)), BuildConfig(tile=(2,)))


def test_design_records_tiles() -> None:
    p = soda(JACOBI_M9, (20, 30))  # tile 9 (the DSL's), halo 1 + 1: stride 7
    d = build("soda", p, BuildConfig())
    params = dict(d.parameters)
    assert params["tile"] == (9,) and params["tiles"] == (4,) and params["tiles_total"] == 4
    assert params["stream_shape"] == (20, 9)
    (reader,) = modules(d, "reader")
    assert reader.param("tile_shape") == (20, 9) and reader.param("points") == 4 * 20 * 9
    assert reader.param("tile_starts_axis1") == (0, 7, 14, 21)
    (writer,) = modules(d, "writer")
    assert writer.param("owned_lo_axis1") == (0, 8, 15, 22) and writer.param("owned_hi_axis1") == (
        8,
        15,
        22,
        30,
    )
    assert writer.param("points") == 20 * 30
    # the reuse buffers are sized for the tile's rows (M = 9), not the grid's
    assert sorted(int(str(t.param("offset"))) for t in modules(d, "forward", chain=0)) == [-9, 0, 3, 9]


def _placement(writer: Module, axis: int, key: str) -> tuple[int, ...]:
    value = writer.param(f"{key}_axis{axis}")
    assert isinstance(value, tuple)
    return tuple(int(v) for v in value)


def run_tiled(program: Program, design: Design, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Run each tile on its own (the reference on the tile's input) and place its owned outputs
    where the design's writers say."""
    writer = modules(design, "writer")[0]
    tile_shape = tuple(int(n) for n in writer.param("tile_shape"))  # type: ignore[union-attr]
    axes = range(1, program.rank)
    starts = [_placement(writer, a, "tile_starts") for a in axes]
    owned = [
        list(zip(_placement(writer, a, "owned_lo"), _placement(writer, a, "owned_hi"), strict=True))
        for a in axes
    ]
    out = {o: np.zeros(program.shape, dtype=program.field_dtype(o)) for o in program.outputs}
    for index in product(*(range(len(s)) for s in starts)):
        origin = (0, *(s[t] for s, t in zip(starts, index, strict=True)))
        box = tuple(slice(o, o + n) for o, n in zip(origin, tile_shape, strict=True))
        result = run_reference(program.with_shape(tile_shape), {k: v[box] for k, v in inputs.items()})
        spans = [(0, program.shape[0] or 0), *(own[t] for own, t in zip(owned, index, strict=True))]
        dst = tuple(slice(lo, hi) for lo, hi in spans)
        src = tuple(slice(lo - o, hi - o) for (lo, hi), o in zip(spans, origin, strict=True))
        for name in program.outputs:
            out[name][dst] = result.outputs[name][src]
    return out


TILED = [
    (EXAMPLES / "jacobi2d.soda", (24, 50), (20,)),  # iterate 4, border: preserve
    (EXAMPLES / "jacobi3d.soda", (6, 20, 23), (9, 10)),  # both inner axes tiled
    (CORPUS / "soda" / "blur.soda", (12, 40), (13,)),  # asymmetric halo: 0 low, 2 high
    (CORPUS / "soda" / "denoise2d.soda", (16, 30), (12,)),  # two inputs, a DAG of 8 stencils
    (CORPUS / "soda" / "sobel2d.soda", (10, 30), (8,)),  # integers
]


@pytest.mark.parametrize(
    ("path", "shape", "tile"), TILED, ids=lambda v: v.name if isinstance(v, Path) else ""
)
def test_tiles_reproduce_the_untiled_result(
    path: Path, shape: tuple[int, ...], tile: tuple[int, ...]
) -> None:
    if not path.is_file():
        pytest.skip(f"{path} absent")
    from stencilmap.program import load_program

    program = bind_shape(load_program(path), {}, shape)
    design = build("soda", program, BuildConfig(tile=tile))
    assert dict(design.parameters)["tiles_total"] > 1
    assert all(h <= 4 for h in program_halo(program).low)
    inputs = make_inputs(program, {}, seed=3)
    whole = run_reference(program, inputs)
    tiled = run_tiled(program, design, inputs)
    for name in program.outputs:
        np.testing.assert_array_equal(tiled[name], whole.outputs[name])
