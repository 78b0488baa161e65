"""Property tests: random programs (``tests.strategies.programs``) under every builder, with random k / W
and iterate, and SODA designs tiled narrower than the grid, all simulate to the reference's values.

Excluded: ``border: preserve`` with a constant or copy boundary, which the simulator refuses
(``test_bugs.test_preserve_with_constant_or_copy_boundaries_is_refused``).

``border: preserve`` when the output does not read its input at the centre is a stated simulator limit
(it raises a StencilmapError); such programs are skipped too.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from tests.sim.helpers import built, explain, lanes_config, run_design
from tests.strategies import programs

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def known_defect(program: Program, design: Design) -> bool:
    """Programs and designs the open defects of ``test_bugs`` affect (module docstring)."""
    return program.border == "preserve" and any(
        b.kind != "shrink" for s in program.stencils for _, b in s.boundary
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
        assume("border: preserve" not in exc.message)  # the simulator's stated limits
        raise
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
