"""StencilFlow delay lines of replayed inputs (issue 19, item 6): chained copy to copy, deep enough.

A replayed input (read every time step, fed by no output: FDTD's C1–C4) has its delay lines chained,
each copy's line continuing the deepest before it (``design.pipeline``). The continuation must hold what
the earlier copy takes before the later one needs it, capped by the stream (``delays.relay_delay``).
Sizing it as the difference of the two *capped* edge delays left it empty on a grid shorter than the lag
between copies (the reproducer: a 4 × 4 grid, iterate 3, every C edge capped at 15), and the design
deadlocked in the simulator and in the OpenCL channel emulation.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stencilmap.analysis.timing import pipeline_timing
from stencilmap.cli.codegen import codegen_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.design.common import concrete_shape
from stencilmap.design.delay_check import check_delay_lines
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.program.expr import Binary, Call, Const, Expr, Ref, Select
from stencilmap.program.ir import Boundary, Input, Program, Stencil
from stencilmap.program.verify import verify
from tests.conftest import EXAMPLES
from tests.sim.helpers import built, explain, load_small, run_design, simulated

#: The issue's reproducer: C is replayed into e at every one of the three steps.
REPRODUCER = {
    "inputs": {
        "E": {"data": "random:-1-1", "data_type": "float32"},
        "X": {"data": "random:-1-1", "data_type": "float32"},
        "C": {"data": "constant:0.5", "data_type": "float32"},
    },
    "outputs": ["e", "x"],
    "dimensions": [4, 4],
    "iterate": 3,
    "feedback": {"e": "E", "x": "X"},
    "program": {
        "y": {
            "computation_string": "y = E[j+1,k]",
            "boundary_conditions": {"E": {"type": "constant", "value": 0.0}},
            "data_type": "float32",
        },
        "x": {
            "computation_string": "x = X[j,k] + y[j,k]",
            "boundary_conditions": {
                "X": {"type": "constant", "value": 0.0},
                "y": {"type": "constant", "value": 0.0},
            },
            "data_type": "float32",
        },
        "e": {
            "computation_string": "e = C[j,k] * x[j,k]",
            "boundary_conditions": {
                "C": {"type": "constant", "value": 0.0},
                "x": {"type": "constant", "value": 0.0},
            },
            "data_type": "float32",
        },
    },
}


def _reproducer(tmp_path: Path) -> Path:
    path = tmp_path / "replayed.json"
    path.write_text(json.dumps(REPRODUCER), encoding="utf-8")
    return path


def test_reproducer_simulates_valid_and_bit_exact(tmp_path: Path) -> None:
    path = _reproducer(tmp_path)
    result = CliRunner().invoke(simulate_cmd, [str(path), "--out", str(tmp_path / "sim"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "done" and report["deadlock"] is None
    assert report["valid"] is True and report["bit_exact"] is True and report["max_abs_error"] == 0


def test_reproducer_opencl_channel_emulation_valid_and_bit_exact(tmp_path: Path) -> None:
    path = _reproducer(tmp_path)
    args = [str(path), "--target", "opencl", "--arch", "stencilflow", "--verify", "--json"]
    result = CliRunner().invoke(codegen_cmd, [*args, "--out", str(tmp_path / "cl")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["valid"] is True and report["bit_exact"] is True


def test_reproducer_continuations_hold_the_stream() -> None:
    """Every C edge is capped at the stream (15 of 16 elements): the earlier copy drains all of C before
    the next starts, so each continuation holds 15, not 15 − 15 = 0."""
    from stencilmap.program.stencilflow import parse_stencilflow

    program = parse_stencilflow(json.dumps(REPRODUCER), "replayed.json")
    _, design = built(program, "stencilflow")
    depths = {
        m.name: m.param("depth") for m in design.modules if m.kind == "delay" and m.param("field") == "C"
    }
    assert depths == {"e@1.C.delay": 15, "e@2.C.delay": 15, "e@3.C.delay": 15}
    timing = pipeline_timing(program, concrete_shape(program), 1)
    assert check_delay_lines(design, timing).shortfalls == ()


def test_fdtd_with_16_steps_on_a_small_grid() -> None:
    """The bundled FDTD on 16 × 48 (the simulator tests' shape) with 16 steps: the copies lag each other
    by more than C1–C4's stream, which deadlocked the capped-difference rule at cycle 824."""
    program = load_small(EXAMPLES / "fdtd2d_iterate.json")
    assert program.shape == (16, 48)
    run = simulated(program, "stencilflow", BuildConfig(iterate=16))
    assert run.result.status == "done", explain(run)
    assert run.validation.valid and run.validation.bit_exact, explain(run)
    timing = pipeline_timing(run.program, concrete_shape(run.program), 1)
    assert check_delay_lines(run.design, timing).shortfalls == ()


def _const(*fields: str) -> dict[str, dict[str, object]]:
    return {f: {"type": "constant", "value": 0.5} for f in fields}


#: Found by the property test below: c1 is read at reach 1 by s0 and 0 by s1, so their lines are capped
#: differently on a 1 × 3 grid; continuing s0@2's line by its relay alone left c1 → s1@2 one short.
DIFFERENT_REACH = {
    "inputs": {n: {"data": "random:-1-1", "data_type": "float32"} for n in ("f0", "f1", "c0", "c1")},
    "outputs": ["s0", "s1"],
    "dimensions": [1, 3],
    "iterate": 2,
    "feedback": {"s0": "f0", "s1": "f1"},
    "program": {
        "s0": {"computation_string": "s0 = c1[j,k+1] * (c0[j,k] * f0[j,k+1])",
               "boundary_conditions": _const("c0", "c1", "f0"), "data_type": "float32"},
        "s1": {"computation_string": "s1 = f0[j,k] + c1[j,k]",
               "boundary_conditions": _const("c1", "f0"), "data_type": "float32"},
    },
}  # fmt: skip


def test_lines_of_different_reach() -> None:
    from stencilmap.program.stencilflow import parse_stencilflow

    program, design = built(parse_stencilflow(json.dumps(DIFFERENT_REACH), "reach.json"), "stencilflow")
    timing = pipeline_timing(program, concrete_shape(program), 1)
    assert check_delay_lines(design, timing).shortfalls == ()
    run = run_design(program, design)
    assert run.result.status == "done" and run.validation.bit_exact, explain(run)


# ---- random StencilFlow DAGs with feedback and replayed inputs ------------------------------------


@st.composite
def _expression(draw: st.DrawFn, fields: list[tuple[str, int]], rank: int, depth: int) -> Expr:
    """Exactly rounded operations only (+ − ×, min/max, select), so the simulation is bit-exact."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.integers(0, 5)) == 0:
            return Const(draw(st.sampled_from([0.5, 2.0, 0.25])), "pyfloat")
        name, axes = draw(st.sampled_from(fields))
        return Ref(name, tuple(draw(st.integers(-1, 1)) for _ in range(axes)))
    sub = lambda: draw(_expression(fields, rank, depth - 1))  # noqa: E731
    kind = draw(st.sampled_from(["bin", "bin", "minmax", "select"]))
    if kind == "bin":
        return Binary(draw(st.sampled_from(["+", "-", "*"])), sub(), sub())
    if kind == "minmax":
        return Call(draw(st.sampled_from(["min", "max"])), (sub(), sub()))
    return Select(Binary("<", sub(), sub()), sub(), sub())


@st.composite
def feedback_programs(draw: st.DrawFn) -> Program:
    """A StencilFlow DAG over a tiny grid: 1–2 inputs fed back by name from distinct stencils, 1–2
    replayed (non-feedback) inputs, some lower-dimensional, each read by some stencil; iterate 2–4."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    while len(shape) > 1 and _points(shape) > 40:
        shape = (*shape[:-1], max(1, shape[-1] // 2))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    full = tuple(range(rank))
    fed = [Input(f"f{n}", dtype, full) for n in range(draw(st.integers(1, 2)))]
    some_axes = st.sets(st.sampled_from(full), min_size=1).map(lambda a: tuple(sorted(a)))
    axes = st.one_of(st.just(full), some_axes)  # replayed inputs may be lower-dimensional
    replayed = [Input(f"c{n}", dtype, draw(axes)) for n in range(draw(st.integers(1, 2)))]
    fields = [(i.name, len(i.axes)) for i in fed + replayed]
    n_stencils = draw(st.integers(len(fed), 4))
    readers = {c.name: draw(st.integers(0, n_stencils - 1)) for c in replayed}
    stencils: list[Stencil] = []
    for s in range(n_stencils):
        expr = draw(_expression(fields, rank, 2))
        for c in replayed:
            if readers[c.name] == s:  # make sure each replayed input is read
                expr = Binary("*", Ref(c.name, tuple(draw(st.integers(-1, 1)) for _ in c.axes)), expr)
        read = sorted({r.field for r in _refs(expr)})
        kinds = st.sampled_from([Boundary("constant", 0.5), Boundary("copy"), Boundary("shrink")])
        stencils.append(Stencil(f"s{s}", dtype, expr, (), tuple((f, draw(kinds)) for f in read)))
        fields.append((f"s{s}", rank))
    feeders = draw(st.permutations([s.name for s in stencils]))[: len(fed)]
    outputs = tuple(dict.fromkeys([*feeders, stencils[-1].name]))
    program = Program(
        name="feedback",
        format="stencilflow",
        semantics="numpy",
        shape=shape,
        inputs=tuple(fed + replayed),
        stencils=tuple(stencils),
        outputs=outputs,
        iterate=draw(st.integers(2, 4)),
        feedback=tuple((o, i.name) for o, i in zip(feeders, fed, strict=True)),
    )
    try:
        verify(program)
    except StencilmapError:
        assume(False)
    return program


def _points(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _refs(e: Expr) -> list[Ref]:
    from stencilmap.program.expr import refs

    return list(refs(e))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(feedback_programs(), st.integers(1, 3))
def test_random_feedback_programs_with_replayed_inputs(program: Program, w: int) -> None:
    """Every design simulates to completion, valid and bit-exact, and its delay lines pass the static
    check (no requirement of StencilFlow §IV-B short on any path, chained or not)."""
    try:
        program, design = built(program, "stencilflow", BuildConfig(vector=w))
    except StencilmapError:
        assume(False)  # e.g. a stencil chain the live graph prunes to nothing
    timing = pipeline_timing(program, concrete_shape(program), w)
    assert check_delay_lines(design, timing).shortfalls == ()
    run = run_design(program, design)
    assert run.result.status == "done", explain(run)
    assert run.validation.valid and run.validation.bit_exact, explain(run)
