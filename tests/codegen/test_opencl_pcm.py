"""The OpenCL kernel of a PCM design (``codegen.opencl_pcm``), run on PoCL against the reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.codegen.registry import emit
from stencilmap.design.registry import BuildConfig
from stencilmap.program.data import bind_shape
from stencilmap.program.soda import parse_soda
from tests.codegen.helpers import explain, needs_runtime, run_generated
from tests.sim.helpers import built

UNREAD_INPUT = """kernel: k
input float: a(8, *)
input int64: unused
output float:
  b(0, 0) = a(0, 1) + a(1, 0)
iterate: {q}
feedback: b -> a
border: ignore
"""


@pytest.mark.parametrize("lanes", [1, 2])
@pytest.mark.parametrize("q", [1, 2])
def test_an_input_nothing_reads_is_no_argument_and_not_loaded(
    q: int, lanes: int, tmp_path: Path, csim_cache: Path
) -> None:
    """Found by ``benchmarks/difffuzz.py``: the kernel loaded every input of the program, also one no stencil
    reads, which has no reader module and so no kernel argument (``in_unused``: an undeclared identifier)."""
    needs_runtime("pcm", "opencl")
    program, design = built(bind_shape(parse_soda(UNREAD_INPUT.format(q=q), "k.soda"), {}, (5, 8)), "pcm",
                            BuildConfig(unroll=lanes))  # fmt: skip
    kernel = dict(emit("opencl", design, program, {}).files)["kernel.cl"]
    assert "in_a" in kernel and "unused" not in kernel
    run = run_generated(program, design, "opencl", tmp_path, csim_cache)
    assert run.validation.valid, explain(run)


DEAD_FIRST_PASS = """kernel: k
input float: x(8, *)
input float: y
output float:
  p(0, 0) = y(0, 0) + 1.0f
output float:
  q(0, 0) = x(0, 1) + x(1, 0)
iterate: 2
feedback: q -> y
border: ignore
"""


def test_a_fed_input_whose_first_pass_is_dead_is_not_loaded(tmp_path: Path, csim_cache: Path) -> None:
    """Found by ``benchmarks/difffuzz.py``: only the last pass's ``p`` is written, so memory's ``y`` (read by
    the first pass's ``p`` alone) reaches no output and the design has no reader for it; PCM 0's registers
    took ``x_y``, never declared. They now take zeros, which nothing reads."""
    needs_runtime("pcm", "opencl")
    program, design = built(
        bind_shape(parse_soda(DEAD_FIRST_PASS, "k.soda"), {}, (5, 8)), "pcm", BuildConfig()
    )
    kernel = dict(emit("opencl", design, program, {}).files)["kernel.cl"]
    assert "in_y" not in kernel and "x_y" not in kernel
    run = run_generated(program, design, "opencl", tmp_path, csim_cache)
    assert run.validation.valid, explain(run)
