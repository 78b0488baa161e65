"""``design_to_json`` / ``design_from_json``: every builder's designs of every example round-trip exactly,
through JSON text; malformed files are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stencilmap.design.registry import BuildConfig, build
from stencilmap.design.serialize import design_from_json, design_to_json
from stencilmap.errors import StencilmapError
from tests.conftest import EXAMPLE_FILES
from tests.design.helpers import bound

CASES = [
    (path, arch, config)
    for path in EXAMPLE_FILES
    for arch, config in (
        [("soda", BuildConfig()), ("soda", BuildConfig(unroll=2, iterate=2, tile=(16,) * (len(bound(path).shape) - 1))),
         ("pcm", BuildConfig(unroll=2, iterate=3)), ("emax", BuildConfig())]
        if path.suffix == ".soda"
        else [("stencilflow", BuildConfig()), ("stencilflow", BuildConfig(vector=2, delay_buffers="min"))]
    )
]  # fmt: skip


@pytest.mark.parametrize(("path", "arch", "config"), CASES, ids=lambda x: getattr(x, "name", str(x)))
def test_designs_round_trip_exactly(path: Path, arch: str, config: BuildConfig) -> None:
    try:
        design = build(arch, bound(path), config)
    except StencilmapError as exc:  # e.g. a tile too small for this program's halo
        pytest.skip(exc.message)
    again = design_from_json(json.loads(json.dumps(design_to_json(design))))
    assert again == design
    assert again.notes == design.notes
    assert [type(v) for _, v in again.parameters] == [type(v) for _, v in design.parameters]
    for a, b in zip(again.modules, design.modules, strict=True):
        assert [type(v) for _, v in a.params] == [type(v) for _, v in b.params]
    assert json.dumps(design_to_json(again)) == json.dumps(design_to_json(design))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"format": "other"}, "not a stencilmap design"),
        ({"format": "stencilmap-design", "version": 99}, "version 99"),
        ({"format": "stencilmap-design", "version": 1, "name": "x"}, "malformed design file"),
    ],
)
def test_malformed_files_are_one_line_errors(data: object, message: str) -> None:
    with pytest.raises(StencilmapError, match=message):
        design_from_json(data)
