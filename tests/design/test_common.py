"""Shared builder machinery: port names, the live DAG, generator PEs, broadcasts."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.design.common import LINK_DEPTH, Sink, Stream, Wiring, live_graph, port_name
from stencilmap.design.ir import Design, Module, verify_design
from stencilmap.design.registry import BuildConfig, build
from stencilmap.program.expr import Binary, Const, Ref
from stencilmap.program.ir import Input, Program, Stencil
from tests.analysis.helpers import jacobi

from .helpers import modules


def test_port_names() -> None:
    assert port_name("v", (0, -1)) == "v@(0,-1)"
    assert port_name("u", (3,)) == "u@(3)"
    assert port_name("c", ()) == "c@()"


def program(stencils: list[Stencil], inputs: tuple[str, ...] = ("a", "unused"), iterate: int = 1) -> Program:
    return Program(
        name="t",
        format="stencilflow",
        semantics="numpy",
        shape=(6, 8),
        inputs=tuple(Input(n, "float32", (0, 1)) for n in inputs),
        stencils=tuple(stencils),
        outputs=(stencils[-1].name,),
        iterate=iterate,
    )


DEAD = [jacobi("dead", "a"), jacobi("b", "a")]
CONSTANT = [
    Stencil("c", "float32", Const(2.0, "float32")),
    Stencil("b", "float32", Binary("+", Ref("c", (0, 1)), Ref("a", (0, 0)))),
]


def test_live_graph_prunes_what_reaches_no_output() -> None:
    live = live_graph(program(DEAD))
    assert [n.name for n in live.graph.nodes] == ["a", "b"]
    assert live.outputs == (("b", "b"),)
    assert live.notes == (
        "input 'unused' reaches no output: not built",
        "stencil 'dead' reaches no output: not built",
    )


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_builders_skip_dead_nodes_and_keep_notes(arch: str) -> None:
    d = build(arch, program(DEAD), BuildConfig(unroll=2))
    assert [m.name for m in modules(d, "reader")] == ["read.a"]
    assert all("dead" not in m.name for m in d.modules)
    assert len(d.notes) == 2


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_a_stencil_reading_nothing_is_a_generator(arch: str) -> None:
    d = build(arch, program(CONSTANT, ("a",)), BuildConfig(unroll=2))
    gens = [m for m in modules(d, "pe", stencil="c")]
    assert gens and all(m.param("inputs") == () and not d.inputs_of(m.name) for m in gens)


def test_an_iteration_whose_input_is_unread_prunes_the_stage_before() -> None:
    # b reads nothing: copy 2 does not need copy 1's output, so copy 1 and the input are dead
    p = program([Stencil("b", "float32", Const(1.0, "float32"))], ("a",), iterate=2)
    live = live_graph(p)
    assert [n.name for n in live.graph.nodes] == ["b@2"]
    d = build("soda", p, BuildConfig(unroll=1))
    assert d.kinds() == {"pe": 1, "writer": 1}


def test_wiring_broadcasts_only_shared_streams() -> None:
    w = Wiring()
    for name, kind in [("r", "reader"), ("x", "writer"), ("y", "writer"), ("z", "writer")]:
        w.add(Module(name, kind))
    w.feed(Stream("r", "lane0", 1, "float32"), Sink("x", depth=5))
    w.feed(Stream("r", "lane0", 1, "float32"), Sink("y"))
    w.feed(Stream("r", "lane1", 1, "float32"), Sink("z"))
    d = w.design("w", "test", (), ())
    verify_design(d)
    assert [m.name for m in modules(d, "broadcast")] == ["r.lane0.bcast"]
    assert [(c.name, c.depth) for c in d.channels] == [
        ("r:lane0->r.lane0.bcast", LINK_DEPTH),
        ("r.lane0.bcast:o0->x", 5),
        ("r.lane0.bcast:o1->y", LINK_DEPTH),
        ("r:lane1->z", LINK_DEPTH),
    ]


# ------------------------------------------------------------ operator latencies from the device file


def _slow_device(tmp_path: Path) -> str:
    """ku060 (the default latency table) with slower adders and multipliers."""
    import json
    from importlib import resources

    spec = json.loads((resources.files("stencilmap.device") / "files" / "ku060.json").read_text())
    spec["latencies"].update(add=19, mul=11)
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(spec))
    return str(path)


@pytest.mark.parametrize(
    ("name", "arch", "unroll", "vector"),
    [
        ("dag_listing1.json", "stencilflow", None, 2),  # delays between the DAG's branches
        ("dag_listing1.json", "soda", 2, None),
        ("jacobi2d.soda", "pcm", 2, None),
        ("jacobi2d.soda", "soda", 2, None),
    ],
)
def test_device_latencies_reach_the_pes_and_outputs_stay_exact(
    tmp_path: Path, name: str, arch: str, unroll: int | None, vector: int | None
) -> None:
    """``BuildConfig.device`` gives the PEs the device file's latencies (and the delays follow); with no
    device the default table. The simulated outputs are bit-for-bit the same either way."""
    import numpy as np

    import stencilmap as sm
    from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
    from stencilmap.design.common import device_latencies
    from tests.conftest import EXAMPLES

    slow = _slow_device(tmp_path)
    prog = sm.load(EXAMPLES / name, shape=(4, 8, 16) if name.endswith(".json") else (16, 32))
    assert device_latencies(None) == OperatorLatencies.default()
    fast = sm.build(prog, arch, unroll=unroll, vector=vector)
    slower = sm.build(prog, arch, unroll=unroll, vector=vector, device=slow)
    lat = device_latencies(slow)
    for f, s in zip(_pes(fast), _pes(slower), strict=True):
        st = prog.stencil(str(s.param("stencil")))
        assert st is not None
        assert f.latency == stencil_latency(st, OperatorLatencies.default())
        assert s.latency == stencil_latency(st, lat) > f.latency
    runs = [sm.simulate(prog, d, device=slow, seed=3) for d in (fast, slower)]
    assert all(r.valid and r.status == "done" for r in runs)
    for key in runs[0].outputs:
        assert np.array_equal(runs[0].outputs[key], runs[1].outputs[key], equal_nan=True)
    if name == "dag_listing1.json" and arch == "stencilflow":
        depth = {m.name: m.param("depth") for m in slower.modules if m.kind == "delay"}
        assert depth != {m.name: m.param("depth") for m in fast.modules if m.kind == "delay"}


def _pes(design: Design) -> list[Module]:
    return sorted((m for m in design.modules if m.kind == "pe"), key=lambda m: m.name)


def test_banks_a_device_lacks_fold_onto_its_banks() -> None:
    """denoise2d names dram 0, 1, 2; the two-bank ku060 gets its output on bank 0 (2 mod 2), with a note,
    and the model sees two banks, not three full-speed ones."""
    from stencilmap.design.common import on_device_banks
    from stencilmap.device.catalog import load_device
    from stencilmap.model.timing import design_banks
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape
    from tests.conftest import CORPUS

    path = CORPUS / "soda" / "denoise2d.soda"
    if not path.exists():
        pytest.skip("corpus not available")
    program = bind_shape(load_program(path), {}, (64, 32))
    folded, notes = on_device_banks(program, 2, "ku060")
    assert notes == ("dram 2 is bank 0 on ku060 (2 banks)",)
    assert [i.banks for i in folded.inputs] == [(0,), (1,)] and folded.stencils[-1].banks == (0,)
    assert on_device_banks(folded, 2, "ku060") == (folded, ())  # nothing left to move
    assert on_device_banks(program, 4, "u250") == (program, ())
    design = build("soda", program, BuildConfig(unroll=2, device="ku060"))
    assert notes[0] in design.notes
    ports = [m for m in design.modules if m.kind in ("reader", "writer")]
    assert {m.param("bank") for m in ports} == {0, 1}
    assert len(design_banks(design, program)) == load_device("ku060").dram_banks
    assert {m.param("bank") for m in build("soda", program, BuildConfig(unroll=2)).modules
            if m.kind == "writer"} == {2}  # fmt: skip
