"""The OpenCL channel target of StencilFlow designs: the channels hold what the design counts on."""

from __future__ import annotations

import json
import re
from pathlib import Path

from stencilmap.codegen.opencl_channels import pipeline_storage
from stencilmap.codegen.registry import emit
from stencilmap.design.registry import BuildConfig, build
from stencilmap.jobs.codegen import CodegenConfig, codegen
from stencilmap.program.load import load_program
from tests.sim.helpers import inputs_for

# b reads a two rows (24 points) ahead and s, whose pow has a latency of 30: the design lets s's pipeline
# hold s's first 24 results while b's buffer takes a's rows, and puts no delay buffer on s -> b
FAR_READ = {
    "inputs": {"a": {"data_type": "float32", "input_dims": ["j", "k"]}},
    "outputs": ["b"],
    "dimensions": [3, 12],
    "vectorization": 1,
    "program": {
        "s": {
            "computation_string": "s = a[j, k] ** 2.5",
            "boundary_conditions": {"a": {"type": "shrink"}},
            "data_type": "float32",
        },
        "b": {
            "computation_string": "b = a[j+2, k] - s[j, k]",
            "boundary_conditions": {"a": {"type": "constant", "value": 0.0}, "s": {"type": "shrink"}},
            "data_type": "float32",
        },
    },
}


def _program(tmp_path: Path, dimensions: list[int]) -> Path:
    path = tmp_path / "far_read.json"
    path.write_text(json.dumps({**FAR_READ, "dimensions": dimensions}), encoding="utf-8")
    return path


def test_a_pe_output_channel_declares_the_pipeline_the_design_counts_on(tmp_path: Path) -> None:
    program = load_program(_program(tmp_path, [3, 12]))
    design = build("stencilflow", program, BuildConfig())
    kernel = dict(emit("opencl", design, program, inputs_for(program)).files)["kernel.cl"]
    declared = dict(re.findall(r'sm_channel<\w+> \w+\("([^"]+)", (\d+)\)', kernel))
    pes = [m for m in design.modules if m.kind == "pe"]
    assert max(m.latency for m in pes) == 30  # the pow
    for c in design.channels:
        src = design.module(c.src)
        extra = src.latency if src.kind == "pe" else 0
        assert pipeline_storage(src) == extra
        if design.module(c.dst).kind not in ("fifo", "delay"):
            assert int(declared[c.name]) == c.depth + extra, c.name
    assert "(+ 30 beats in flight in s.pe)" in kernel  # the hardware declaration says why


def test_a_far_read_beside_a_long_pipeline_does_not_deadlock_the_emulation(
    tmp_path: Path, csim_cache: Path
) -> None:
    """The simulator ran these designs to completion; the emulation, whose PE kernels hold one beat,
    deadlocked (difffuzz seed 31 cases 19, 23, 25, 27), on a grid longer than the reach (3x12) and on
    one row, where the reach is capped at the stream (1x12)."""
    for dims in ([3, 12], [1, 12]):
        config = CodegenConfig(
            program=_program(tmp_path, dims),
            target="opencl",
            out_dir=tmp_path / f"out{dims[0]}",
            verify=True,
            cache_dir=csim_cache,
        )
        v = codegen(config).verification
        assert v is not None
        assert v.valid, v.message
