"""Property tests: random programs (``tests.strategies.programs``) under every builder, with random k / W
and iterate, and SODA designs tiled narrower than the grid, all simulate to the reference's values.

Excluded, each an open defect with a strict xfail in ``test_bugs`` (drop the exclusion when it passes):

* ``border: preserve`` with a constant or copy boundary (``test_preserve_keeps_only_undefined_points``);
* a stencil reading a field only behind the point (largest linearized offset < 0), under every builder
  (``test_backward_only_window_next_to_a_broadcast_sibling``);
* int32 programs whose arithmetic leaves int32 (found by running the reference in int64 too): signed
  overflow and out-of-range float → int conversion are undefined in C, and the simulator's wrapped
  products are inexact past 2⁵³ (``test_integer_products_wrap_exactly``,
  ``test_out_of_range_float_to_int_conversion``).

``border: preserve`` when the output does not read its input at the centre is a stated simulator limit
(it raises a StencilmapError); such programs are skipped too.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stencilmap.analysis.windows import access_sets, max_forward_offset
from stencilmap.backends.reference import run_reference
from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.io import Array
from stencilmap.program.ir import Program
from tests.sim.helpers import built, explain, lanes_config, run_design
from tests.strategies import programs

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def known_defect(program: Program, design: Design) -> bool:
    """Programs and designs the open defects of ``test_bugs`` affect (module docstring)."""
    if program.border == "preserve" and any(
        b.kind != "shrink" for s in program.stencils for _, b in s.boundary
    ):
        return True
    stream = dict(design.parameters).get("stream_shape")
    shape = stream if isinstance(stream, tuple) else tuple(int(n or 0) for n in program.shape)
    shape = tuple(int(n) for n in shape)
    return any(max_forward_offset(program, s, f, shape) < 0 for s in program.stencils for f in access_sets(s))


def overflows(program: Program, values: dict[str, Array]) -> bool:
    """An int32 program whose arithmetic leaves int32 somewhere: the same program in int64 disagrees at a
    defined point. C leaves signed overflow and out-of-range float → int conversion undefined (and the
    simulator's wrapped products are inexact past 2⁵³: ``test_bugs``)."""
    if all(i.dtype != "int32" for i in program.inputs):
        return False
    wide = replace(
        program,
        inputs=tuple(replace(i, dtype="int64") for i in program.inputs),
        stencils=tuple(replace(s, dtype="int64") for s in program.stencils),
    )
    narrow = run_reference(program, values)
    widened = run_reference(wide, {k: v.astype(np.int64) for k, v in values.items()})
    return any(
        not np.array_equal(narrow.outputs[o][narrow.defined[o]], widened.outputs[o][narrow.defined[o]])
        for o in program.outputs
    )


def check(program: Program, arch: str, config: BuildConfig) -> None:
    try:
        program, design = built(program, arch, config)
    except StencilmapError:
        assume(False)  # the builder does not apply (e.g. a tile within the halo)
    assume(not known_defect(program, design))
    try:
        run = run_design(program, design)
    except StencilmapError as exc:
        assume("border: preserve needs" not in exc.message)
        raise
    assume(run.validation.valid or not overflows(program, run.values))
    assert run.validation.valid, explain(run)


@st.composite
def iterated(draw: st.DrawFn) -> Program:
    """A random program, chained 1–3 times when it has one input (output i feeds input i)."""
    program = draw(programs())
    q = draw(st.integers(1, 3)) if len(program.inputs) == 1 else 1
    try:
        return with_iterate(program, q)
    except StencilmapError:
        return program


@SETTINGS
@given(iterated(), st.integers(1, 4))
def test_random_programs_on_soda(program: Program, k: int) -> None:
    check(program, "soda", lanes_config("soda", k))


@SETTINGS
@given(iterated(), st.integers(1, 4))
def test_random_programs_on_stencilflow(program: Program, w: int) -> None:
    check(program, "stencilflow", lanes_config("stencilflow", w))


@SETTINGS
@given(iterated(), st.integers(1, 4))
def test_random_programs_on_the_pcm(program: Program, p_cell: int) -> None:
    check(program, "pcm", lanes_config("pcm", p_cell))


@st.composite
def tiled(draw: st.DrawFn) -> tuple[Program, BuildConfig]:
    """A random 2-D or 3-D program on a grid wider than its tiles: tiles narrower than every inner axis."""
    program = draw(programs().filter(lambda p: p.rank >= 2 and all(len(i.axes) == p.rank for i in p.inputs)))
    shape = (draw(st.integers(2, 4)), *(draw(st.integers(8, 16)) for _ in range(program.rank - 1)))
    tile = tuple(draw(st.integers(5, n - 1)) for n in shape[1:])
    return program.with_shape(shape), BuildConfig(unroll=draw(st.integers(1, 3)), tile=tile)


@SETTINGS
@given(tiled())
def test_random_programs_on_tiled_soda(case: tuple[Program, BuildConfig]) -> None:
    program, config = case
    try:
        _, design = built(program, "soda", config)
    except StencilmapError:
        assume(False)
    tiles = dict(design.parameters)["tiles_total"]
    assert isinstance(tiles, int) and tiles > 1
    check(program, "soda", config)
