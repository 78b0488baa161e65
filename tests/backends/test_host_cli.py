"""``stencilmap run --backend``: JSON timings, option errors as one line with exit 2 and nothing written,
the compiled library reused by a second process, and the ``stencilmap.run`` Python API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import stencilmap as sm
from stencilmap.cli import main
from tests.conftest import EXAMPLES

JACOBI = str(EXAMPLES / "jacobi2d.soda")


def test_cpu_json_reports_kernel_time_and_rate(tmp_path: Path) -> None:
    args = ["run", JACOBI, "--backend", "cpu", "--shape", "96,80", "--iterate", "6", "--threads", "2",
            "--json", "--out", str(tmp_path)]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert r["backend"] == "cpu" and r["iterate"] == 6 and r["shape"] == [96, 80]
    assert r["compute_seconds"] > 0 and r["compile_seconds"] is not None
    assert r["gcells_per_s"] == pytest.approx(96 * 80 * 6 / r["compute_seconds"] / 1e9, rel=1e-3)
    ref = CliRunner().invoke(
        main, ["run", JACOBI, "--shape", "96,80", "--iterate", "6", "--out", str(tmp_path / "r")]
    )
    assert ref.exit_code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), np.load(tmp_path / "r" / "w.npy"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--backend", "fpga"], "unknown backend 'fpga'"),
        (["--backend", "cpu", "--threads", "0"], "--threads must be between 1"),
        (["--backend", "dask", "--chunks", "0,5"], "--chunks sizes must be positive"),
        (["--backend", "dask", "--chunks", "8,8,8"], "--chunks has 3 sizes"),
        (["--backend", "dask", "--chunks", "x"], "--chunks: expected sizes"),
        (["--iterate", "0"], "--iterate must be ≥ 1"),
        (["--chunks", "4,4"], "--chunks applies to --backend dask only"),  # the numpy backend
        (
            ["--backend", "cpu", "--scheduler", "tcp://127.0.0.1:9"],
            "--scheduler applies to --backend dask only",
        ),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path: Path, extra: list[str], message: str) -> None:
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["run", JACOBI, "--out", str(out), *extra])
    assert res.exit_code == 2
    assert res.output.startswith("error: ") and message in res.output and res.output.count("\n") == 1
    assert not out.exists()


def test_gpu_without_cupy_exits_2_with_the_reason(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    res = CliRunner().invoke(main, ["run", JACOBI, "--backend", "gpu", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "needs CuPy" in res.output and res.output.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_iterate_override_is_verified(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["run", str(EXAMPLES / "dag_listing1.json"), "--iterate", "3", "--out", str(tmp_path)]
    )
    assert res.exit_code == 2 and "iterate" in res.output


def test_compiled_code_is_cached_across_processes(tmp_path: Path) -> None:
    code = (
        "import sys, stencilmap as sm\n"
        "from stencilmap.backends.cpu import run_cpu\n"
        "from stencilmap.program import load_program\n"
        "from stencilmap.program.data import bind_shape, make_inputs\n"
        f"p = bind_shape(load_program({JACOBI!r}), {{}}, (40, 40))\n"
        "r, t = run_cpu(p, make_inputs(p, {}, 0), threads=1)\n"
        "print(t.compiled, t.compile_seconds)\n"
    )
    env = {**os.environ, "STENCILMAP_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split()[0] == "True" and second.stdout.split()[0] == "False"
    assert float(first.stdout.split()[1]) < 10  # the 2 s, with room for a loaded CI machine
    assert list((tmp_path / "cpu").glob("*.so"))


@pytest.mark.parametrize("backend", ["numpy", "cpu", "dask"])
def test_python_api(backend: str) -> None:
    v = np.random.default_rng(1).random((30, 20)).astype(np.float32)
    res = sm.run(JACOBI, {"v": v}, backend=backend, iterate=3, threads=2)
    ref = sm.run(JACOBI, {"v": v}, iterate=3)
    np.testing.assert_array_equal(res.outputs["w"], ref.outputs["w"])
    assert res.outputs["w"].shape == (30, 20) and res.defined["w"].all()


def test_import_stays_light() -> None:
    code = "import sys, stencilmap; print(any(m in sys.modules for m in ('numba', 'dask', 'cupy')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
