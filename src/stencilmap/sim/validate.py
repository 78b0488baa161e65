"""Validation: a simulation's outputs against the NumPy reference, on the points the reference defines.

Tolerance (stated, per output dtype):

* integers and bool: exact — integer arithmetic wraps the same way in every executor;
* floats: ``|got − expected| ≤ rtol·|expected| + atol`` with ``rtol`` = 1e-3 (float16), 1e-5 (float32),
  1e-12 (float64) and an absolute floor ``atol = rtol · max|expected|`` over the output's defined
  points (plus the dtype's smallest normal, so an all-zero output still tolerates subnormal noise).

Why a tolerance at all: ``+ − × ÷`` and ``sqrt`` are correctly rounded (IEEE 754), so an executor that
performs the same operations in the same order in the same precision is bit-exact by construction, and
the simulator is expected to be. Library functions (``exp``, ``sin``, ``pow``, ...) are not correctly
rounded: two libraries may differ by an ulp, and a later subtraction can turn that ulp into a large
*relative* error of a small result — hence the floor relative to the output's magnitude rather than to
each point's. ``bit_exact`` says whether the stricter property held anyway (NaN matching NaN).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
BoolArray = npt.NDArray[np.bool_]

#: Relative tolerance by float dtype (see the module docstring).
RTOL = {"float16": 1e-3, "float32": 1e-5, "float64": 1e-12}


@dataclass(frozen=True, slots=True)
class Tolerance:
    """``|got − expected| ≤ rtol·|expected| + atol``; (0, 0) means exact."""

    rtol: float
    atol: float

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0

    def describe(self) -> str:
        if self.exact:
            return "exact"
        return f"rtol {self.rtol:g}, atol {self.atol:.3g}"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A point beyond tolerance: its C-order index, the simulated and the reference value."""

    index: tuple[int, ...]
    got: float | int
    expected: float | int


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """One output compared on the reference's defined points."""

    name: str
    dtype: str
    points: int  # defined points compared
    tolerance: Tolerance
    bit_exact: bool
    max_abs_error: float  # inf when a NaN or infinity differs
    max_rel_error: float
    mismatches: int  # points beyond tolerance
    first_mismatch: Mismatch | None

    @property
    def within_tolerance(self) -> bool:
        return self.mismatches == 0


@dataclass(frozen=True, slots=True)
class Validation:
    """Every output's check; ``valid`` also needs the simulation to have finished (status "done")."""

    status: str
    outputs: tuple[OutputCheck, ...]

    @property
    def valid(self) -> bool:
        return self.status == "done" and all(o.within_tolerance for o in self.outputs)

    @property
    def bit_exact(self) -> bool:
        return all(o.bit_exact for o in self.outputs)

    @property
    def max_abs_error(self) -> float:
        return max((o.max_abs_error for o in self.outputs), default=0.0)

    @property
    def first_mismatch(self) -> tuple[str, Mismatch] | None:
        for o in self.outputs:
            if o.first_mismatch is not None:
                return o.name, o.first_mismatch
        return None


def tolerance(dtype: np.dtype[Any], expected: Array) -> Tolerance:
    """The tolerance for an output of ``dtype`` whose defined reference values are ``expected``."""
    if dtype.kind != "f":
        return Tolerance(0.0, 0.0)
    rtol = RTOL.get(dtype.name, RTOL["float64"])
    finite = expected[np.isfinite(expected)]
    scale = float(np.max(np.abs(finite.astype(np.float64)))) if finite.size else 0.0
    return Tolerance(rtol, rtol * scale + float(np.finfo(dtype).tiny))


def validate(
    status: str,
    simulated: Mapping[str, Array],
    expected: Mapping[str, Array],
    defined: Mapping[str, BoolArray],
) -> Validation:
    """Compare every reference output with the simulated one of the same name, on its defined points."""
    checks = tuple(check_output(name, simulated[name], expected[name], defined[name]) for name in expected)
    return Validation(status, checks)


def check_output(name: str, got: Array, expected: Array, defined: BoolArray) -> OutputCheck:
    """One output: exactness, errors, and the first defined point (C order) beyond tolerance."""
    got = np.asarray(got).astype(expected.dtype, copy=False)
    g, e = got[defined], expected[defined]
    tol = tolerance(expected.dtype, e)
    same = _bitwise_equal(g, e)
    gf, ef = g.astype(np.float64), e.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.where(same, 0.0, np.abs(gf - ef))
        diff = np.where(np.isnan(diff), np.inf, diff)
        ok = same | (diff <= tol.rtol * np.abs(ef) + tol.atol)
        rel = np.where(same, 0.0, diff / np.maximum(np.abs(ef), np.finfo(np.float64).tiny))
    bad = np.flatnonzero(~ok)
    first = None
    if bad.size:
        where = np.argwhere(defined)[int(bad[0])]
        index = tuple(int(i) for i in where)
        first = Mismatch(index, got[index].item(), expected[index].item())
    return OutputCheck(
        name=name,
        dtype=str(expected.dtype),
        points=int(e.size),
        tolerance=tol,
        bit_exact=bool(same.all()),
        max_abs_error=float(diff.max(initial=0.0)),
        max_rel_error=float(rel.max(initial=0.0)),
        mismatches=int(bad.size),
        first_mismatch=first,
    )


def _bitwise_equal(got: Array, expected: Array) -> BoolArray:
    """Identical bit patterns, any NaN matching any NaN (payloads are not compared)."""
    if expected.dtype.kind != "f":
        return np.asarray(got == expected)
    view = np.dtype(f"u{expected.dtype.itemsize}")
    both_nan = np.isnan(got) & np.isnan(expected)
    return np.asarray((got.view(view) == expected.view(view)) | both_nan)
