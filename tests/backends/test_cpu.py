"""The compiled CPU backend equals the reference on every bundled program, and temporal blocking holds up
on awkward shapes: prime sizes, tiles larger than the grid, halos of 3, several inputs, DAGs, masks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.backends import cgen, cpu
from stencilmap.backends.cpu import choose_tile, run_cpu
from stencilmap.backends.plan import make_plan
from stencilmap.backends.reference import run_reference
from stencilmap.errors import StencilmapError
from stencilmap.program import Program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from stencilmap.program.stencilflow import parse_stencilflow
from tests.backends.common import assert_matches, bundled_params, inputs_for, load_bound
from tests.strategies import programs


@pytest.mark.parametrize("path", bundled_params())
def test_every_bundled_program_equals_the_reference(path: Path) -> None:
    p = load_bound(path)
    values = inputs_for(p)
    got, timing = run_cpu(p, values, threads=2)
    assert_matches(p, run_reference(p, values), got)
    assert timing.compute_seconds > 0


@pytest.mark.parametrize("path", bundled_params())
def test_streamed_rows_equal_the_reference(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every output written with streaming stores (the threshold lowered to nothing): rows computed in
    chunks into a buffer and copied out give the same values and masks, on odd tiles too."""
    monkeypatch.setattr(cgen, "NT_BYTES", 0)
    monkeypatch.setattr(cpu, "_PROGRAMS", {})
    p = load_bound(path)
    values = inputs_for(p)
    assert "#define SM_NT_BYTES 0\n" in cpu.compile_program(p).source
    ref = run_reference(p, values)
    assert_matches(p, ref, run_cpu(p, values, threads=2)[0])
    odd = tuple(max(1, int(n or 1) // 3 + 1) for n in p.shape)
    assert_matches(p, ref, run_cpu(p, values, threads=2, tile=odd)[0])


def soda(text: str, shape: tuple[int, ...], iterate: int | None = None) -> Program:
    p = bind_shape(parse_soda(text, "t.soda"), {}, shape)
    return replace(p, iterate=iterate) if iterate is not None else p


RADIUS3 = """kernel: r3
input float: a(16, *)
output float: b(0, 0) = (a(-3, 0) + a(3, 0) + a(0, -3) + a(0, 3) + a(1, 2) + a(0, 0)) * 0.1666f
iterate: 2
border: {border}
"""

TWO_INPUTS_DAG = """kernel: dag
input double: a(8, *)
input double: c(8, *)
local double: t(0, 0) = a(1, 0) - c(0, -1) * 0.5
output double: b(0, 0) = t(0, 1) + t(-1, 0) + a(0, 0)
output double: d(0, 0) = c(1, 1) + c(-1, -1) - t(0, 0) * 0.25
iterate: 2
border: {border}
"""


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(
    ("shape", "iterate", "block", "tile"),
    [
        ((31, 37), 7, 3, (5, 7)),  # primes everywhere; the last block is short
        ((13, 11), 5, 5, (64, 64)),  # one tile larger than the grid
        ((17, 19), 9, 4, (1, 3)),  # tiles thinner than the halo
        ((7, 5), 12, 8, (2, 2)),  # halo of 3 × 8 steps ≫ grid
    ],
)
def test_temporal_blocking_radius_3(
    border: str, shape: tuple[int, int], iterate: int, block: int, tile: tuple[int, int]
) -> None:
    p = soda(RADIUS3.format(border=border), shape, iterate)
    values = make_inputs(p, {}, 1)
    got, _ = run_cpu(p, values, threads=2, block=block, tile=tile)
    assert_matches(p, run_reference(p, values), got)


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(("block", "tile"), [(1, None), (4, (3, 5)), (6, (23, 2)), (3, (1, 1))])
def test_temporal_blocking_dag_with_two_inputs(border: str, block: int, tile: tuple[int, int] | None) -> None:
    p = soda(TWO_INPUTS_DAG.format(border=border), (23, 29), 6)
    values = make_inputs(p, {}, 2)
    got, _ = run_cpu(p, values, threads=2, block=block, tile=tile)
    assert_matches(p, run_reference(p, values), got)


def sf(program: dict, iterate: int = 1) -> Program:  # type: ignore[type-arg]
    p = bind_shape(parse_stencilflow(json.dumps(program), "t.json"), {})
    return replace(p, iterate=iterate)


def test_copy_boundary_of_partly_defined_fields_3d() -> None:
    """Masks that are not boxes: a copy boundary reading a shrunk intermediate, lower-dimensional input."""
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
    values = make_inputs(p, {}, 3)
    ref = run_reference(p, values)
    assert not ref.defined["c"].all() and ref.defined["c"].any()
    for tile in [None, (2, 3, 4), (1, 1, 11)]:
        got, _ = run_cpu(p, values, threads=2, tile=tile)
        assert_matches(p, ref, got)


def test_choose_tile_fits_the_grid_and_the_cache() -> None:
    p = soda(RADIUS3.format(border="preserve"), (4096, 4096), 50)
    tile = choose_tile(make_plan(p), (4096, 4096), 8, 2)
    assert all(1 <= t <= 4096 for t in tile)
    assert tile[0] * tile[1] * 4 * 2 <= 1024 * 1024  # value ping-pong within one L2


def test_bad_options_are_user_errors() -> None:
    p = soda(RADIUS3.format(border="ignore"), (8, 8), 2)
    values = make_inputs(p, {}, 0)
    with pytest.raises(StencilmapError, match="threads"):
        run_cpu(p, values, threads=0)
    with pytest.raises(StencilmapError, match="block"):
        run_cpu(p, values, block=1000)
    with pytest.raises(StencilmapError, match="tile"):
        run_cpu(p, values, tile=(0, 4))
    with pytest.raises(StencilmapError, match="shape"):
        run_cpu(p, {"a": np.zeros((3, 3), np.float32)})


def test_inputs_are_not_written() -> None:
    p = soda(RADIUS3.format(border="preserve"), (20, 20), 5)
    values = make_inputs(p, {}, 0)
    before = values["a"].copy()
    run_cpu(p, values, threads=2, block=2)
    np.testing.assert_array_equal(values["a"], before)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(1, 4), st.integers(1, 3))
def test_random_programs_equal_the_reference(program: Program, block: int, tile_edge: int) -> None:
    """Random DAGs, windows, dims, boundaries and dtypes (tests/strategies.py), with small odd tiles."""
    values = make_inputs(program, {}, 5)
    tile = tuple(tile_edge for _ in program.shape)
    got, _ = run_cpu(program, values, threads=2, block=block, tile=tile)
    assert_matches(program, run_reference(program, values), got)


@pytest.mark.parametrize("steps", [2, 3])
@pytest.mark.parametrize("block", [1, 2, 4])
def test_fdtd_feedback_by_name_equals_the_reference(steps: int, block: int) -> None:
    from tests.conftest import EXAMPLES

    program = replace(load_bound(EXAMPLES / "fdtd2d_iterate.json"), iterate=steps)
    values = inputs_for(program, seed=steps)
    got, _ = run_cpu(program, values, threads=2, block=block)
    assert_matches(program, run_reference(program, values), got)


@pytest.mark.parametrize(
    ("value", "threads"), [("1", 1), ("3,2", 3), (" 2 ", 2), ("0", None), ("many", None)]
)
def test_omp_num_threads_sets_the_default(
    monkeypatch: pytest.MonkeyPatch, value: str, threads: int | None
) -> None:
    """``run --backend cpu`` follows OMP_NUM_THREADS as OpenMP programs do (issue 25); a value that is not
    a positive count leaves the processors' number."""
    import os

    from stencilmap.backends.cpu import default_threads

    monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert default_threads() == (threads if threads is not None else len(os.sched_getaffinity(0)))


def test_gcc_alone_gets_the_no_epilogue_param(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--param`` is gcc's (also when called ``cc``); another compiler gets the portable flags only."""
    from stencilmap import native
    from stencilmap.backends import cpu

    versions = {
        "/usr/bin/cc": "/usr/bin/cc\ncc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.",
        "/usr/bin/clang": "/usr/bin/clang\nDebian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu",
    }
    monkeypatch.setattr(native, "compiler_identity", versions.__getitem__)
    assert cpu.flags("/usr/bin/cc") == (*cpu.FLAGS, *cpu.GCC_FLAGS)
    assert cpu.flags("/usr/bin/clang") == cpu.FLAGS


def test_gcc_skips_the_loop_copies_the_kernel_never_runs() -> None:
    """Compile time (issue 26): no unswitched or alias/alignment-versioned copies of the loops."""
    from stencilmap.backends import cpu

    assert "-fno-unswitch-loops" in cpu.GCC_FLAGS
    assert "--param=vect-max-version-for-alias-checks=0" in cpu.GCC_FLAGS
    assert "--param=vect-max-version-for-alignment-checks=0" in cpu.GCC_FLAGS


@pytest.mark.parametrize("cores", [1, 2])
def test_a_program_of_many_stencils_is_one_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cores: int
) -> None:
    """Every stencil of a DAG goes into one build: one compiler run on one processor, on two a run for each
    half of the stencils (in parallel) and one link; none on the second call (the library is cached)."""
    from stencilmap import native
    from stencilmap.backends import cpu

    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu, "_PROGRAMS", {})
    monkeypatch.setattr(native, "_LOADED", {})
    monkeypatch.setattr(cpu, "processors", lambda: cores)
    runs: list[list[str]] = []
    real = native._run

    def counting(argv: list[str], *args: object, **kwargs: object) -> native.Finished:
        if "-shared" in argv:
            runs.append(argv)
        return real(argv, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(native, "_run", counting)
    p = parse_soda(
        "kernel: dag\ninput float: a(24, *)\n"
        + "".join(
            f"local float: t{k}(0, 0) = {'a' if k == 0 else f't{k - 1}'}(0, -1) + {'a' if k == 0 else f't{k - 1}'}(1, 0)\n"
            for k in range(7)
        )
        + "output float: b(0, 0) = t6(0, 0) * 0.5f\n",
        "dag.soda",
    )
    p = bind_shape(p, {}, (16, 24))
    assert len(make_plan(p).order) == 8
    cpu.compile_program(p)
    assert len(runs) == (1 if cores == 1 else 3)
    if cores == 2:  # the two parts' runs hold the stencil functions (loop nests, edges) and the driver, each
        # once: t1 … t6 read the stencil before them alike and share t1's functions (``cgen.generate``)
        parts = [{a for a in argv if a.startswith("-DSM_PART_")} for argv in runs if "-c" in argv]
        assert len(parts) == 2 and not parts[0] & parts[1]
        every = {f"-DSM_PART_{k}{e}" for k in (0, 1, 7) for e in ("", "E")} | {"-DSM_PART_DRIVER"}
        assert parts[0] | parts[1] == every
    monkeypatch.setattr(cpu, "_PROGRAMS", {})
    monkeypatch.setattr(native, "_LOADED", {})
    before = len(runs)
    cpu.compile_program(p)
    assert len(runs) == before


def test_a_large_window_program_equals_the_reference() -> None:
    """More than 32 reads (the edge at -O1, no vectorised epilogue): rows that end off a vector's multiple."""
    terms = " + ".join(f"v({i}, {j}) * {i * 7 + j + 1}.5f" for i in range(-3, 4) for j in range(-3, 3))
    p = parse_soda(f"kernel: big\ninput float: v(37, *)\noutput float: w(0, 0) = {terms}\nborder: ignore\n")
    for shape in ((23, 37), (9, 53)):
        prog = bind_shape(p, {}, shape)
        values = make_inputs(prog, {}, 1, None)
        got, _ = run_cpu(prog, values, threads=2)
        assert_matches(prog, run_reference(prog, values), got)


def test_a_failing_compiler_is_named_by_its_first_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A compiler's warnings before its error (clang's about an ignored flag, say) do not hide the error."""
    cc = tmp_path / "fakecc"
    cc.write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo "fakecc 1.0"; exit 0; fi\n'
        'echo "fakecc: warning: flag ignored" >&2\necho "kernel.c:5:10: fatal error: omp.h not found" >&2\nexit 1\n'
    )
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu, "_PROGRAMS", {})
    p = bind_shape(
        parse_soda("kernel: k\ninput float: a(8, *)\noutput float: b(0, 0) = a(0, 1)\n", "k.soda"), {}, (4, 8)
    )
    with pytest.raises(
        StencilmapError, match=r"exit status 1 on the generated code: .*fatal error: omp.h not found"
    ):
        cpu.compile_program(p)


def _wide(reads: int) -> Program:
    """A 1-D-window stencil of ``reads`` terms over the last axis (a 2-D grid), summed in parenthesised
    groups of 20 (a shallow expression tree: the test's thread has Python's default stack)."""
    terms = [f"a[j,k+{i}]" for i in range(reads)]
    groups = ["(" + " + ".join(terms[i : i + 20]) + ")" for i in range(0, reads, 20)]
    spec = {
        "inputs": {"a": {"data": "random:0-1", "data_type": "float32"}},
        "outputs": ["b"],
        "dimensions": [4, 64 + reads],
        "program": {"b": {"computation_string": "b = " + " + ".join(groups), "data_type": "float32"}},
    }
    return bind_shape(parse_stencilflow(json.dumps(spec), "wide.json"), {})


def test_a_huge_loop_nest_builds_with_gccs_superlinear_passes_off() -> None:
    """Windows of hundreds of reads: no induction-variable optimisation, a two-insn combiner (gcc took most
    of ten minutes on 3,000 reads); the corpus's loop nests keep the full flags. The result is unchanged."""
    cc = cpu.compiler()
    if "-fno-unswitch-loops" not in cpu.flags(cc):
        pytest.skip("not gcc")
    small, huge = (cgen.generate(make_plan(_wide(n))) for n in (9, 600))
    assert cgen.loop_nest_chars(huge) > cpu.HUGE_LOOP_CHARS > cgen.loop_nest_chars(small)
    assert set(cpu.HUGE_GCC_FLAGS) <= set(cpu.flags(cc, huge)) and not set(cpu.HUGE_GCC_FLAGS) & set(
        cpu.flags(cc, small)
    )
    p = _wide(600)
    values = inputs_for(p)
    assert_matches(p, run_reference(p, values), run_cpu(p, values)[0])
