"""benchmarks/gpu_static.py: the table of what NVRTC makes of the gpu backend's kernels (registers, spills,
loads a point of the interior loop) for the default tuning, a shallower unroll and the register queue."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stencilmap.backends.nvrtc import nvrtc_missing
from tests.conftest import ROOT


@pytest.mark.skipif(bool(nvrtc_missing()), reason=nvrtc_missing() or "NVRTC is here")
def test_the_table_has_every_row_and_the_queue_takes_loads_away() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_static.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [
        line.split()
        for line in out.splitlines()
        if line.startswith(("gpu_bench", "contrast", "star3d", "jacobi2d"))
    ]
    assert len(rows) == 6 * 3
    j3d = {r[4]: r[5:] for r in rows if r[:3] == ["gpu_bench", "3-D", "7-pt"]}
    assert j3d["rotate"][2] == "5.00" and float(j3d["default"][2]) > 5  # one load a column a point
    assert all(r[-2] == "0" for r in rows)  # nothing spilled
