"""Every corpus program and example simulates and validates under SODA, StencilFlow and the PCM.

k ∈ {1, 2} PEs for SODA and the PCM, W ∈ {1, 4} for StencilFlow; big corpus programs on smaller grids
(``helpers.SMALL_SHAPES``); programs whose data files were never published get seeded inputs.

The SODA designs of denoise3d, erosion, heat3d, jacobi3d, seidel2d, sobel2d, xcorr, jacobi2d_9pt and the
3-D StencilFlow Jacobis deadlocked until the simulator's middle-tap fix (``test_bugs``); they pass now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.errors import StencilmapError
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, corpus_or_skip
from tests.sim.helpers import built, explain, lanes_config, load_small, run_design

PROGRAMS: list[Path] = corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW) + EXAMPLE_FILES
LANES = {"soda": (1, 2), "stencilflow": (1, 4), "pcm": (1, 2)}


def cases() -> list[object]:
    out: list[object] = []
    for path in PROGRAMS:
        for arch, lanes in LANES.items():
            for k in lanes:
                name = path.name if path is not None else "corpus"
                out.append(pytest.param(path, arch, k, id=f"{name}-{arch}-{k}"))
    return out


@pytest.mark.parametrize(("path", "arch", "lanes"), cases())
def test_simulates_and_validates(path: Path, arch: str, lanes: int) -> None:
    if path is None:
        pytest.skip("../shared/corpus absent")
    program = load_small(path)
    try:
        program, design = built(program, arch, lanes_config(arch, lanes))
    except StencilmapError as exc:  # a builder that does not apply to this program says so
        pytest.skip(f"{arch} does not apply: {exc}")
    run = run_design(program, design)
    assert run.validation.valid, explain(run)
    assert run.result.status == "done" and run.result.deadlock is None
    assert run.result.cycles > 0 and run.result.output_points > 0
    stats = {m.name: m for m in run.result.modules}
    assert set(stats) == {m.name for m in run.design.modules}
    for m in stats.values():
        assert m.busy + m.starved + m.blocked <= run.result.cycles
    for peak, depth in run.result.channel_peaks.values():
        assert 0 <= peak <= depth


@pytest.mark.parametrize("steps", [2, 3])
@pytest.mark.parametrize(("arch", "lanes"), [("soda", 2), ("stencilflow", 2), ("pcm", 2), ("pcm", 1)])
def test_fdtd_feedback_by_name_simulates_bit_exact(arch: str, lanes: int, steps: int) -> None:
    """2-D FDTD (three fields per step, coefficients replayed) chained q = 2, 3 times on chip."""
    program = load_small(EXAMPLE_FILES[0].parent / "fdtd2d_iterate.json")
    program, design = built(program, arch, lanes_config(arch, lanes, iterate=steps))
    run = run_design(program, design)
    assert run.validation.bit_exact, explain(run)
    assert sum(o.points for o in run.validation.outputs) == 3 * 16 * 48  # constant boundaries: all defined
