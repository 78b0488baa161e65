"""The dask backend's graph: one task per chunk per exchange of halos (no per-step tasks), several blocks of
the kernel per exchange (each on the window, shrinking), and ``.npy`` inputs carried as their path, so that a
cluster's workers read them (nothing of the array in the graph)."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stencilmap.backends import distributed as backend
from stencilmap.backends.reference import run_reference
from stencilmap.backends.registry import HostOptions, execute
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from tests.backends.common import assert_matches, inputs_for, load_bound
from tests.conftest import EXAMPLES

pytest.importorskip("dask")

JACOBI = """kernel: j
input float: a(16, *)
output float: b(0, 0) = (a(-1, 0) + a(1, 0) + a(0, -1) + a(0, 1) + a(0, 0)) * 0.2f
iterate: 2
border: {border}
"""


def jacobi(shape: tuple[int, int], iterate: int, border: str = "preserve") -> Any:
    return replace(bind_shape(parse_soda(JACOBI.format(border=border), "t.soda"), {}, shape), iterate=iterate)


def test_one_task_per_chunk_per_exchange() -> None:
    p = jacobi((64, 64), 40)
    outs, masks = backend.lazy_run(p, make_inputs(p, {}, 0), HostOptions("dask", chunks=(32, 32), block=10))
    graph = dict(outs["b"].__dask_graph__())
    exchanges = [k for k in graph if isinstance(k, tuple) and k[0].startswith("sm-x")]
    assert len(exchanges) == 4 * 4  # 40 steps in 4 exchanges of 10, 2×2 chunks
    assert len(graph) == 4 * 4 + 4 + 2  # and the 4 output chunks, the shared job and the input
    assert masks["b"] is None  # border: preserve defines every point


def test_default_steps_per_exchange_keep_the_halo_small() -> None:
    p = jacobi((4096, 4096), 400)
    plan = backend.compile_program(p).plan
    assert backend._steps(plan, HostOptions("dask"), (4096, 4096)) == 64  # 1024-point chunks, radius 1
    assert backend._steps(plan, HostOptions("dask", block=5), (4096, 4096)) == 5
    assert backend._steps(plan, HostOptions("dask"), (256, 256)) == 400  # one chunk: nothing to exchange
    assert backend._chunks(HostOptions("dask"), (4096, 300, 9000), (1, 1, 1)) == (
        (512,) * 8,
        (300,),
        (512,) * 17 + (296,),
    )
    assert backend._additive(plan, 64)


@pytest.mark.parametrize(("wave", "planes"), [(False, 1), (True, 1), (True, 3)])
@pytest.mark.parametrize("border", ["ignore", "preserve"])
def test_several_blocks_per_exchange_equal_the_reference(
    monkeypatch: pytest.MonkeyPatch, wave: bool, planes: int, border: str
) -> None:
    """Blocks of 2 steps inside exchanges of 5: each block computes the chunk grown by the halo of the steps
    still to come, on buffers of the window (ping-pong), masks included; the wave with several planes a tick."""
    monkeypatch.setattr(backend, "_choice", lambda job, cp, chunk, steps: (2, chunk, wave, planes))
    p = jacobi((23, 41), 12, border)
    values = make_inputs(p, {}, 0)
    got = execute(p, values, HostOptions("dask", chunks=(8, 16), block=5)).result
    assert_matches(p, run_reference(p, values), got)
    assert values["a"].flags.writeable  # the caller's input was read, never written: equal to a fresh one
    np.testing.assert_array_equal(values["a"], make_inputs(p, {}, 0)["a"])


def test_a_dag_with_several_blocks_per_exchange(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "_choice", lambda job, cp, chunk, steps: (3, chunk, False, 1))
    p = replace(load_bound(EXAMPLES / "fdtd2d_iterate.json"), iterate=10)
    values = inputs_for(p)
    got = execute(p, values, HostOptions("dask", chunks=(24, 24), block=7)).result
    assert_matches(p, run_reference(p, values), got)


def test_npy_inputs_travel_as_their_path(tmp_path: Path) -> None:
    """With a cluster, a memory-mapped ``.npy`` input is a ``FileSource`` in the graph (the workers open the
    file): the pickled graph is far smaller than the array."""
    p = jacobi((1024, 1024), 6)
    src = tmp_path / "a.npy"
    np.save(src, np.random.default_rng(0).random((1024, 1024), dtype=np.float32))
    values = {"a": np.load(src, mmap_mode="r")}
    options = HostOptions("dask", chunks=(256, 256), scheduler="tcp://127.0.0.1:9")  # not connected
    outs, _ = backend.lazy_run(p, values, options)  # the graph only
    graph = dict(outs["b"].__dask_graph__())
    assert not any(isinstance(v, np.ndarray) and v.size > 16 for v in graph.values())
    assert len(pickle.dumps(graph)) < values["a"].nbytes // 10
    # and the local scheduler reads the same windows from the file
    got = execute(p, values, HostOptions("dask", chunks=(256, 256))).result
    assert_matches(p, run_reference(p, {"a": np.load(src)}), got)


def test_in_memory_inputs_are_chunked_for_a_cluster() -> None:
    """An array in this process goes to a cluster as chunks (``from_array``), each task fetching the chunks
    its window overlaps, not the whole array."""
    p = jacobi((64, 64), 3)
    outs, _ = backend.lazy_run(
        p, make_inputs(p, {}, 0), HostOptions("dask", chunks=(32, 32), scheduler="tcp://127.0.0.1:9")
    )
    graph = dict(outs["b"].__dask_graph__())
    assert not any(isinstance(v, np.ndarray) and v.size == 64 * 64 for v in graph.values())


def test_kernel_threads_share_the_cores_among_the_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "default_threads", lambda: 8)
    one, four = ((64,), (64,)), ((16,) * 2, (16,) * 2)
    assert backend._threads(HostOptions("dask"), one) == 8  # one chunk: every core, as the cpu backend
    assert backend._threads(HostOptions("dask"), four) == 2
    assert backend._threads(HostOptions("dask", threads=3), one) == 3
    assert backend._threads(HostOptions("dask", scheduler="tcp://127.0.0.1:9"), one) == 1
