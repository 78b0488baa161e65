"""Every example verifies under each (arch, target) pair, at small shapes with k = 2 / W = 2 (CI); the
whole corpus with k = 2, W = 4 runs under ``STENCILMAP_CODEGEN_FULL=1`` (marker ``codegen_full``).

Verification runs the generated code here — HLS C++ as a g++ C simulation, the PCM kernel on PoCL,
StencilFlow channels in the threaded emulation — and compares with the reference: integers exactly,
floats bit-exact for + − × ÷ (library functions within the documented tolerance).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.errors import StencilmapError
from tests.codegen.conftest import FULL
from tests.codegen.helpers import PAIRS, explain, generate_and_run, load_example, needs_runtime
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, corpus_or_skip
from tests.sim.helpers import lanes_config

LANES = {"soda": (2,), "stencilflow": (4,), "pcm": (2,)}


def _check(path: Path, arch: str, target: str, lanes: int, tmp_path: Path, cache: Path) -> None:
    needs_runtime(arch, target)
    program = load_example(path)
    try:
        run = generate_and_run(program, arch, target, lanes_config(arch, lanes), tmp_path, cache)
    except StencilmapError as exc:  # a builder or target that does not apply to this program says so
        pytest.skip(f"{arch}/{target} does not apply: {exc}")
    assert run.result.status == "done", explain(run)
    assert run.validation.valid, explain(run)
    if not any(o.points for o in run.validation.outputs):  # e.g. vectorization.json: inline 2×2×2 data
        pytest.skip("no output point is defined at this program's shape: nothing to compare")


@pytest.mark.parametrize(("arch", "target"), PAIRS, ids=[f"{a}-{t}" for a, t in PAIRS])
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_examples_verify(path: Path, arch: str, target: str, tmp_path: Path, csim_cache: Path) -> None:
    _check(path, arch, target, 2, tmp_path, csim_cache)


def _full_cases() -> list[object]:
    out: list[object] = []
    for path in corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW):
        for arch, target in PAIRS:
            for k in LANES[arch]:
                name = path.name if path is not None else "corpus"
                out.append(pytest.param(path, arch, target, k, id=f"{name}-{arch}-{target}-{k}"))
    return out


@pytest.mark.codegen_full
@pytest.mark.skipif(not FULL, reason="the full corpus sweep runs with STENCILMAP_CODEGEN_FULL=1")
@pytest.mark.parametrize(("path", "arch", "target", "lanes"), _full_cases())
def test_corpus_verifies(
    path: Path, arch: str, target: str, lanes: int, tmp_path: Path, csim_cache: Path
) -> None:
    if path is None:
        pytest.skip("../shared/corpus absent")
    _check(path, arch, target, lanes, tmp_path, csim_cache)
