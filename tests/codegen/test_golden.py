"""Golden text of small designs (whitespace-normalised): the kernels a reader checks by eye, pinned so
that any change to the emitters shows up in review. Regenerate with STENCILMAP_REGEN_GOLDEN=1."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from stencilmap.codegen.registry import emit
from stencilmap.design.registry import BuildConfig
from tests.sim.helpers import built, inputs_for, soda

GOLDEN = Path(__file__).parent / "golden"
BLUR1D = """\
kernel: blur1d
burst width: 512
unroll factor: 1
input float: a(*)
output float: b(0) = (a(-1) + a(0) + a(1)) * 0.25f + a(0) * 0.5f
"""
CASES = {
    "blur1d_soda_hls_kernel.cpp": ("soda", "hls", BuildConfig(unroll=2), "kernel.cpp"),
    "blur1d_pcm_opencl_kernel.cl": ("pcm", "opencl", BuildConfig(unroll=2, iterate=2), "kernel.cl"),
    "blur1d_pcm_opencl_header.h": ("pcm", "opencl", BuildConfig(unroll=2, iterate=2), "blur1d_pcm.h"),
    "blur1d_stencilflow_opencl_kernel.cl": ("stencilflow", "opencl", BuildConfig(vector=2), "kernel.cl"),
}


def normalised(text: str) -> str:
    return "\n".join(re.sub(r"\s+", " ", ln).strip() for ln in text.splitlines() if ln.strip())


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    arch, target, config, file = CASES[name]
    program, design = built(soda(BLUR1D, (16,)), arch, config)
    text = dict(emit(target, design, program, inputs_for(program)).files)[file]
    path = GOLDEN / name
    if os.environ.get("STENCILMAP_REGEN_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert normalised(text) == normalised(path.read_text(encoding="utf-8"))


def test_output_is_deterministic() -> None:
    program, design = built(soda(BLUR1D, (16,)), "soda", BuildConfig(unroll=2))
    first = emit("hls", design, program, inputs_for(program)).files
    again = emit("hls", design, program, inputs_for(program)).files
    assert first == again
    assert [n for n, _ in first] == sorted(n for n, _ in first)
    for _, text in first:
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\d\d:\d\d:\d\d", text)  # no timestamps
