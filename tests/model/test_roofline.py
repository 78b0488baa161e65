"""The roofline job and its picture."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.errors import StencilmapError
from stencilmap.model.roofline import RooflineConfig, roofline
from tests.model.helpers import example


def test_png_and_svg_plots(tmp_path: Path) -> None:
    png = tmp_path / "out" / "r.png"
    report = roofline(RooflineConfig(example("stencil1d_r8.json"), "cgra-tia", plot=png))
    assert report.plot == png
    assert png.read_bytes().startswith(b"\x89PNG")
    assert not [p for p in png.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind
    svg = tmp_path / "r.svg"
    roofline(RooflineConfig(example("jacobi2d.soda"), "ku060", plot=svg))
    first = svg.read_text()
    assert first.startswith("<?xml") and "operational intensity (op/byte)" in first
    roofline(RooflineConfig(example("jacobi2d.soda"), "ku060", plot=svg))
    assert svg.read_text() == first  # deterministic


def test_bad_plot_suffix(tmp_path: Path) -> None:
    with pytest.raises(StencilmapError, match=r"\.png or \.svg"):
        roofline(RooflineConfig(example("jacobi2d.soda"), "ku060", plot=tmp_path / "r.pdf"))
    assert not list(tmp_path.iterdir())


def test_iterate_chains_steps_on_chip() -> None:
    one = roofline(RooflineConfig(example("laplace2d.soda"), "de5", iterate=1))
    many = roofline(RooflineConfig(example("laplace2d.soda"), "de5", iterate=40))
    assert many.operational_intensity == pytest.approx(40 * one.operational_intensity)
    assert one.bound == "bandwidth" and many.bound == "compute"
    assert many.attainable_gops == many.peak_gops == 196.0  # OpenCL Table 3, DE5
