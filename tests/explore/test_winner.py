"""Simulating the winner: the scaling rule, and the simulated cycles against the model's."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from stencilmap.explore import Candidate, design_space, explore
from stencilmap.explore import winner as winner_module
from stencilmap.explore.winner import check_winner, scaled_shape
from tests.explore.helpers import config


def candidate(
    arch: str = "soda", lanes: int = 4, q: int = 2, tile: tuple[int, ...] | None = None
) -> Candidate:
    return Candidate(arch, lanes, q, tile, 1, 0.0, 1, 1.0, "compute", (("lut", 0.5),), (("lut", 1.0),))


def program(name: str, shape: tuple[int, ...]):  # type: ignore[no-untyped-def]
    return design_space(config(name, "ku060", shape)).program


def test_small_grids_are_simulated_as_they_are() -> None:
    assert scaled_shape(program("jacobi2d.soda", (64, 256)), candidate(), 1 << 17) == (64, 256)


def test_rows_keep_their_length_and_the_outer_axis_shrinks() -> None:
    assert scaled_shape(program("jacobi2d.soda", (4096, 4096)), candidate(), 1 << 17) == (32, 4096)
    # q = 20 stages need 2·q·2 + 16 = 96 rows whatever the cap
    assert scaled_shape(program("jacobi2d.soda", (4096, 4096)), candidate(q=20), 1 << 17) == (96, 4096)


def test_a_tiled_axis_keeps_its_tile_and_two_tiles() -> None:
    shape = scaled_shape(program("jacobi2d.soda", (4096, 4096)), candidate(q=2, tile=(1024,)), 1 << 17)
    assert shape == (64, 1024 + 1024 - 2 * 2)


def test_a_large_plane_is_halved_down_to_cap_over_16() -> None:
    shape = scaled_shape(program("heat3d.json", (256, 512, 512)), candidate(q=1), 1 << 17)
    assert shape[1] * shape[2] <= (1 << 17) // 16 and shape[2] == 128
    assert shape[0] == 2 * 1 * 2 + 16  # cap / plane = 16 rows, but the halo floor is 20


def test_the_simulated_winner_agrees_with_the_model() -> None:
    """A StencilFlow winner on a scaled-down grid, at the device's per-bank bandwidth: within 2%."""
    cfg = config("jacobi2d.soda", "ku060", (2048, 2048), 64, archs=("stencilflow",), simulate=True)
    result = explore(replace(cfg, max_iterate=64, sim_points=1 << 15))
    w = result.winner
    assert w is not None and w.status == "done" and w.scaled
    q = result.top[0].iterate
    assert w.shape == (max(16, 2 * q * 2 + 16), 2048)
    # a bank's bytes per cycle at the winner's clock (the ku060's clock model at its LUT utilization)
    assert w.bytes_per_cycle_per_bank == pytest.approx(21.504e9 / 2 / (result.top[0].clock_mhz * 1e6))
    assert w.prediction_error is not None and abs(w.prediction_error) <= 0.02
    assert result.to_json()["best"]["prediction_error"] == w.prediction_error


def test_a_deadlocked_simulation_has_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    stuck = SimpleNamespace(
        status="deadlock", cycles=99, deadlock=SimpleNamespace(cycle_of_waits=("a", "b", "a"))
    )
    monkeypatch.setattr(winner_module, "simulate", lambda *args, **kw: stuck)
    space = design_space(config("jacobi2d.soda", "ku060", (64, 256)))
    w = check_winner(space, candidate(), 1 << 17, lambda *a: None)
    assert w.status == "deadlock" and w.prediction_error is None and "a → b → a" in w.note
