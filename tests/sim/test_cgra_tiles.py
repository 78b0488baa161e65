"""CGRA tiles (CGRA §VIII-A): ``--tiles n`` splits the grid's outermost axis over n fabrics, each with its
own workers and bandwidth; the tiles' outputs stitched are the reference's, the model and the simulator
agree, and on a large grid 16 tiles take about a 16th of one tile's cycles (work bounded: cycles, never
the wall clock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.design.cgra.tiles import band, split_tiles, tile_program
from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import EXAMPLES

runner = CliRunner()
S1D = str(EXAMPLES / "stencil1d_r8.json")
S2D = str(EXAMPLES / "stencil2d_r12.json")


def _simulate(*args: str, tmp_path: Path) -> dict[str, object]:
    result = runner.invoke(simulate_cmd, [*args, "--arch", "cgra", "--json", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def _estimate(*args: str) -> dict[str, object]:
    result = runner.invoke(estimate_cmd, [*args, "--device", "cgra-tia", "--arch", "cgra", "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def test_tiles_cover_the_grid_with_halos() -> None:
    program = bind_shape(load_program(EXAMPLES / "stencil2d_r12.json"), {}, (100, 64))
    tiles = split_tiles(program, 4)
    assert [(t.lo, t.hi) for t in tiles] == [(0, 25), (25, 50), (50, 75), (75, 100)]
    assert [(t.slab_lo, t.slab_hi) for t in tiles] == [(0, 37), (13, 62), (38, 87), (63, 100)]
    assert tile_program(program, tiles[1]).shape == (49, 64)
    own, grid = band(tiles[1])
    assert (own.start, own.stop, grid.start, grid.stop) == (12, 37, 25, 50)
    with pytest.raises(StencilmapError, match="fewer than the tiles"):
        split_tiles(program, 101)


@pytest.mark.parametrize(
    ("program", "shape"),
    [
        (S1D, "4000"),  # linear 1-D: the tiles cut x
        (S2D, "96,80"),  # linear 2-D: the tiles cut y, 12 halo rows each side
        (str(EXAMPLES / "jacobi2d.soda"), "64,48"),  # border: preserve, 4 layers (the halo is 4 rows)
        (str(EXAMPLES / "heat3d.json"), None),  # a DAG with copy boundaries, 3-D
    ],
)
def test_tiled_simulation_is_valid_and_the_model_agrees(
    program: str, shape: str | None, tmp_path: Path
) -> None:
    args = [program, "--tiles", "4", *(["--shape", shape] if shape else [])]
    sim = _simulate(*args, tmp_path=tmp_path)
    cgra = sim["cgra"]
    assert isinstance(cgra, dict) and sim["valid"] and cgra["tiles"] == 4 and len(cgra["tile_cycles"]) == 4
    assert sim["cycles"] == max(cgra["tile_cycles"])
    est = _estimate(*args)
    assert est["parameters"]["tiles"] == 4
    assert est["predicted_cycles"] == cgra["predicted_cycles"] == max(cgra["predicted_tile_cycles"])
    assert abs(int(est["predicted_cycles"]) - int(sim["cycles"])) <= max(40, 0.1 * int(sim["cycles"]))


def test_sixteen_tiles_are_about_sixteen_times_one_on_a_large_grid(tmp_path: Path) -> None:
    """1-D r = 8 on 16 × 20,000 points: one tile's work is the whole grid's, each of 16 tiles a 16th."""
    args = [S1D, "--shape", "320000"]
    one = _simulate(*args, tmp_path=tmp_path / "one")
    sixteen = _simulate(*args, "--tiles", "16", tmp_path=tmp_path / "sixteen")
    assert one["valid"] and sixteen["valid"]
    speedup = int(one["cycles"]) / int(sixteen["cycles"])
    assert 14.5 < speedup <= 16.0, speedup
    est_one, est_16 = _estimate(*args), _estimate(*args, "--tiles", "16")
    predicted = int(est_one["predicted_cycles"]) / int(est_16["predicted_cycles"])
    assert 15.0 < predicted <= 16.0 and abs(predicted - speedup) < 0.05 * speedup
    assert abs(float(est_16["roofline_gops"]) - 16 * float(est_one["roofline_gops"])) < 1e-6 * float(
        est_16["roofline_gops"]
    )


def test_tiles_are_a_cgra_option() -> None:
    result = runner.invoke(simulate_cmd, [S1D, "--arch", "soda", "--tiles", "4"])
    assert result.exit_code == 2 and "--tiles does not apply" in result.output
    for device in ("ku060", "v100"):
        result = runner.invoke(estimate_cmd, [S1D, "--device", device, "--tiles", "4"])
        assert result.exit_code == 2 and "--tiles does not apply" in result.output
