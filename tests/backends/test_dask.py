"""The Dask backend equals the reference: local scheduler with small chunks (halos crossing several
chunks, short last chunks), a LocalCluster of 2 worker processes, and .npy inputs/outputs streamed through
memory maps by ``stencilmap run --backend dask``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.backends.reference import run_reference
from stencilmap.backends.registry import HostOptions, execute
from stencilmap.cli import main
from stencilmap.errors import StencilmapError
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.program.soda import parse_soda
from tests.backends.common import assert_matches, bundled_params, inputs_for, load_bound
from tests.conftest import EXAMPLES

distributed = pytest.importorskip("distributed")


def chunks_for(shape: tuple[int | None, ...]) -> tuple[int, ...]:
    return tuple(max(8, (int(n or 1) + 2) // 3) for n in shape)


@pytest.mark.parametrize("path", bundled_params())
def test_every_bundled_program_equals_the_reference(path: Path) -> None:
    p = load_bound(path)
    values = inputs_for(p)
    got = execute(p, values, HostOptions("dask", chunks=chunks_for(p.shape))).result
    assert_matches(p, run_reference(p, values), got)


JACOBI = """kernel: j
input float: a(16, *)
output float: b(0, 0) = (a(-1, 0) + a(1, 0) + a(0, -1) + a(0, 1) + a(0, 0)) * 0.2f
iterate: 2
border: {border}
"""


@pytest.mark.parametrize("border", ["ignore", "preserve"])
@pytest.mark.parametrize(("chunks", "block"), [((7, 5), 3), ((10, 40), None), ((3, 3), 1)])
def test_iterations_across_chunks(border: str, chunks: tuple[int, int], block: int | None) -> None:
    p = replace(bind_shape(parse_soda(JACOBI.format(border=border), "t.soda"), {}, (23, 41)), iterate=7)
    values = make_inputs(p, {}, 0)
    got = execute(p, values, HostOptions("dask", chunks=chunks, block=block)).result
    assert_matches(p, run_reference(p, values), got)


def test_chunks_thinner_than_the_halo_are_refused() -> None:
    p = bind_shape(load_bound(EXAMPLES / "stencil1d_r8.json"), {}, (100,))
    with pytest.raises(StencilmapError, match="thinner than the halo"):
        execute(p, inputs_for(p), HostOptions("dask", chunks=(3,)))


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c.scheduler_address


@pytest.mark.parametrize("name", ["jacobi2d.soda", "dag_listing1.json", "heat3d.json"])
def test_local_cluster_of_two_workers(cluster: str, name: str) -> None:
    p = load_bound(EXAMPLES / name)
    values = inputs_for(p)
    got = execute(p, values, HostOptions("dask", chunks=chunks_for(p.shape), scheduler=cluster)).result
    assert_matches(p, run_reference(p, values), got)


def test_cli_streams_npy_through_memory_maps(tmp_path: Path, cluster: str) -> None:
    src = tmp_path / "v.npy"
    v = np.random.default_rng(0).random((40, 64)).astype(np.float32)
    np.save(src, v)
    for extra in ([], ["--scheduler", cluster]):
        out = tmp_path / ("o" + str(len(extra)))
        args = ["run", str(EXAMPLES / "jacobi2d.soda"), "--backend", "dask", "--input", f"v={src}",
                "--chunks", "16,16", "--iterate", "5", "--out", str(out), "--json", *extra]  # fmt: skip
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        report = json.loads(res.output)
        assert report["backend"] == "dask" and report["iterate"] == 5
        ref = CliRunner().invoke(main, ["run", str(EXAMPLES / "jacobi2d.soda"), "--input", f"v={src}",
                                        "--iterate", "5", "--out", str(tmp_path / "ref")])  # fmt: skip
        assert ref.exit_code == 0, ref.output
        np.testing.assert_array_equal(np.load(out / "w.npy"), np.load(tmp_path / "ref" / "w.npy"))
        assert sorted(x.name for x in out.iterdir()) == ["w.npy"]  # no temporary left behind


def test_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["run", str(EXAMPLES / "jacobi2d.soda"), "--backend", "dask",
                                    "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o")])  # fmt: skip
    assert res.exit_code == 2
    assert res.output.startswith("error: cannot reach the Dask scheduler") and res.output.count("\n") == 1
    assert not (tmp_path / "o").exists()  # the folder it made for the outputs is taken back
