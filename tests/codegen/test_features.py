"""Generated code on the features that stress it: tiles narrower than the input, k > 1 with q > 1,
integer kernels that overflow, divide by zero and convert NaN, NumPy-semantics operators, copy and
constant boundaries, vectorised StencilFlow with lower-dimensional inputs — each verified bit-exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stencilmap.design.registry import BuildConfig
from stencilmap.program.data import bind_shape
from stencilmap.program.stencilflow import parse_stencilflow
from tests.codegen.helpers import explain, load_example, needs_runtime, run_generated
from tests.conftest import EXAMPLES
from tests.sim.helpers import built, load_small, soda

INT_SODA = """\
kernel: intmix
burst width: 256
unroll factor: 2
input int16: a(16, *)
input uint8: b(16, *)
output int16: o(0, 0) = int16((a(0, 0) * a(1, 0) * 977 + b(0, 1) * b(0, -1)) / (a(0, 1) % 7)
    + int32(float(a(-1, 0)) * 1000000.0f) - b(0, 0) * b(1, 0) + int32(sqrt(float(a(0, 0))))
    + select(a(0, 0) > 0, max(a(0, 0), a(0, 1)), -a(1, 0)))
"""

NUMPY_JSON = """\
{
  "inputs": {
    "a": {"data": "random:-100-100", "data_type": "int8"},
    "c": {"data": "random:0-1", "data_type": "float32", "input_dims": ["k"]},
    "s": {"data": 3, "data_type": "int32", "input_dims": []}
  },
  "outputs": ["o", "f"],
  "dimensions": [6, 20],
  "program": {
    "o": {
      "computation_string": "o = a[j, k] * a[j, k + 1] + a[j - 1, k] // (a[j, k - 1] - 3) - a[j + 1, k] % (a[j, k] + 1) + a[j, k] ** 2",
      "boundary_conditions": {"a": {"type": "constant", "value": 1}},
      "data_type": "int8"
    },
    "f": {
      "computation_string": "t = c[k + 1] * s; f = min(t, a[j, k] / 3.0) if a[j, k] > 0 else floor(c[k - 1] / 0.0 + 1)",
      "boundary_conditions": {"a": {"type": "copy"}, "c": {"type": "copy"}, "s": {"type": "constant", "value": 0}},
      "data_type": "float32"
    }
  }
}
"""

PAIRS = (("soda", "hls"), ("stencilflow", "hls"), ("pcm", "opencl"), ("stencilflow", "opencl"))
IDS = [f"{a}-{t}" for a, t in PAIRS]


def _lanes(arch: str, k: int) -> BuildConfig:
    return BuildConfig(vector=k) if arch == "stencilflow" else BuildConfig(unroll=k)


def _verify(program, arch: str, target: str, config: BuildConfig, tmp: Path, cache: Path, values=None):  # type: ignore[no-untyped-def]
    needs_runtime(arch, target)
    program, design = built(program, arch, config)
    run = run_generated(program, design, target, tmp, cache, values)
    assert run.validation.valid, explain(run)
    return run


@pytest.mark.parametrize(("arch", "target"), PAIRS, ids=IDS)
def test_integer_overflow_division_by_zero_and_nan_casts(
    arch: str, target: str, tmp_path: Path, csim_cache: Path
) -> None:
    program = soda(INT_SODA, (12, 16))
    rng = np.random.default_rng(7)
    values = {
        "a": rng.integers(-32768, 32768, size=(12, 16)).astype(np.int16),
        "b": rng.integers(0, 256, size=(12, 16)).astype(np.uint8),
    }
    values["a"][3, :4] = 7  # a % 7 == 0: integer division by zero
    run = _verify(program, arch, target, _lanes(arch, 2), tmp_path, csim_cache, values)
    assert run.validation.bit_exact


@pytest.mark.parametrize(("arch", "target"), PAIRS, ids=IDS)
def test_numpy_semantics_lower_dimensional_inputs_and_boundaries(
    arch: str, target: str, tmp_path: Path, csim_cache: Path
) -> None:
    program = bind_shape(parse_stencilflow(NUMPY_JSON), {}, None)
    rng = np.random.default_rng(3)
    values = {
        "a": rng.integers(-128, 128, size=(6, 20)).astype(np.int8),
        "c": rng.random(20).astype(np.float32),
        "s": np.asarray(3, dtype=np.int32),
    }
    values["a"][2, :5] = 3  # a - 3 == 0: floor division by zero
    run = _verify(
        program, arch, target, _lanes(arch, 4 if arch == "stencilflow" else 2), tmp_path, csim_cache, values
    )
    assert run.validation.bit_exact


def test_soda_tiles_narrower_than_the_input_with_k_and_q(tmp_path: Path, csim_cache: Path) -> None:
    program = load_small(EXAMPLES / "jacobi2d.soda")
    run = _verify(program, "soda", "hls", BuildConfig(unroll=2, iterate=3, tile=(24,)), tmp_path, csim_cache)
    params = dict(run.design.parameters)
    assert params["tiles_total"] > 1 and params["k"] == 2 and params["q"] == 3
    assert run.validation.bit_exact


def test_soda_3d_tiles(tmp_path: Path, csim_cache: Path) -> None:
    program = load_small(EXAMPLES / "jacobi3d.soda")
    program = bind_shape(program, {}, (6, 12, 20))
    run = _verify(program, "soda", "hls", BuildConfig(unroll=2, tile=(8, 10)), tmp_path, csim_cache)
    assert dict(run.design.parameters)["tiles_total"] >= 4
    assert run.validation.bit_exact


def test_pcm_opencl_d_pcms_and_p_cell(tmp_path: Path, csim_cache: Path) -> None:
    program = load_example(EXAMPLES / "laplace2d.soda")
    run = _verify(program, "pcm", "opencl", BuildConfig(unroll=3, iterate=3), tmp_path, csim_cache)
    header = dict(run.generated.files)[f"{run.generated.top}.h"]
    assert "#define D 3" in header and "#define P_CELL 3" in header
    assert run.validation.bit_exact


def test_vectorised_stencilflow_with_lower_dimensional_inputs(tmp_path: Path, csim_cache: Path) -> None:
    program = load_example(EXAMPLES / "dag_listing1.json")
    for target in ("hls", "opencl"):
        run = _verify(program, "stencilflow", target, BuildConfig(vector=4), tmp_path / target, csim_cache)
        assert run.validation.bit_exact


@pytest.mark.parametrize(("p_cell", "d"), [(1, 2), (2, 3)])
def test_pcm_opencl_fdtd_feedback_by_name(p_cell: int, d: int, tmp_path: Path, csim_cache: Path) -> None:
    """2-D FDTD (OpenCL paper Tables 4/5): three fields chained through D PCMs, each read ahead by its
    own lag, and the coefficients read by every PCM."""
    program = load_example(EXAMPLES / "fdtd2d_iterate.json")
    run = _verify(program, "pcm", "opencl", BuildConfig(unroll=p_cell, iterate=d), tmp_path, csim_cache)
    assert run.validation.bit_exact


LAPLACE_PRESERVE = """\
kernel: laplace_preserve
burst width: 64
unroll factor: 2
input float: v(20, *)
output float: w(0, 0) = 0.25f * (v(0, -1) + v(-1, 0) + v(1, 0) + v(0, 1))
iterate: 3
border: preserve
"""


@pytest.mark.parametrize(("arch", "target"), [("soda", "hls"), ("pcm", "opencl"), ("stencilflow", "opencl")])
def test_preserve_without_a_centre_read(arch: str, target: str, tmp_path: Path, csim_cache: Path) -> None:
    """The Laplace stencil reads no centre; the PE taps it to keep the border (``border: preserve``)."""
    needs_runtime(arch, target)
    program = soda(LAPLACE_PRESERVE, (12, 20))
    config = BuildConfig(iterate=2) if arch == "stencilflow" else BuildConfig(unroll=2, iterate=2)
    program, design = built(program, arch, config)
    run = run_generated(program, design, target, tmp_path, csim_cache)
    assert run.validation.valid and run.validation.bit_exact, explain(run)


@pytest.mark.parametrize("kind", ["constant", "copy"])
@pytest.mark.parametrize(("arch", "target"), [("soda", "hls"), ("pcm", "opencl")])
def test_preserve_with_constant_and_copy_boundaries(
    kind: str, arch: str, target: str, tmp_path: Path, csim_cache: Path
) -> None:
    """``border: preserve`` where a constant or copy boundary reads a field defined everywhere: the kept
    ring is the box the shrink reads leave (``analysis.halos.defined_halo``)."""
    from tests.sim.test_preserve_centreless import mixed

    needs_runtime(arch, target)
    program, design = built(mixed(kind), arch, BuildConfig(unroll=2, iterate=2))
    run = run_generated(program, design, target, tmp_path, csim_cache)
    assert run.validation.valid and run.validation.bit_exact, explain(run)
