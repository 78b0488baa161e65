"""Register reuse along rows (``cvec``): which stencils get the vector loop, and that its results equal the
reference bit for bit on rows long enough to run it, with every scheme, border and odd tile."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stencilmap.backends import cgen, cvec
from stencilmap.backends.cpu import run_cpu
from stencilmap.backends.plan import make_plan
from stencilmap.backends.reference import run_reference
from stencilmap.program import Program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from tests.backends.common import assert_matches

#: (soda writes the last axis first.) Reads from 3 left to 2 right of the point, subtraction, division and a negative literal.
WIDE = """kernel: wide
input float: a(16, *)
output float: b(0, 0) = (a(-3, 0) - a(2, 0) * 0.5f + a(1, 1) / 3.0f - a(-1, -1) + a(0, 0)) * -0.25f
iterate: 2
border: {border}
"""
#: Reads right of the point only, up to the widest offset the vector loop takes (15).
RIGHT = """kernel: right
input float: a(16, *)
output float: b(0, 0) = (a(0, 0) + a(5, 0) * 2.0f + a(15, 1)) * 0.25f
iterate: 2
border: {border}
"""
J3D = """kernel: j3
input float: a(8, 8, *)
output float: b(0, 0, 0) = (a(0, 0, -1) + a(0, -1, 0) + a(-1, 0, 0) + a(0, 0, 0) + a(1, 0, 0)
  + a(0, 1, 0) + a(0, 0, 1)) * 0.142857f
iterate: 2
border: {border}
"""


def soda(text: str, shape: tuple[int, ...], iterate: int) -> Program:
    return replace(bind_shape(parse_soda(text, "t.soda"), {}, shape), iterate=iterate)


def test_vector_expr_takes_arithmetic_of_reads_and_float_literals() -> None:
    text = "((float)((((float)((r0) + (r1)))) - (t2))) * (((float)-0x1.99999a0000000p-3))"
    assert cvec.vector_expr(text) == "((((((r0) + (r1)))) - (t2))) * ((-0x1.99999a0000000p-3f))"
    assert cvec.vector_expr("sm_fmod_f32(r0, r1)") is None
    assert cvec.vector_expr("(r0 < r1) ? r0 : r1") is None
    assert cvec.vector_expr("(float)(r0 * p0[3])") is None
    assert cvec.vector_expr("((double)r0)") is None


@pytest.mark.parametrize(
    ("text", "vector"),
    [
        (WIDE, True),
        (RIGHT, True),
        (J3D, True),
        (WIDE.replace("float", "double").replace("f ", " ").replace("f\n", "\n"), False),  # not float32
        (RIGHT.replace("a(15, 1)", "a(16, 1)"), False),  # an offset of a whole vector
        (RIGHT.replace("(a(0, 0)", "(sqrt(a(0, 0))"), False),  # a call
    ],
)
def test_which_stencils_get_the_vector_loop(text: str, vector: bool) -> None:
    rank = 3 if "a(8, 8" in text else 2
    p = soda(text.format(border="preserve"), (40,) * rank, 2)
    assert ("const sm_vf v = " in cgen.generate(make_plan(p))) is vector


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize("text", [WIDE, RIGHT], ids=["wide", "right"])
@pytest.mark.parametrize(
    ("shape", "scheme", "block", "tile", "nt"),
    [
        ((37, 131), None, None, None, None),
        ((37, 131), "wave", 2, (37, 131), False),
        ((37, 131), "wave", 2, (16, 53), True),
        ((29, 200), "tiles", 2, (7, 64), False),
        ((29, 200), "tiles", 1, (29, 200), True),
        ((23, 47), "wave", 2, (23, 47), False),  # rows just long enough for one vector block
    ],
)
def test_2d_rows_equal_the_reference(
    text: str,
    border: str,
    shape: tuple[int, int],
    scheme: str | None,
    block: int | None,
    tile: tuple[int, int] | None,
    nt: bool | None,
) -> None:
    p = soda(text.format(border=border), shape, 3)
    values = make_inputs(p, {}, 3)
    got, _ = run_cpu(p, values, threads=2, block=block, tile=tile, scheme=scheme, nt=nt)
    assert_matches(p, run_reference(p, values), got)


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(("scheme", "tile"), [("wave", (11, 5, 97)), ("tiles", (4, 6, 64)), (None, None)])
def test_3d_rows_equal_the_reference(
    border: str, scheme: str | None, tile: tuple[int, int, int] | None
) -> None:
    p = soda(J3D.format(border=border), (11, 13, 97), 4)
    values = make_inputs(p, {}, 4)
    got, _ = run_cpu(p, values, threads=2, block=2, tile=tile, scheme=scheme)
    assert_matches(p, run_reference(p, values), got)


#: Reads two points along the last axis and along axis 1 on either side (SODA's first index is the last axis).
WIDE3D = """kernel: w3
input float: a(8, 8, *)
output float: b(0, 0, 0) = (a(-2, 0, 0) + a(2, 0, 0) * 0.5f + a(0, -2, 0) - a(1, 2, 1) + a(0, 0, -1)) * 0.2f
iterate: 2
border: {border}
"""


@pytest.mark.parametrize("text", [J3D, WIDE3D])
@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(
    ("scheme", "tile", "planes"),
    [
        ("wave", (11, 5, 64), 1),  # rings whose rows are the grid's: each plane's interior rows in one run
        ("wave", (11, 13, 64), 3),
        ("wave", (11, 6, 32), 2),  # half rows: row by row
        ("tiles", (4, 6, 64), None),
        ("tiles", (11, 13, 64), None),
    ],
)
def test_3d_interior_rows_as_one_run_equal_the_reference(
    text: str, border: str, scheme: str, tile: tuple[int, int, int], planes: int | None
) -> None:
    """Rows of 64 points (a multiple of 16: the wave's rings then have the grid's rows): the stages that read
    rings run each plane's interior rows as one (``cgen._runs``), their ends recomputed after; the first
    stage and the overlapped tiles, which read the input straight, go row by row. Bit for bit the
    reference's either way."""
    p = soda(text.format(border=border), (11, 13, 64), 3)
    values = make_inputs(p, {}, 6)
    got, _ = run_cpu(p, values, threads=2, block=2, tile=tile, scheme=scheme, planes=planes)
    assert_matches(p, run_reference(p, values), got)


