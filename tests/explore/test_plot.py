"""The design-space picture: the Pareto front, PNG and SVG files written atomically and reproducibly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stencilmap.errors import StencilmapError
from stencilmap.explore import explore
from stencilmap.explore.plot import pareto_front, write_space_plot
from tests.explore.helpers import config


def test_pareto_front() -> None:
    util = np.array([0.5, 0.2, 0.9, 0.3, 0.6, 0.2])
    seconds = np.array([2.0, 5.0, 1.0, 3.0, 2.5, 6.0])
    u, t = pareto_front(util, seconds)
    assert list(u) == [0.2, 0.3, 0.5, 0.9] and list(t) == [5.0, 3.0, 2.0, 1.0]


def test_png_and_svg(tmp_path: Path) -> None:
    result = explore(config("jacobi2d.soda", "ku060", (256, 1024), 50, max_iterate=50))
    png, svg = tmp_path / "space.png", tmp_path / "sub" / "space.svg"
    write_space_plot(png, result)
    write_space_plot(svg, result)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    first = svg.read_bytes()
    write_space_plot(svg, result)
    assert svg.read_bytes() == first  # no date, a fixed hash salt
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left
    with pytest.raises(StencilmapError, match=r"\.png or \.svg"):
        write_space_plot(tmp_path / "space.pdf", result)
