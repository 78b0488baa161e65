"""What the host-backend tests share: every bundled program with inputs, and the comparison with the oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stencilmap.backends.cexpr import uses_inexact_math
from stencilmap.backends.reference import Result
from stencilmap.errors import StencilmapError
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape, make_inputs, rng_for
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES

BUNDLED = EXAMPLE_FILES + CORPUS_SODA + CORPUS_STENCILFLOW
#: Big images made small (the semantics do not depend on the size).
SMALLER = {"blur.soda": (64, 64), "contrast.soda": (96, 80), "stencil1d_r8.json": (4099,)}


def bundled_params() -> list[object]:
    return [pytest.param(p, id=p.name) for p in BUNDLED]


def load_bound(path: Path) -> Program:
    return bind_shape(load_program(path), {}, SMALLER.get(path.name))


def inputs_for(program: Program, seed: int = 0) -> dict[str, np.ndarray]:  # type: ignore[type-arg]
    """The program's inputs; those whose data files were never published are generated instead."""
    supplied: dict[str, np.ndarray] = {}  # type: ignore[type-arg]
    for _ in range(len(program.inputs) + 1):
        try:
            return make_inputs(program, supplied, seed)
        except StencilmapError as exc:
            name = next(
                i.name for i in program.inputs if f"'{i.name}'" in str(exc) or f".{i.name}." in str(exc)
            )
            inp = program.input(name)
            assert inp is not None
            shape = tuple(int(program.shape[a] or 0) for a in inp.axes)
            supplied[name] = rng_for(seed, name).random(shape).astype(inp.dtype)
    raise AssertionError("could not make inputs")


def assert_matches(program: Program, ref: Result, got: Result, exact: bool | None = None) -> None:
    """Outputs equal the reference bit for bit (NaN where undefined), definedness too; programs calling
    transcendental functions (libm and NumPy may round the last bit differently) within 4 ulp."""
    exact = not uses_inexact_math(program) if exact is None else exact
    for name in program.outputs:
        np.testing.assert_array_equal(got.defined[name], ref.defined[name])
        a, b = ref.outputs[name], got.outputs[name]
        assert a.dtype == b.dtype and a.shape == b.shape
        if exact or a.dtype.kind != "f":
            np.testing.assert_array_equal(b, a)
        else:
            np.testing.assert_array_max_ulp(b, a, maxulp=4)