def test_flat_rows_only_for_vector_stencils_of_rank_3() -> None:
    """The one-run path is generated for the vector loop's stencils of rank ≥ 3, with its guard (whole rows,
    rows back to back in every buffer, inputs in rings: read straight, they are prefetched row by row); 2-D
    rows and other stencils keep the row-by-row loop."""
    src3 = cgen.generate(make_plan(soda(J3D.format(border="preserve"), (11, 13, 64), 3)))
    assert "const int flat = lo[2] == 0 && hi[2] == n2 && d_s1 == n2 && f0_s1 == n2 && f0_k;" in src3
    src2 = cgen.generate(make_plan(soda(WIDE.format(border="preserve"), (11, 64), 3)))
    assert "const int flat" not in src2
    dbl = (
        J3D.replace("input float", "input double")
        .replace("output float", "output double")
        .replace("f\n", "\n")
    )
    assert "const int flat" not in cgen.generate(
        make_plan(soda(dbl.format(border="preserve"), (11, 13, 64), 3))
    )


#: Two stencils (a local between), reads two planes up and one down along axis 0, temporaries in between.
CHAIN3D = """kernel: c3
input float: a(8, 8, *)
local float: t(0, 0, 0) = a(0, 0, -1) + a(1, 0, 2) * 0.5f - a(-1, 1, 0)
output float: b(0, 0, 0) = (t(0, 0, 1) + t(0, -1, 0) - t(1, 0, 0) + t(-1, 1, -1)) * 0.25f + a(0, 0, 0)
iterate: 3
border: {border}
"""


@pytest.mark.parametrize("text", [J3D, WIDE3D, CHAIN3D])
@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(
    ("scheme", "tile", "planes"),
    [
        ("wave", (13, 13, 64), 4),  # 4 planes a tick, computed at once; the chunk's last tick short
        ("wave", (13, 7, 64), 5),  # 4 at once, then one
        ("wave", (6, 13, 32), 8),  # half rows: a run is a row, 4 planes at once
        ("tiles", (13, 13, 64), None),  # whole tiles: 4 at once to the last few
        ("tiles", (3, 13, 64), None),  # too few planes to join
    ],
)
def test_planes_at_once_equal_the_reference(
    text: str, border: str, scheme: str, tile: tuple[int, int, int], planes: int | None
) -> None:
    """Rows of several planes computed in one vector loop (``cgen.joint_planes``), the reads they share
    loaded once: on every scheme, tails of fewer planes, planes at the grid's ends, bit for bit."""
    p = soda(text.format(border=border), (13, 13, 64), 5)
    values = make_inputs(p, {}, 8)
    got, _ = run_cpu(p, values, threads=2, block=3, tile=tile, scheme=scheme, planes=planes)
    assert_matches(p, run_reference(p, values), got)


def test_planes_at_once_where_the_registers_hold_them() -> None:
    """Four planes of a 7-point step (14 rows and 4 left neighbours live: 18 vectors), two of a 27-point box
    (12 rows, each with its left neighbours: 24), one of a 125-point box (a big window)."""
    j3 = soda(J3D.format(border="preserve"), (8, 8, 64), 2)
    assert "const int64_t g0p = g0;" in cgen.generate(make_plan(j3))

    def box(r: int) -> Program:
        terms = " + ".join(
            f"a({i}, {j}, {k})" for i in range(-r, r + 1) for j in range(-r, r + 1) for k in range(-r, r + 1)
        )
        text = f"kernel: box\ninput float: a(8, 8, *)\noutput float: b(0, 0, 0) = {terms}\niterate: 2\nborder: preserve\n"
        return soda(text, (8, 8, 64), 2)

    plans = [make_plan(p) for p in (j3, box(1), box(2))]
    assert [cgen.joint_planes(pl, pl.order[0]) for pl in plans] == [4, 2, 1]
    assert [cvec.joint_groups(pl, pl.order[0], 4) for pl in plans[:2]] == [14 + 4, 6 * 3 * 2]
    wide = make_plan(soda(WIDE.format(border="preserve"), (16, 64), 2))
    assert cgen.joint_planes(wide, wide.order[0]) == 4  # 2-D: rows of 4 planes (rows) at once
    assert "const int64_t g0p = g0;" in cgen.generate(wide)


@pytest.mark.parametrize("text", [WIDE, RIGHT])
@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(
    ("scheme", "tile", "planes"),
    [
        ("wave", (29, 64), 4),  # 4 rows a tick, at once
        ("wave", (9, 32), 6),  # 4 at once, then 2 one by one; half rows
        ("tiles", (29, 64), None),
        ("tiles", (3, 64), None),  # too few rows to join
    ],
)
def test_2d_rows_at_once_equal_the_reference(
    text: str, border: str, scheme: str, tile: tuple[int, int], planes: int | None
) -> None:
    """2-D: several rows in one vector loop, the rows they read in common loaded once; ends of axis 0 too."""
    p = soda(text.format(border=border), (29, 64), 7)
    values = make_inputs(p, {}, 9)
    got, _ = run_cpu(p, values, threads=2, block=3, tile=tile, scheme=scheme, planes=planes)
    assert_matches(p, run_reference(p, values), got)
