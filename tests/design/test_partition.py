"""design.partition: the least-cut split of a StencilFlow design over devices (StencilFlow §VI-B).

The solver's cut is checked against brute force over every assignment on small DAGs; parts fit the
device's resources; user partitions are validated with errors naming the JSON path.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from math import ceil
from pathlib import Path

import pytest

from stencilmap.design.common import live_graph, with_iterate
from stencilmap.design.ir import verify_design
from stencilmap.design.partition import check_parts, choose_parts, cut_streams, load_parts, module_devices
from stencilmap.design.registry import BuildConfig, build
from stencilmap.device.catalog import Cost, Device, load_device
from stencilmap.errors import StencilmapError
from stencilmap.jobs.partition import partition
from stencilmap.model.partition import node_costs
from stencilmap.program.data import bind_shape
from stencilmap.program.ir import Program
from stencilmap.program.load import as_program
from tests.conftest import EXAMPLES

DAGS = [("dag_listing1.json", 1), ("fdtd2d.json", 1), ("heat3d.json", 3), ("stencil1d_r8.json", 4)]


def _program(name: str, iterate: int = 1, shape: tuple[int, ...] | None = None) -> Program:
    return with_iterate(bind_shape(as_program(EXAMPLES / name), {}, shape), iterate)


def _fits(program: Program, costs: dict[str, Cost], device: Device, where: dict[str, int], k: int) -> bool:
    model = device.resource_model
    assert model is not None
    return all(
        model.base[r] + sum(c[r] for v, c in costs.items() if where[v] == p) <= model.limit(r) * avail
        for p in range(k)
        for r, avail in device.resources
    )


def _brute_force(program: Program, costs: dict[str, Cost], device: Device, k: int) -> tuple[int, int]:
    """The least cut over every split of the nodes, in topological order, into k contiguous non-empty
    runs that fit; and over every assignment whose streams flow forward (a lower bound)."""
    live = live_graph(program)
    nodes = [n.name for n in live.stencils]
    runs = []
    for bounds in itertools.combinations(range(1, len(nodes)), k - 1):
        edges = (0, *bounds, len(nodes))
        where = {v: p for p in range(k) for v in nodes[edges[p] : edges[p + 1]]}
        if _fits(program, costs, device, where, k):
            runs.append(cut_streams(live, where))
    forward = []
    for combo in itertools.product(range(k), repeat=len(nodes)):
        where = dict(zip(nodes, combo, strict=True))
        if len(set(combo)) < k:
            continue
        if any(e.producer in where and where[e.producer] > where[e.consumer] for e in live.graph.edges):
            continue
        if _fits(program, costs, device, where, k):
            forward.append(cut_streams(live, where))
    return min(runs), min(forward)


def _small_device(program: Program, stencils_per_device: int) -> Device:
    """stratix10 with usable ALMs (under its ``max_utilization``) for the base plus ``stencils_per_device``
    of the program's largest stencil."""
    dev = load_device("stratix10")
    costs = node_costs(build("stencilflow", program, BuildConfig()), program, dev)
    assert dev.resource_model is not None
    usable = dict(dev.resource_model.max_utilization).get("alm", 1.0)
    alm = (
        dev.resource_model.base["alm"] + stencils_per_device * max(c["alm"] for c in costs.values())
    ) / usable
    return replace(dev, resources=tuple((r, ceil(alm) if r == "alm" else n) for r, n in dev.resources))


@pytest.mark.parametrize(("name", "q"), DAGS)
@pytest.mark.parametrize("k", [2, 3])
def test_min_cut_equals_brute_force(name: str, q: int, k: int) -> None:
    program = _program(name, q, (4, 8, 8) if name == "heat3d.json" else None)
    dev = load_device("stratix10")
    live = live_graph(program)
    if len(live.stencils) < k:
        pytest.skip("fewer stencils than devices")
    costs = node_costs(build("stencilflow", program, BuildConfig()), program, dev)
    parts = choose_parts(live, costs, dev, k)
    where = {n: p for p, names in enumerate(parts) for n in names}
    assert all(parts) and sorted(where) == sorted(n.name for n in live.stencils)
    order = [n.name for n in live.stencils]
    assert [n for part in parts for n in part] == order  # contiguous runs in topological order
    contiguous, forward = _brute_force(program, costs, dev, k)
    assert cut_streams(live, where) == contiguous >= forward


def test_parts_fit_a_device_that_holds_few_stencils() -> None:
    program = _program("heat3d.json", 6, (4, 8, 8))
    dev = _small_device(program, 2)
    with pytest.raises(StencilmapError, match="does not fit on 2"):
        partition(program, BuildConfig(), dev, devices=2)
    split = partition(program, BuildConfig(), dev, devices=3)
    assert [len(p.stencils) for p in split.partition.parts] == [2, 2, 2]
    assert all(p.resources.fits for p in split.partition.parts)
    assert split.partition.streams_cut == 2


