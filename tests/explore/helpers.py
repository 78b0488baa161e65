"""Small explorations shared by the explorer's tests."""

from __future__ import annotations

from stencilmap.explore import ExploreConfig
from tests.conftest import EXAMPLES


def config(
    name: str, device: str, shape: tuple[int, ...], iterations: int = 1, **kw: object
) -> ExploreConfig:
    """A small space: q ≤ 8, 4 tile sizes per axis, no simulation unless asked."""
    options: dict[str, object] = {"max_iterate": 8, "tiles_per_axis": 4, "simulate": False, **kw}
    return ExploreConfig(
        program=EXAMPLES / name, device=device, iterations=iterations, shape=shape, **options
    )  # type: ignore[arg-type]
