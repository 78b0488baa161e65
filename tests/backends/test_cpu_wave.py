"""The cpu backend's wavefront driver (``scheme="wave"``) equals the reference on awkward cases: tiny grids,
sizes that are no multiple of the tile, step counts that are no multiple of the block, halos of 2 and 3,
chained stencils, DAGs with several inputs, masks, lower-dimensional inputs, streaming stores on and off,
one plane a tick or several (``planes``, no multiple of the chunk)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stencilmap.backends import cost
from stencilmap.backends.cpu import run_cpu
from stencilmap.backends.plan import make_plan
from stencilmap.backends.reference import run_reference
from stencilmap.errors import StencilmapError
from stencilmap.program import Program
from stencilmap.program.data import make_inputs
from tests.backends.common import assert_matches
from tests.backends.test_cpu import RADIUS3, TWO_INPUTS_DAG, sf, soda
from tests.strategies import programs

CHAIN = """kernel: chain
input float: a(16, *)
local float: t1(0, 0) = a(0, 1) + a(-2, 0)
local float: t2(0, 0) = t1(1, -1) * 0.5f + t1(0, 0)
output float: b(0, 0) = t2(0, 2) - t2(-1, 0) + a(0, 0)
iterate: 2
border: {border}
"""

STAR3D = """kernel: star
input double: a(8, 9, *)
output double: b(0, 0, 0) = (a(0, 0, -2) + a(0, 1, 0) + a(-2, 0, 0) + a(0, 0, 0) + a(1, 0, 0)
  + a(0, -1, 1) + a(0, 0, 2)) * 0.125
iterate: 2
border: {border}
"""


def check(p: Program, seed: int, **options: object) -> None:
    values = make_inputs(p, {}, seed)
    got, _ = run_cpu(p, values, threads=2, scheme="wave", **options)  # type: ignore[arg-type]
    assert_matches(p, run_reference(p, values), got)


@pytest.mark.parametrize("planes", [1, 3])
@pytest.mark.parametrize("nt", [False, True])
@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(
    ("shape", "iterate", "block", "tile"),
    [
        ((31, 37), 7, 3, (31, 7)),  # primes; the last block is short
        ((13, 11), 5, 5, (64, 64)),  # one tile larger than the grid
        ((17, 19), 9, 4, (3, 3)),  # axis-0 chunks and tiles thinner than the halo
        ((7, 5), 12, 8, (2, 2)),  # halo of 3 × 8 steps ≫ grid
        ((1, 9), 3, 2, (1, 4)),  # a single plane
    ],
)
def test_radius_3(
    border: str,
    nt: bool,
    planes: int,
    shape: tuple[int, int],
    iterate: int,
    block: int,
    tile: tuple[int, int],
) -> None:
    check(
        soda(RADIUS3.format(border=border), shape, iterate), 1, block=block, tile=tile, nt=nt, planes=planes
    )


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(("block", "tile"), [(1, None), (4, (3, 5)), (6, (23, 2)), (3, (1, 1)), (5, (7, 29))])
def test_dag_with_two_inputs(border: str, block: int, tile: tuple[int, int] | None) -> None:
    check(soda(TWO_INPUTS_DAG.format(border=border), (23, 29), 6), 2, block=block, tile=tile, nt=block == 4)


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(("iterate", "block", "tile"), [(5, 2, (4, 3)), (7, 7, (19, 16)), (4, 3, (2, 40))])
def test_chained_stencils(border: str, iterate: int, block: int, tile: tuple[int, int]) -> None:
    for planes in (1, 2, 5):
        check(
            soda(CHAIN.format(border=border), (19, 16), iterate),
            3,
            block=block,
            tile=tile,
            nt=True,
            planes=planes,
        )


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(
    ("shape", "iterate", "block", "tile"),
    [((11, 8, 9), 5, 2, (11, 3, 9)), ((6, 8, 9), 7, 4, (2, 8, 4)), ((3, 8, 9), 3, 3, (3, 1, 1))],
)
def test_3d_halo_2(
    border: str, shape: tuple[int, int, int], iterate: int, block: int, tile: tuple[int, int, int]
) -> None:
    for planes in (1, 4):
        p = soda(STAR3D.format(border=border), shape, iterate)
        check(p, 4, block=block, tile=tile, nt=block % 2 == 0, planes=planes)


def test_masks_copy_boundary_and_lower_dim_input_3d() -> None:
    prog = {
        "inputs": {"a": {"data_type": "float32"}, "w": {"data_type": "float32", "input_dims": ["k"]}},
        "outputs": ["c"],
        "dimensions": [5, 7, 11],
        "program": {
            "b": {"computation_string": "b = a[i+1, j, k-2] * w[k]", "boundary_conditions": "shrink", "data_type": "float32"},
            "c": {"computation_string": "c = b[i, j-1, k+1] + b[i-1, j+1, k] + w[k+1]",
                  "boundary_conditions": {"b": {"type": "copy"}, "w": {"type": "constant", "value": 2.5}},
                  "data_type": "float32"},
        },
    }  # fmt: skip
    p = sf(prog)
    for tile in [None, (2, 3, 4), (1, 1, 11), (5, 7, 11)]:
        for nt in (False, True):
            check(p, 3, tile=tile, nt=nt, planes=2 if nt else 1)


def test_scheme_options() -> None:
    p2 = soda(RADIUS3.format(border="ignore"), (8, 8), 2)
    values = make_inputs(p2, {}, 0)
    with pytest.raises(StencilmapError, match="scheme"):
        run_cpu(p2, values, scheme="diagonal")
    p1 = sf(
        {
            "inputs": {"a": {"data_type": "float32"}},
            "outputs": ["b"],
            "dimensions": [16],
            "program": {
                "b": {
                    "computation_string": "b = a[k-1] + a[k+1]",
                    "boundary_conditions": "shrink",
                    "data_type": "float32",
                }
            },
        }
    )
    with pytest.raises(StencilmapError, match="rank"):
        run_cpu(p1, make_inputs(p1, {}, 0), scheme="wave")


def test_cost_model_streams_big_3d_grids() -> None:
    """256³ × 20 of the 7-point Jacobi: the wavefront, whose rings fit the budget; small grids stay cheap."""
    jacobi = """kernel: j
