"""StencilFlow §V-B fusion: the fused program computes what the program did, bit for bit, or is refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from stencilmap.backends.reference import run_reference
from stencilmap.cli import main
from stencilmap.point import DesignPoint
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.expr import refs
from stencilmap.program.graph import reads
from stencilmap.program.ir import Program
from stencilmap.program.soda import parse_soda
from stencilmap.program.verify import verify
from stencilmap.transform import fuse
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, UNPUBLISHED_DATA
from tests.strategies import programs

PROGRAMS = CORPUS_STENCILFLOW + CORPUS_SODA + EXAMPLE_FILES


def loaded(path: Path) -> Program:
    """A program at its own shape; one whose data files were never published reads generated inputs."""
    program = bind_shape(load_program(path), {}, None)
    if path.name in UNPUBLISHED_DATA:
        program = replace(program, inputs=tuple(replace(i, source=None) for i in program.inputs))
    return program


def same_results(before: Program, after: Program, folder: Path | None = None) -> None:
    """Outputs and their defined points equal bit for bit (NaN where undefined)."""
    values = make_inputs(before, {}, 0, folder)
    a, b = run_reference(before, values), run_reference(after, values)
    for out in before.outputs:
        assert np.array_equal(a.defined[out], b.defined[out])
        assert a.outputs[out].dtype == b.outputs[out].dtype
        assert np.array_equal(a.outputs[out], b.outputs[out], equal_nan=True)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fused_reference_equals_the_program(path: Path) -> None:
    program = loaded(path)
    fusion = fuse(program)
    verify(fusion.program)
    assert len(fusion.program.stencils) == len(program.stencils) - len(fusion.fused)
    for producer, consumer in fusion.fused:
        assert producer not in program.outputs and fusion.program.stencil(producer) is None
        assert fusion.program.stencil(consumer) is not None or any(c == consumer for c, _ in fusion.fused)
    same_results(program, fusion.program, path.parent)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_dags(program: Program) -> None:
    fusion = fuse(program)
    verify(fusion.program)
    same_results(program, fusion.program)
    for producer, consumer, why in fusion.refused:  # a refusal names a real single-reader producer
        assert [s.name for s in fusion.program.stencils if producer in reads(s)] == [consumer] and why


def test_seeded_random_dags_fuse_under_guards_exactly() -> None:
    """150 random DAGs (seeded: ``derandomize``) with shrink, copy and constant boundaries, fused
    wherever exact (``by_cost=False``, guards included) and by cost: both equal the program bit for bit,
    defined points included; many fusions need a guard."""
    from stencilmap.program.expr import InBounds, walk

    guarded: list[int] = []

    @settings(
        max_examples=150, derandomize=True, database=None, deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )  # fmt: skip
    @given(programs())
    def check(program: Program) -> None:
        for fusion in (fuse(program, by_cost=False), fuse(program)):
            verify(fusion.program)
            same_results(program, fusion.program)
        everywhere = fuse(program, by_cost=False).program
        guarded.append(
            any(isinstance(n, InBounds) for s in everywhere.stencils for t in s.temps for n in walk(t.expr))
        )

    check()
    assert len(guarded) == 150 and sum(guarded) >= 15, sum(guarded)


def test_the_corpus_fuses_where_stencilflow_would() -> None:
    """denoise2d: the diffs into g, g and r1 into the output, r0 into r1 — all shrink (SODA's border)."""
    (path,) = [p for p in CORPUS_SODA if p.stem == "denoise2d"] or [None]
    if path is None:
        pytest.skip("../shared/corpus absent")
    fusion = fuse(bind_shape(load_program(path), {}, None))
    assert [s.name for s in fusion.program.stencils] == ["output"]
    assert ("g", "output") in fusion.fused and ("r0", "r1") in fusion.fused


def program(text: str) -> Program:
    return bind_shape(parse_soda(text), {}, (6, 8))


CONSTANT_AT_AN_OFFSET = {
    "inputs": {"a": {"data": "random:0-1", "data_type": "float32"}},
    "outputs": ["b"],
    "dimensions": [4, 5],
    "program": {
        "t": {"computation_string": "res = a[j,k] * 2.0", "boundary_conditions": {"a": {"type": "constant", "value": 0}},
              "data_type": "float32"},
        "b": {"computation_string": "res = t[j-1,k] + a[j,k]", "data_type": "float32",
              "boundary_conditions": {"t": {"type": "constant", "value": 0.5}, "a": {"type": "constant", "value": 0}}},
    },
}  # fmt: skip


def test_a_constant_boundary_at_an_offset_fuses_under_a_guard_where_the_cost_says_so() -> None:
    """b reads t one row up with a constant boundary: out of bounds it must see 0.5, not t's expression —
    ``InBounds((-1, 0)) ? t's expression : 0.5``. On 4 × 5 the guard's two cycles are 5% of the runtime
    L + N: the cost refuses; on 40 × 50 they are 0.1%, and it fuses, bit-exact."""
    from stencilmap.program.expr import InBounds, walk
    from stencilmap.program.stencilflow import parse_stencilflow

    small = bind_shape(parse_stencilflow(json.dumps(CONSTANT_AT_AN_OFFSET)), {}, None)
    fusion = fuse(small)
    assert fusion.fused == () and fusion.program == small
    assert (
        fusion.refused == (("t", "b", fusion.refused[0][2]),) and "the cost: latency" in fusion.refused[0][2]
    )
    big = bind_shape(small, {}, (40, 50))
    fusion = fuse(big)
    assert fusion.fused == (("t", "b"),) and fusion.before is not None and fusion.after is not None
    assert fusion.after.buffers < fusion.before.buffers
    (b,) = fusion.program.stencils
    assert InBounds((-1, 0)) in [n for t in b.temps for n in walk(t.expr)]
    same_results(big, fusion.program)
    assert fuse(big, guards=False).fused == ()  # CGRA / EMAX: no in-bounds test


GUARDED_CHAIN = {
    "inputs": {
        "a": {"data": "random:0-1", "data_type": "float32"},
        "c": {"data": "random:0-1", "data_type": "float32", "input_dims": ["k"]},
    },
    "outputs": ["b2"],
    "dimensions": [9, 13],
    "program": {
        "b0": {"computation_string": "b0 = 0.25 * (a[j-1,k] + a[j+1,k] + a[j,k-1] + a[j,k+1]) + c[k+1]",
               "boundary_conditions": {"a": {"type": "copy"}, "c": {"type": "constant", "value": 2.0}},
               "data_type": "float32"},
        "b1": {"computation_string": "b1 = 0.5 * (b0[j-1,k] - b0[j,k+2]) + b0[j,k]",
               "boundary_conditions": {"b0": {"type": "constant", "value": 1.5}}, "data_type": "float32"},
        "b2": {"computation_string": "b2 = b1[j+1,k-1] * 2.0 + b1[j,k]",
               "boundary_conditions": {"b1": {"type": "copy"}}, "data_type": "float32"},
    },
}  # fmt: skip


def guarded_chain() -> Program:
    from stencilmap.program.stencilflow import parse_stencilflow

    return bind_shape(parse_stencilflow(json.dumps(GUARDED_CHAIN)), {}, None)


def test_copy_and_constant_chains_fuse_exactly() -> None:
    """A copy boundary on the producer's input (its centre moves with the offset: guarded again), a
    lower-dimensional input with a constant one, a constant read, then a copy read (outside: the
    producer at the centre)."""
    p = guarded_chain()
    fusion = fuse(p, by_cost=False)
    assert fusion.fused == (("b0", "b1"), ("b1", "b2")) and [s.name for s in fusion.program.stencils] == [
        "b2"
    ]
    verify(fusion.program)
    same_results(p, fusion.program)
    for seed in (1, 2):
        values = make_inputs(p, {}, seed)
        a, b = run_reference(p, values), run_reference(fusion.program, values)
        assert np.array_equal(a.outputs["b2"], b.outputs["b2"], equal_nan=True)


def test_simulate_fuse_by_cost_is_valid(tmp_path: Path) -> None:
    """``simulate --fuse``: the cost takes b1 into b2 (a copy read, guarded), not b0 (172 operations)."""
    from stencilmap.jobs.simulate import SimulateConfig, simulate

    path = tmp_path / "chain.json"
    path.write_text(json.dumps(GUARDED_CHAIN))
    report = simulate(SimulateConfig(program=path, point=DesignPoint(fuse=True), out_dir=tmp_path / "o"))
    assert report.fused == (("b1", "b2"),) and report.valid and report.validation.bit_exact


@pytest.mark.parametrize(
    ("arch", "evaluators"), [("soda", "interpret"), ("stencilflow", "compile"), ("pcm", "interpret")]
)
def test_guarded_fusion_simulates_bit_exact(arch: str, evaluators: str) -> None:
    """The simulator's bytecode evaluates the guards (the engine hands each PE its point), interpreted
    or compiled."""
    from stencilmap.sim import SimConfig
    from tests.sim.helpers import built, run_design

    program = fuse(guarded_chain(), by_cost=False).program
    run = run_design(*built(program, arch), SimConfig(evaluators=evaluators))  # type: ignore[arg-type]
    assert run.validation.valid and run.validation.bit_exact


def test_guarded_fusion_on_the_host_backends() -> None:
    from stencilmap.backends.registry import HostOptions, execute

    p = guarded_chain()
    fused = fuse(p, by_cost=False).program
    values = make_inputs(p, {}, 0)
    want = run_reference(p, values).outputs["b2"]
    for options in (HostOptions("cpu", threads=2), HostOptions("dask", chunks=(4, 5))):
        if options.backend == "dask":
            pytest.importorskip("distributed")
        got = execute(fused, values, options).result.outputs["b2"]
        assert np.array_equal(want, got, equal_nan=True), options.backend


def test_the_8_stage_jacobi_fuses_in_pairs_by_cost() -> None:
    """StencilFlow's 8-stage 3-D Jacobi, constant 0.0 boundaries: each pair fuses (+60 operations, one
    buffer element less); fusing a fused pair again would add 1,818 operations per point, refused."""
    path = next((p for p in CORPUS_STENCILFLOW if p.name == "jacobi3d_32x32x32_8itr.json"), None)
    if path is None:
        pytest.skip("../shared/corpus absent")
    program = bind_shape(load_program(path), {}, (12, 12, 12))
    fusion = fuse(program)
    assert fusion.fused == (("b0", "b1"), ("b2", "b3"), ("b4", "b5"), ("b6", "b7"))
    assert len(fusion.program.stencils) == 4
    assert all("the cost" in why for _, _, why in fusion.refused)
    assert fusion.before is not None and fusion.after is not None
    assert fusion.after.buffers < fusion.before.buffers and fusion.after.ops == 4 * 72
    same_results(program, fusion.program)


def test_shifted_reads_with_shrink_fuse_and_keep_the_defined_region() -> None:
    p = program(
        "kernel: s\ninput float: a(8, *)\nlocal float: t(0, 0) = a(1, 0) - a(-1, 0)\n"
        "output float: b(0, 0) = t(0, 1) * t(0, -1) + t(0, 0)\n"
    )
    fusion = fuse(p)
    assert fusion.fused == (("t", "b"),)
    (b,) = fusion.program.stencils
    assert [(t.name, t.dtype) for t in b.temps] == [(f"t_at_{o}", "float32") for o in ("m1_0", "0_0", "1_0")]
    # C order: t reads a at (0, ±1), b reads t at (±1, 0) and (0, 0); the fused reads are their sums
    assert {r.offset for t in b.temps for r in refs(t.expr)} == {(y, x) for y in (-1, 0, 1) for x in (-1, 1)}
    same_results(p, fusion.program)


def test_reads_not_spanning_zero_are_refused() -> None:
    """t reads only a(1, 0): x + o out of bounds would not make a read of a out of bounds."""
    p = program(
        "kernel: s\ninput float: a(8, *)\nlocal float: t(0, 0) = a(1, 0)\noutput float: b(0, 0) = t(0, 1)\n"
    )
    fusion = fuse(p)
    assert fusion.fused == () and "span 0" in fusion.refused[0][2]


def test_cli_reports_what_was_fused(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "dag_listing1.json"
    runner = CliRunner()
    out = runner.invoke(main, ["analyze", str(example), "--fuse", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["fused"] == [["b1", "b3"], ["b2", "b4"], ["b3", "b4"]]
    text = runner.invoke(main, ["analyze", str(example), "--fuse"])
    assert text.output.startswith("fused: b1 into b3, b2 into b4, b3 into b4\n")
    plain = runner.invoke(main, ["analyze", str(example), "--json"])
    assert json.loads(plain.output)["fused"] == []
    sim = runner.invoke(main, ["simulate", str(example), "--fuse", "--json", "--out", str(tmp_path / "o")])
    assert sim.exit_code == 0 and json.loads(sim.output)["valid"] is True
    bad = runner.invoke(main, ["simulate", str(tmp_path / "missing.json"), "--fuse"])
    assert bad.exit_code == 2 and bad.output.startswith("error: ") and "Traceback" not in bad.output


@pytest.mark.parametrize(
    "path", [p for p in PROGRAMS if p.name not in UNPUBLISHED_DATA], ids=lambda p: p.name
)
def test_fused_designs_simulate_bit_exact(path: Path, tmp_path: Path) -> None:
    """The fused program's own design (SODA or StencilFlow) matches the reference cycle by cycle."""
    from stencilmap.jobs.simulate import SimulateConfig, simulate

    if not fuse(bind_shape(load_program(path), {}, None)).fused:
        pytest.skip("nothing fuses")
    report = simulate(SimulateConfig(program=path, point=DesignPoint(fuse=True), out_dir=tmp_path))
    assert report.fused and report.valid and report.validation.bit_exact
