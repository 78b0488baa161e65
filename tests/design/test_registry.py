"""Every builder builds and verifies every corpus program and example, for several parameter choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError

from .helpers import PROGRAM_FILES, bound, ident


def chains(path: Path) -> bool:
    """Whether the program's outputs can feed its inputs (iterate > 1 is possible): by name when it
    has a ``feedback`` mapping, else positionally."""
    p = bound(path)
    if p.feedback:
        return True
    ins = [(i.dtype, i.axes) for i in p.inputs]
    return ins == [(p.field_dtype(o), tuple(range(p.rank))) for o in p.outputs]


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=ident)
@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_every_program_builds_with_every_builder(path: Path, arch: str) -> None:
    p = bound(path)
    for k in (1, 2, 4):
        for q in (1, 2):
            config = BuildConfig(unroll=k, iterate=q, vector=k)
            if q > 1 and not chains(path):
                with pytest.raises(StencilmapError, match="cannot chain 2 iterations"):
                    build(arch, p, config)
                continue
            d = build(arch, p, config)  # build() runs verify_design
            assert d.arch == arch and d.name == p.name and d.notes == ()


def test_unknown_architecture_and_device() -> None:
    p = bound(PROGRAM_FILES[-1])
    with pytest.raises(StencilmapError, match="unknown architecture 'nope'"):
        build("nope", p, BuildConfig())
    assert build("pcm", p, BuildConfig(device="ku060")).device == "ku060"
    with pytest.raises(StencilmapError, match="unknown device 'no-such-board'"):
        build("pcm", p, BuildConfig(device="no-such-board"))  # the builders read its operator latencies


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
@pytest.mark.parametrize("field", ["unroll", "vector", "iterate"])
def test_zero_is_not_a_default(arch: str, field: str) -> None:
    p = bound(PROGRAM_FILES[-1])
    config = BuildConfig(**{field: 0})  # type: ignore[arg-type]
    used = field == "iterate" or (field == "vector") == (arch == "stencilflow")
    if used:
        with pytest.raises(StencilmapError, match="at least 1"):
            build(arch, p, config)
    else:
        build(arch, p, config)
