"""DOT output: deterministic text that mentions every module and channel."""

from __future__ import annotations

import pytest

from stencilmap.codegen.dot import to_dot
from stencilmap.design.registry import BuildConfig, build, builders
from tests.conftest import EXAMPLES
from tests.design.helpers import JACOBI_M9, bound, soda


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_dot_is_deterministic_and_complete(arch: str) -> None:
    p = bound(EXAMPLES / "fdtd2d.json")
    first = to_dot(build(arch, p, BuildConfig(unroll=2)))
    again = to_dot(build(arch, bound(EXAMPLES / "fdtd2d.json"), BuildConfig(unroll=2)))
    assert first == again
    d = build(arch, p, BuildConfig(unroll=2))
    assert first.startswith(f'digraph "{p.name}" {{') and first.endswith("}\n")
    for m in d.modules:
        assert f'"{m.name}" [shape=' in first
    assert first.count(" -> ") == len(d.channels)


def test_dot_of_the_paper_example() -> None:
    text = to_dot(build("soda", soda(JACOBI_M9, (20, 9)), BuildConfig()))
    assert '"stage0.a.c0.tap[9]" -> "stage0.a.c0.fifo[3,9]"' in text
    assert "offset=-9" in text and "depth=2" in text
    assert "(soda) burst_width=512, k=3, q=1" in text


def test_three_builders_are_registered() -> None:
    assert {"soda", "stencilflow", "pcm"} <= set(builders())
