"""Property: the reference executor equals a naive per-point evaluation on random programs."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from stencilmap.backends.reference import run_reference
from stencilmap.program.data import make_inputs
from stencilmap.program.ir import Program
from tests.naive import naive_run
from tests.strategies import programs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_reference_matches_naive_per_point(program: Program) -> None:
    values = make_inputs(program, {}, seed=3)
    ref = run_reference(program, values)
    outs, masks = naive_run(program, values)
    for name in program.outputs:
        np.testing.assert_array_equal(ref.defined[name], masks[name])
        np.testing.assert_array_equal(ref.outputs[name], outs[name])
        assert ref.outputs[name].dtype == outs[name].dtype
