"""benchmarks/gpu_bench.py's parts that need no GPU: the comma lists, a --program problem's bytes a step, the
rows of stencilmap's launches and tunings, and the verdict lines a device session decides from."""

from __future__ import annotations

import argparse
from types import ModuleType

import pytest

from tests.benchmarks.scripts import load
from tests.conftest import EXAMPLES


def bench() -> ModuleType:
    return load("gpu_bench")


def test_lists_and_rows() -> None:
    gb = bench()
    assert gb.chunk_list("1, 4,16") == [1, 4, 16]
    for bad in ("", "0", "a,2"):
        with pytest.raises(argparse.ArgumentTypeError):
            gb.chunk_list(bad)
    rows = gb.ours_rows([4], [2], True)
    assert list(rows) == ["stencilmap gpu", "stencilmap chunk=4", "stencilmap unroll=2", "stencilmap rotate"]
    assert rows["stencilmap chunk=4"][0] == 4 and rows["stencilmap unroll=2"][1].unroll == 2
    assert rows["stencilmap rotate"][1].rotate and not rows["stencilmap gpu"][1].rotate


def test_a_program_files_bytes_a_step() -> None:
    """fdtd2d: seven float inputs read and three float stencils written a step, 40 bytes a cell."""
    pb = bench().file_problem(EXAMPLES / "fdtd2d.json", (20, 30), 2)
    assert pb.shape == (20, 30) and pb.steps == 2 and not pb.peers
    assert pb.bytes_a_step() == (7 + 3) * 4 * 20 * 30 and pb.cells == 20 * 30 * 2
    assert bench().problems(True)[0].bytes_a_step() == 8 * 128**3  # the Jacobi: one read, one write


def test_verdicts_name_the_fastest_tuning_against_the_default_and_the_best_peer() -> None:
    rows = [
        {"problem": "P", "executor": "stencilmap gpu", "GCell/s": 100.0, "pct_copy": 50.0},
        {"problem": "P", "executor": "stencilmap rotate", "GCell/s": 120.0, "pct_copy": 60.0},
        {"problem": "P", "executor": "CuPy RawKernel", "GCell/s": 80.0, "pct_copy": 40.0},
        {"problem": "Q", "executor": "stencilmap gpu", "GCell/s": 10.0, "pct_copy": 5.0},
    ]
    assert bench().verdicts(rows) == [
        "P: best stencilmap rotate 120.0 GCell/s (60.0 % of copy), 1.20x the default, "
        "1.50x the best peer (CuPy RawKernel)",
        "Q: best stencilmap gpu 10.0 GCell/s (5.0 % of copy), 1.00x the default",
    ]


class FakeClock:
    """A stand-in for CuPy's events over a GPU whose calls take 2 ms until 0.1 s of work has run (its clocks
    coming up), then 1 ms."""

    def __init__(self) -> None:
        self.now, self.calls = 0.0, 0
        clock = self

        class Event:
            def record(self) -> None:
                self.at = clock.now

            def synchronize(self) -> None:
                pass

        class Cuda:
            pass

        self.cuda = Cuda()
        self.cuda.Event = Event  # type: ignore[attr-defined]
        self.cuda.get_elapsed_time = lambda a, b: (b.at - a.at) * 1e3  # type: ignore[attr-defined]

    def call(self) -> None:
        self.calls += 1
        self.now += 0.002 if self.now < 0.1 else 0.001


def test_timed_warms_the_gpu_up_and_times_short_calls_back_to_back() -> None:
    """A 2 ms first call, then a warm-up of a quarter second, then samples of at least 20 ms (a short launch
    timed as a stream of launches, not one event pair's latency): 1 ms a call, the cold one kept apart."""
    fake = FakeClock()
    warm, cold = bench().timed(fake, fake.call, 3)
    assert cold == pytest.approx(0.002) and warm == pytest.approx(0.001)
    assert fake.now >= 0.25 + 3 * 0.02 and fake.calls >= 2 + 3 * 10
