"""``jobs.simulate``: a simulated output in its field's type; the simulator's default cycle limit."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import stencilmap.sim as sim
from stencilmap.design.registry import BuildConfig, build
from stencilmap.jobs.simulate import as_field_dtype, simulate_dataflow
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim import SimConfig
from stencilmap.sim.interface import default_cycle_limit
from tests.conftest import EXAMPLES


def test_an_output_takes_its_type_without_a_warning_past_float64s_exact_range() -> None:
    """NaN (nothing stored) is 0 for integers; 2⁶³, where an int64 near its end rounds in float64 (the
    simulator's documented limit), wraps without printing NumPy's cast warning into the user's output."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = as_field_dtype(np.array([2.0**63, np.nan, 3.0]), "int64")
    assert got.dtype == np.int64 and list(got[1:]) == [0, 3]
    assert as_field_dtype(np.array([np.nan, 1.5]), "float32").dtype == np.float32


def test_the_default_cycle_limit_allows_twice_the_prediction() -> None:
    """A 300-stencil 3-D chain of 4,096 points fills for ~168,000 cycles, more than 10× its stream + 100,000:
    the default limit stopped it ("ended with status limit"); it now allows twice the model's cycles too."""
    assert default_cycle_limit(4_096, SimConfig()) == 140_960
    assert default_cycle_limit(4_096, SimConfig(predicted_cycles=168_196)) == 436_392


def test_simulate_gives_the_simulator_the_models_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[SimConfig] = []
    real = sim.simulate

    def spy(*args: Any) -> Any:
        seen.append(args[3])
        return real(*args)

    monkeypatch.setattr(sim, "simulate", spy)
    program = bind_shape(load_program(EXAMPLES / "jacobi2d.soda"), {}, (32, 32))
    design = build("soda", program, BuildConfig(unroll=2))
    run = simulate_dataflow(program, design, make_inputs(program, {}, 0), None)
    assert run.validation.valid and seen[0].max_cycles is None
    assert seen[0].predicted_cycles == run.predicted_cycles > 0
