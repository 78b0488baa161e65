"""The cpu backend's generated C: points that no read can define (``border: preserve``) are copied from the
preserved input instead of computed — whole rows beyond an outer axis's end with one ``memcpy``, a row's end
points one by one — and only where a ``shrink`` read makes them so; the results equal the reference on every
scheme, with masks, constant and copy boundaries mixed in."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stencilmap.backends.cgen import generate, split
from stencilmap.backends.cpu import run_cpu
from stencilmap.backends.plan import make_plan
from stencilmap.backends.reference import run_reference
from stencilmap.program import Program
from stencilmap.program.data import make_inputs
from tests.backends.common import assert_matches
from tests.backends.test_cpu import sf, soda
from tests.backends.test_cvec import J3D


def mixed(border: str) -> Program:
    """Reads of ``a`` shrink, reads of ``c`` take a constant beyond the ends (never undefine a point), and
    ``b`` (shrunk) is read with a copy boundary: masks the preserved input must carry along."""
    prog = {
        "inputs": {"a": {"data_type": "float32"}, "c": {"data_type": "float32"}},
        "outputs": ["d"],
        "dimensions": [9, 11, 37],
        "program": {
            "b": {"computation_string": "b = a[i, j, k+1] - a[i, j-1, k]", "boundary_conditions": "shrink",
                  "data_type": "float32"},
            "d": {"computation_string": "d = b[i-1, j, k] + a[i+1, j, k-1] * 0.5 + c[i, j+2, k-2]",
                  "boundary_conditions": {"a": {"type": "shrink"}, "b": {"type": "copy"},
                                          "c": {"type": "constant", "value": 1.5}},
                  "data_type": "float32"},
        },
    }  # fmt: skip
    return replace(sf(prog), iterate=5, border=border)


def check(p: Program, **options: object) -> None:
    values = make_inputs(p, {}, 7)
    got, _ = run_cpu(p, values, threads=2, **options)  # type: ignore[arg-type]
    assert_matches(p, run_reference(p, values), got)


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize("scheme", ["tiles", "wave"])
@pytest.mark.parametrize("tile", [None, (3, 4, 16), (12, 10, 40)])
def test_dead_points_equal_the_reference(border: str, scheme: str, tile: tuple[int, ...] | None) -> None:
    for p in (soda(J3D.format(border=border), (12, 10, 40), 7), mixed(border)):
        check(p, scheme=scheme, block=3, tile=tile if tile is None else tile[: p.rank])
        check(p, scheme=scheme, block=1, nt=True)


def test_dead_rows_are_copied_under_preserve_only() -> None:
    preserve = generate(make_plan(soda(J3D.format(border="preserve"), (12, 10, 40), 7)))
    edge = preserve[preserve.index("void edge_0") : preserve.index("SM_ST void st_0")]
    assert "memcpy(&d_v[" in edge  # the rows at the ends of axes 0 and 1
    assert "(uint64_t)(g0 + -1) >= (uint64_t)n0" in edge and "(uint64_t)(g1 + 1) >= (uint64_t)n1" in edge
    assert "(uint64_t)(g2 + -1) >= (uint64_t)n2" not in edge  # the last axis: the end points' own copy
    assert "continue;" in preserve[preserve.index("SM_ST void st_0") :]
    ignore = generate(make_plan(soda(J3D.format(border="ignore"), (12, 10, 40), 7)))
    assert "memcpy(&d_v[" not in ignore


def test_a_read_with_a_constant_boundary_never_makes_a_dead_row() -> None:
    src = generate(make_plan(mixed("preserve")))
    edge = src[src.index("void edge_1") : src.index("SM_ST void st_1")]
    assert "(uint64_t)(g0 + 1) >= (uint64_t)n0" in edge  # a[i+1, ...] shrinks
    assert "(g1 + 2) >= (uint64_t)n1" not in edge  # c[i, j+2, ...] takes 1.5 beyond the end
    assert "(uint64_t)(g0 + -1) >= (uint64_t)n0" not in edge  # b[i-1, ...] copies its centre


@pytest.mark.parametrize("ways", [1, 2, 3, 16])
def test_a_split_build_compiles_every_part_once(ways: int) -> None:
    """``split`` deals each stencil's two parts (loop nest, edge) and the driver's to exactly one unit, never
    more units than parts."""
    src = generate(make_plan(mixed("preserve")))
    names = {"-DSM_PART_0", "-DSM_PART_0E", "-DSM_PART_1", "-DSM_PART_1E", "-DSM_PART_DRIVER"}
    units = split(src, ways)
    if ways == 1:
        assert units == ()
        return
    assert len(units) == min(ways, 5) and all(u[0] == "-DSM_SPLIT" for u in units)
    dealt = [f for u in units for f in u[1:]]
    assert sorted(dealt) == sorted(names)
    assert src.count("#if !defined(SM_SPLIT) || defined(SM_PART_") == 5


def chain(n: int, iterate: int = 1) -> Program:
    """n 3-D stencils in a row, s_t reading s_{t-1} (``a`` for s0) and every third one also ``c``: three
    kinds of stencil functions whatever n, their fields in other slots along the chain."""
    program = {}
    prev = "a"
    for t in range(n):
        extra = " + 0.5 * c[i, j, k+1]" if t % 3 == 0 else f" + 0.125 * {prev}[i, j-1, k]"
        program[f"s{t}"] = {
            "computation_string": f"s{t} = 0.25 * ({prev}[i-1, j, k] + {prev}[i+1, j, k]){extra}",
            "boundary_conditions": {prev: {"type": "constant", "value": 0.5}, "c": {"type": "copy"}},
            "data_type": "float32",
        }
        prev = f"s{t}"
    inputs = {"a": {"data_type": "float32"}, "c": {"data_type": "float32"}}
    p = sf({"inputs": inputs, "outputs": [prev], "dimensions": [6, 7, 19], "program": program}, iterate)
    return replace(p, feedback=((prev, "a"),)) if iterate > 1 else p


def test_stencils_that_read_alike_share_one_function() -> None:
    """A 200-stencil chain compiles a handful of stencil functions, not 200 (work bounded whatever the
    length): each function's text reads its fields through its own slots, the driver gathers them."""
    src = generate(make_plan(chain(200)))
    defined = [line for line in src.splitlines() if line.startswith("SM_ST void st_") and line.endswith("{")]
    assert 2 <= len(defined) <= 6
    assert src.count("#if !defined(SM_SPLIT) || defined(SM_PART_") == 2 * len(defined) + 1
    table = next(line for line in src.splitlines() if line.startswith("static const sm_fn FN[SM_NS]"))
    assert table.count("st_") == 200


@pytest.mark.parametrize("scheme", ["tiles", "wave"])
def test_shared_functions_equal_the_reference(scheme: str) -> None:
    """The chain's shared functions on their gathered fields, two steps fused: the reference's values."""
    check(chain(13, iterate=2), scheme=scheme)