input float: v(256, 256, *)
output float: w(0, 0, 0) = (v(0, 0, -1) + v(0, -1, 0) + v(-1, 0, 0) + v(0, 0, 0) + v(1, 0, 0)
  + v(0, 1, 0) + v(0, 0, 1)) * 0.142857f
iterate: 2
border: preserve
"""
    p = soda(jacobi, (256, 256, 256), 20)
    choice = cost.choose(make_plan(p), p.shape, 20, 2)  # type: ignore[arg-type]
    assert choice.scheme == "wave" and choice.block > 1
    assert cost.use_nt(make_plan(p), (256, 256, 256)) and not cost.use_nt(make_plan(p), (16, 16, 16))
    # Four planes a tick: the stages compute them at once (cgen.joint_planes), in rings still in budget.
    assert choice.planes % 4 == 0
    one = cost.choose(make_plan(p), p.shape, 1, 2)  # type: ignore[arg-type]
    joints = [(4, True)]  # one step streams its output row by row: nothing computed planes at once
    assert cost._joint_share(joints, 1, one.tile[0]) == 0.0 < cost._joint_share(joints, 10, 4)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(programs(), st.integers(1, 4), st.integers(1, 3), st.booleans(), st.integers(1, 5))
def test_random_programs(program: Program, block: int, tile_edge: int, nt: bool, planes: int) -> None:
    """Random DAGs, windows, dims, boundaries and dtypes (tests/strategies.py), small odd tiles."""
    assume(program.rank >= 2)
    values = make_inputs(program, {}, 5)
    tile = tuple(tile_edge for _ in program.shape)
    got, _ = run_cpu(program, values, threads=2, block=block, tile=tile, scheme="wave", nt=nt, planes=planes)
    assert_matches(program, run_reference(program, values), got)


def test_cost_model_computes_several_planes_a_tick_on_long_2d_runs() -> None:
    """4096² × 50 of the 5-point Jacobi: every step fused in the wave, several planes a stage and tick (a
    call's cost shared), rows short enough for the layer condition in L1 (cost.LAYER_COST)."""
    jacobi = """kernel: j
input float: v(4096, *)
output float: w(0, 0) = (v(0, -1) + v(-1, 0) + v(0, 0) + v(1, 0) + v(0, 1)) * 0.2f
iterate: 2
border: preserve
"""
    p = soda(jacobi, (4096, 4096), 50)
    choice = cost.choose(make_plan(p), p.shape, 50, 2)  # type: ignore[arg-type]
    assert choice.scheme == "wave" and choice.planes > 1
    assert 3 * 4 * choice.tile[1] <= cost.L1_BYTES < 3 * 4 * 4096


def test_planes_must_be_positive() -> None:
    p = soda(RADIUS3.format(border="ignore"), (8, 8), 2)
    with pytest.raises(StencilmapError, match="planes"):
        run_cpu(p, make_inputs(p, {}, 0), scheme="wave", planes=0)
