"""§IV's hybrid CPU + CGRA divide-and-conquer (``jobs.hybrid_cgra``): the CPU the boundary and the
remainder, the CGRA the interior's subtasks; every row once; outputs valid against the reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.jobs.compile import CompileConfig, compile_program
from stencilmap.jobs.compile_flows import validate_outputs
from stencilmap.jobs.hybrid_cgra import divide, run_hybrid
from stencilmap.jobs.simulate import as_field_dtype
from stencilmap.point import DesignPoint
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from tests.conftest import EXAMPLES


def _program(name: str, shape: tuple[int, ...] | None = None):  # type: ignore[no-untyped-def]
    program = load_program(EXAMPLES / name)
    return bind_shape(program, {}, shape or tuple(n or 32 for n in program.shape))


def test_the_cpu_takes_the_boundary_the_cgra_the_subtasks() -> None:
    tasks = divide(_program("stencil2d_r12.json", (68, 960)))
    assert [(t.tile.lo, t.tile.hi, t.where, t.why) for t in tasks] == [
        (0, 12, "cpu", "boundary"),
        (12, 23, "cgra", "subtask"),
        (23, 34, "cgra", "subtask"),
        (34, 45, "cgra", "subtask"),
        (45, 56, "cgra", "subtask"),
        (56, 68, "cpu", "boundary"),
    ]
    # every subtask fits the host's task size, and its slab (with the halo) lies inside the grid
    assert all((t.tile.hi - t.tile.lo) * 960 <= 1 << 14 for t in tasks if t.where == "cgra")
    assert all(t.tile.slab_lo == t.tile.lo - 12 and t.tile.slab_hi == t.tile.hi + 12 for t in tasks[1:-1])


def test_an_interior_too_thin_for_a_subtask_is_the_cpus_remainder() -> None:
    tasks = divide(_program("laplace2d.soda", (3, 16)))
    assert [(t.tile.lo, t.tile.hi, t.where, t.why) for t in tasks] == [
        (0, 1, "cpu", "boundary"),
        (1, 2, "cpu", "remainder"),
        (2, 3, "cpu", "boundary"),
    ]
    with pytest.raises(StencilmapError, match="at least one point"):
        divide(_program("laplace2d.soda", (3, 16)), leaf_points=0)


@pytest.mark.parametrize(
    ("name", "shape", "leaf"),
    [
        ("stencil1d_r8.json", (3000,), 500),  # 1-D: the boundary is 8 points each side
        ("heat3d.json", (12, 16, 16), 1 << 10),  # copy boundaries: the CPU's planes matter
        ("jacobi2d.soda", (40, 24), 200),  # border: preserve, 4 steps on chip: a halo of 4 rows
    ],
)
def test_hybrid_outputs_match_the_reference(name: str, shape: tuple[int, ...], leaf: int) -> None:
    program = _program(name, shape)
    values = make_inputs(program, {}, 0)
    run = run_hybrid(program, values, DesignPoint(device="cgra-tia"), load_device("cgra-tia"), leaf)
    assert run.status == "done" and sum(t.where == "cgra" for t in run.tasks) >= 2
    got = {k: as_field_dtype(v, program.field_dtype(k)) for k, v in run.outputs.items()}
    valid, _, _ = validate_outputs(got, program, values)
    assert valid
    total = 1
    for n in shape:
        total *= n
    assert run.cpu_points + run.cgra_points == total and run.cgra_cycles > 0
    # subtasks of a few hundred points: the queues' filling, which the model leaves out, weighs (README)
    assert abs(run.predicted_cycles - run.cgra_cycles) <= 0.2 * run.cgra_cycles


def test_hybrid_is_for_the_cgra(tmp_path: Path) -> None:
    config = CompileConfig(
        program=EXAMPLES / "laplace2d.soda",
        point=DesignPoint(device="ku060"),
        out_dir=tmp_path / "o",
        hybrid=True,
    )
    with pytest.raises(StencilmapError, match="--hybrid is the CGRA paper's"):
        compile_program(config)
