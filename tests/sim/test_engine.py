"""The compiled engine (sim/engine.py, sim/csrc): its two ways of computing a PE's expression agree bit for
bit, its compiled code lives in STENCILMAP_CACHE_DIR and is reused, compiling is announced, and a missing
compiler is a clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stencilmap.errors import StencilmapError
from stencilmap.sim import SimConfig, SimResult, simulate
from stencilmap.sim import memory as K
from stencilmap.sim.engine import _straight_line
from stencilmap.sim.layout import pack
from stencilmap.sim.model import lower
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, corpus_or_skip
from tests.sim.helpers import built, explain, inputs_for, lanes_config, load_small, run_design, soda

PROGRAMS: list[Path] = corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW) + EXAMPLE_FILES
LANES = {"soda": 2, "stencilflow": 4, "pcm": 2}


def _same(a: SimResult, b: SimResult) -> None:
    assert (a.status, a.cycles, a.firings) == (b.status, b.cycles, b.firings)
    assert a.modules == b.modules
    assert a.channel_peaks == b.channel_peaks
    for name, x in a.outputs.items():
        assert x.tobytes() == b.outputs[name].tobytes(), name  # bit for bit, NaNs included


@pytest.mark.parametrize("arch", sorted(LANES))
@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name if p else "corpus" for p in PROGRAMS])
def test_compiled_expressions_equal_the_interpreter(path: Path, arch: str) -> None:
    if path is None:
        pytest.skip("../shared/corpus absent")
    try:
        program, design = built(load_small(path), arch, lanes_config(arch, LANES[arch]))
    except StencilmapError as exc:
        pytest.skip(f"{arch} does not apply: {exc}")
    values = inputs_for(program)
    compiled = simulate(program, design, values, SimConfig(evaluators="compile"))
    interpreted = simulate(program, design, values, SimConfig(evaluators="interpret"))
    _same(compiled, interpreted)


def test_every_operation_compiles_like_it_interprets() -> None:
    """Integer wrap-around, C division and modulo by zero, float→int casts, min/max, math functions: one
    program exercising them, both ways (selects are in the corpus's StencilFlow programs)."""
    text = (
        "kernel: ops\ninput int32: a(8, *)\ninput float: b(8, *)\n"
        "local int32: t(0, 0) = a(0, 0) * 65536 + a(1, 0) / (a(0, 1) - a(0, 1)) + a(0, 0) % 0\n"
        "local int32: u(0, 0) = b(0, 0) * 1e10f\n"
        "output float: o(0, 0) = (t(0, 0) > 3) * sqrt(b(0, 0)) + exp(b(1, 0)) + max(b(0, 0), b(0, 1))"
        " + u(0, 0) + min(b(1, 1), -b(0, 0))\n"
    )
    program, design = built(soda(text, (8, 16)), "soda", lanes_config("soda", 2))
    values = inputs_for(program)
    values["a"] = (values["a"] * 1000).astype(values["a"].dtype)
    _same(
        simulate(program, design, values, SimConfig(evaluators="compile")),
        simulate(program, design, values, SimConfig(evaluators="interpret")),
    )


def test_straight_line_code_keeps_the_stack_order() -> None:
    """(p0 - p1) with a stored temporary: slots become locals, operands keep their order."""
    rows = np.array([[0, 0, 0], [0, 1, 0], [4, 1, 0], [3, 0, 0], [2, 0, 0], [2, 0, 0], [4, 2, 0]], np.int64)
    code = _straight_line(3, rows)
    assert "s0 = binop(1, s0, s1, 0);" in code  # p0 - p1, not p1 - p0
    assert "t0 = s0;" in code and "s0 = binop(2, s0, s1, 0);" in code
    assert code.startswith("static double ev3(")


def _jacobi() -> tuple[object, object, dict[str, np.ndarray]]:
    text = "kernel: j\ninput float: v(16, *)\noutput float: w(0, 0) = v(0, -1) + v(0, 1) + v(-1, 0)\n"
    program, design = built(soda(text, (16, 16)), "soda", lanes_config("soda", 2))
    return program, design, inputs_for(program)


def test_compiled_code_lives_in_the_cache_dir_and_is_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "cache"))
    program, design, values = _jacobi()
    said: list[str] = []
    code = (
        "import sys\nfrom stencilmap.sim import SimConfig, simulate\n"
        "from tests.sim.test_engine import _jacobi\n"
        "p, d, v = _jacobi()\n"
        "r = simulate(p, d, v, SimConfig(evaluators='compile'), notify=lambda s: print('NOTE', s))\n"
        "print('COMPILE', r.compile_seconds)\n"
    )
    root = Path(__file__).parents[2]
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    second = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    assert first.stdout.count("NOTE compiling") == 2  # the engine, then this design's expressions
    assert "NOTE" not in second.stdout and "COMPILE 0.0" in second.stdout
    libraries = sorted(p.name.split("-")[0] for p in (tmp_path / "cache" / "sim").glob("*.so"))
    assert libraries == ["engine", "evaluators"]
    result = simulate(program, design, values, SimConfig(evaluators="compile"), notify=said.append)  # type: ignore[arg-type]
    assert said == [] and result.status == "done"


def test_a_missing_compiler_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("CC", "no-such-compiler")
    program, design, values = _jacobi()
    with pytest.raises(StencilmapError, match="needs a C compiler: 'no-such-compiler' was not found"):
        simulate(program, design, values)  # type: ignore[arg-type]


def test_ten_thousand_modules_simulate_in_linear_memory() -> None:
    """k = 16 lanes, q = 100 stages: 9,602 modules and 16,016 channels, valid; the engine's tables grow with
    modules, channels and the grid, nothing quadratic (the lowering once scanned every channel per module)."""
    text = (
        "kernel: big\nunroll factor: 16\ninput float: v(32, *)\n"
        "output float: w(0, 0) = (v(0, -1) + v(-1, 0) + v(0, 0) + v(1, 0) + v(0, 1)) * 0.2f\n"
        "iterate: 100\nborder: ignore\n"
    )
    program, design = built(soda(text, (204, 32)), "soda")
    assert len(design.modules) > 9_500
    values = inputs_for(program)
    packed = pack(lower(design, program, values))
    grid = 204 * 32
    tables = len(design.modules) * K.MCOLS + len(design.channels) * K.CCOLS
    assert packed.I.size < 2 * tables + 4 * grid
    run = run_design(program, design)
    assert run.validation.valid, explain(run)
