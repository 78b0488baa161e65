"""The compiled backends' plan: ``border: preserve`` fills a fed output after the pass, so a stencil of the same
pass reading that output sees the pass's own values and their undefined border (the reference's rule). Found by
``benchmarks/difffuzz.py``: cpu, dask and the gpu backend filled in place, so the reader was defined (and took
the preserved input's values) where the reference leaves it undefined."""

from __future__ import annotations

import pytest

from stencilmap.backends.gpu import run_gpu
from stencilmap.backends.plan import make_plan, pass_values_read
from stencilmap.backends.reference import run_reference
from stencilmap.backends.registry import HostOptions, execute
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from tests.backends.common import assert_matches
from tests.backends.gpu_emulator import GXX, EmulatedDevice

READ_IN_PASS = """kernel: pres
input float: a(8, *)
input float: c
output float:
  b(0, 0) = a(1, 0) + a(0, 1)
output float:
  x(0, 0) = b(0, 0)
output float:
  d(0, 0) = x(0, 0) * 2.0f + c(0, 0)
iterate: {q}
feedback: b -> a, d -> c
border: preserve
"""


@pytest.mark.parametrize("backend", ["cpu", "dask", "gpu"])
@pytest.mark.parametrize("q", [1, 3])
def test_a_preserved_output_read_in_its_pass_is_undefined_at_the_border(backend: str, q: int) -> None:
    p = bind_shape(parse_soda(READ_IN_PASS.format(q=q), "t.soda"), {}, (6, 8))
    values = make_inputs(p, {}, 2)
    ref = run_reference(p, values)
    assert not ref.defined["x"][-1].any()  # undefined where b's window leaves the grid ...
    if q == 1:  # ... and so is d, which its input fills there
        assert (ref["d"][-1] == values["c"][-1]).all()
    if backend == "gpu":
        if GXX is None:
            pytest.skip("the gpu emulator needs g++")
        got = run_gpu(p, values, EmulatedDevice()).result
    else:
        got = execute(p, values, HostOptions(backend, threads=2, block=2)).result
    assert_matches(p, ref, got)


def test_programs_without_such_reads_are_planned_unchanged() -> None:
    """Only a same-pass read of a preserved output costs the extra copy stencil."""
    jacobi = READ_IN_PASS.replace("x(0, 0) = b(0, 0)", "x(0, 0) = a(0, 0)").format(q=2)
    p = bind_shape(parse_soda(jacobi, "t.soda"), {}, (6, 8))
    assert pass_values_read(p) is p
    split = make_plan(bind_shape(parse_soda(READ_IN_PASS.format(q=2), "t.soda"), {}, (6, 8)))
    assert [s.name for s in split.order] == ["b__pass", "b", "x", "d"]
    assert split.program.outputs == ("b", "x", "d")
