"""design.json round-trips every builder's design exactly; damaged files are refused with a reason."""

from __future__ import annotations

import json

import pytest

from stencilmap.design.registry import BuildConfig, build
from stencilmap.design.serialize import design_from_json, design_to_json
from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import EXAMPLES


@pytest.mark.parametrize(
    ("example", "arch", "config"),
    [
        ("jacobi2d.soda", "soda", BuildConfig(unroll=2, iterate=2, tile=(16,))),
        ("dag_listing1.json", "stencilflow", BuildConfig(vector=2)),
        ("laplace2d.soda", "pcm", BuildConfig(unroll=2, iterate=3)),
        ("jacobi3d.soda", "emax", BuildConfig(unroll=2)),
    ],
)
def test_round_trip_is_exact(example: str, arch: str, config: BuildConfig) -> None:
    program = bind_shape(load_program(EXAMPLES / example), {}, None)
    if arch == "emax":
        program = program.with_shape((8, 16, 16))
    design = build(arch, program, config)
    text = design_to_json(design)
    again = design_from_json(text)
    assert again == design and again.notes == design.notes
    assert design_to_json(again) == text  # deterministic


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda d: d.update(format="other"), "not a stencilmap design"),
        (lambda d: d["channels"][0].update(depth="x"), "not a stencilmap design"),
        (lambda d: d["channels"].pop(), "no"),  # verify_design: a port left unfed
    ],
)
def test_damaged_files_are_refused(edit: object, reason: str) -> None:
    program = bind_shape(load_program(EXAMPLES / "jacobi2d.soda"), {}, (16, 16))
    doc = json.loads(design_to_json(build("soda", program, BuildConfig(unroll=2))))
    edit(doc)  # type: ignore[operator]
    with pytest.raises(StencilmapError, match=reason):
        design_from_json(json.dumps(doc))
