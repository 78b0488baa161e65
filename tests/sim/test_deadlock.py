"""The deadlock demonstration: a StencilFlow DAG with every delay buffer forced to depth 1 deadlocks and is
reported (cycle, the modules waiting, each with the channel it waits on, the wait-for cycle); with the
computed depths it finishes and validates.

``dag_listing1``: b0 feeds b2 directly and b1 → b3 → b4 on the long path; b4 joins b2 with b3. The long path
holds the first output of b3 back by the window fill of b3 (one plane of b1), so the short path b2 → b4 must
buffer that many elements. With depth 1 it fills, b2 blocks, b0's broadcast blocks, and the long path starves:
a cycle of waits through the broadcast and the join.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import networkx as nx

from stencilmap.jobs.simulate import SimulateConfig, simulate
from stencilmap.point import DesignPoint
from tests.conftest import EXAMPLES
from tests.sim.helpers import int_param

DAG = EXAMPLES / "dag_listing1.json"


def test_min_delay_buffers_deadlock_and_are_reported(tmp_path: Path) -> None:
    report = simulate(
        SimulateConfig(
            program=DAG, point=DesignPoint(arch="stencilflow", delay_buffers="min"), out_dir=tmp_path
        )
    )
    r = report.result
    assert r.status == "deadlock" and not report.valid
    dl = r.deadlock
    assert dl is not None and dl.cycle == r.cycles and dl.cycle < 1000
    names = {m.name for m in report.design.modules}
    channels = {c.name: c for c in report.design.channels}
    assert dl.waiting
    for w in dl.waiting:
        assert w.module in names and w.on in names and w.reason in ("empty input", "full output")
        c = channels[w.channel]  # each waiting module names a real channel between it and the one it waits on
        assert {c.src, c.dst} == {w.module, w.on}
    # the wait-for cycle is closed and runs along real waits
    cycle = dl.cycle_of_waits
    assert len(cycle) >= 3 and cycle[0] == cycle[-1]
    waits_on = {w.module: w.on for w in dl.waiting}
    for a, b in itertools.pairwise(cycle):
        assert waits_on[a] == b
    # it passes through the join (b4), the short path's delay buffer and the broadcast of b0
    assert {"b4.pe", "b4.b2.delay", "b0.pe.bcast"} <= set(cycle)
    graph = nx.DiGraph((w.module, w.on) for w in dl.waiting)
    assert not nx.is_directed_acyclic_graph(graph)


def test_computed_delay_buffers_finish_and_validate(tmp_path: Path) -> None:
    report = simulate(SimulateConfig(program=DAG, point=DesignPoint(arch="stencilflow"), out_dir=tmp_path))
    assert report.result.status == "done" and report.result.deadlock is None
    assert report.valid and report.validation.bit_exact
    delays = {m.name: int_param(m, "depth", 0) for m in report.design.modules if m.kind == "delay"}
    assert max(delays, key=lambda name: delays[name]) == "b4.b2.delay"  # the short path of the join
    assert delays["b4.b2.delay"] > 32 * 32  # at least a plane of b1: b3 reads b1[i ± 1]
