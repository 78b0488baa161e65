"""``jobs.simulate``: a simulated output in its field's type."""

from __future__ import annotations

import warnings

import numpy as np

from stencilmap.jobs.simulate import as_field_dtype


def test_an_output_takes_its_type_without_a_warning_past_float64s_exact_range() -> None:
    """NaN (nothing stored) is 0 for integers; 2⁶³, where an int64 near its end rounds in float64 (the
    simulator's documented limit), wraps without printing NumPy's cast warning into the user's output."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = as_field_dtype(np.array([2.0**63, np.nan, 3.0]), "int64")
    assert got.dtype == np.int64 and list(got[1:]) == [0, 3]
    assert as_field_dtype(np.array([np.nan, 1.5]), "float32").dtype == np.float32