def test_partitioned_design_replicates_inputs_and_tags_devices() -> None:
    program = _program("dag_listing1.json")
    dev = load_device("stratix10")
    parts = (("b0", "b1"), ("b2", "b3", "b4"))
    split = partition(program, BuildConfig(), dev, parts=parts)
    design = split.design
    verify_design(design)
    on = module_devices(design)
    # dag_listing1: a2 is read by b1 (device 0) and b2 (device 1): one reader on each (StencilFlow Fig. 5)
    readers = sorted(m.name for m in design.modules if m.kind == "reader" and m.param("field") == "a2")
    assert readers == ["read.a2.d0", "read.a2.d1"]
    nets = [m for m in design.modules if m.kind == "network"]
    live = live_graph(program)
    where = {n: p for p, names in enumerate(parts) for n in names}
    assert len(nets) == cut_streams(live, where) == split.partition.streams_cut
    for m in design.modules:
        if m.kind == "pe":
            assert on[m.name] == where[str(m.param("stencil"))]
    for net in nets:
        src = design.inputs_of(net.name)[0].src
        assert on[src] == net.param("src_device") and net.param("dst_device") != net.param("src_device")
    # every channel but those into a network module joins two modules of one device
    for c in design.channels:
        if design.module(c.src).kind != "network":
            assert on[c.src] == on[c.dst], c.name


def test_delay_buffers_absorb_the_link_latency() -> None:
    """dag_listing1 with b0 alone on device 0: b3 reads b1 (remote) and b2 (remote), b2 reads a2 locally;
    the local edges' delays grow by the link's latency in elements."""
    program = _program("dag_listing1.json")
    dev = load_device("stratix10")
    one = build("stencilflow", program, BuildConfig(device="stratix10"))  # the same operator latencies
    split = partition(program, BuildConfig(), dev, parts=(("b0",), ("b1", "b2", "b3", "b4")))
    net = next(m for m in split.design.modules if m.kind == "network")

    def depths(design: object) -> dict[str, int]:
        return {str(m.param("edge")): int(str(m.param("depth"))) for m in design.modules if m.kind == "delay"}  # type: ignore[attr-defined]

    before, after = depths(one), depths(split.design)
    assert after["a2->b2"] == before.get("a2->b2", 0) + net.latency + 1


def test_user_parts_are_checked() -> None:
    live = live_graph(_program("dag_listing1.json"))
    cases = [
        ((("b0", "b1"), ("b2", "b3", "b9")), r"parts\[1\]\[2\]: unknown stencil 'b9'"),
        (
            (("b0", "b1"), ("b1", "b2", "b3", "b4")),
            r"parts\[1\]\[0\]: stencil 'b1' is already in parts\[0\]\[1\]",
        ),
        ((("b0", "b1"), ("b2", "b3")), "no part holds stencil 'b4'"),
        ((("b0", "b1", "b2", "b3", "b4"), ()), r"parts\[1\] is empty"),
    ]
    for parts, message in cases:
        with pytest.raises(StencilmapError, match=message):
            check_parts(parts, live)


def test_partition_files_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"parts": [["b0"], ["b1", "b2"]]}))
    assert load_parts(path) == (("b0",), ("b1", "b2"))
    bad = {
        '{"parts": [["b0"], ["b1"]]': "line 1, column",
        '{"parts": [["b0"], "b1"]}': r"parts\[1\]: expected a list",
        '{"parts": [["b0", 3]]}': r"parts\[0\]\[1\]: expected a stencil name",
        '{"parts": []}': "parts: expected a non-empty list",
        '{"devices": 2}': 'expected an object {"parts"',
        '{"parts": [["b0"]], "parts": [["b1"]]}': "key 'parts' is given twice in one object",
    }
    for text, message in bad.items():
        path.write_text(text)
        with pytest.raises(StencilmapError, match=message) as info:
            load_parts(path)
        assert info.value.where == str(path)
    with pytest.raises(StencilmapError, match=r"no such file|cannot read"):
        load_parts(tmp_path / "missing.json")


def test_a_device_without_network_is_refused() -> None:
    dev = replace(load_device("stratix10"), network=None)
    with pytest.raises(StencilmapError, match="no 'network'"):
        partition(_program("dag_listing1.json"), BuildConfig(), dev, devices=2)


def test_more_devices_than_stencils_is_refused() -> None:
    with pytest.raises(StencilmapError, match="cannot split 5 stencils over 6 devices"):
        partition(_program("dag_listing1.json"), BuildConfig(), load_device("stratix10"), devices=6)
