"""Trace files: JSON Lines and VCD, chosen by suffix, from a synthetic trace and from a simulation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stencilmap.errors import StencilmapError
from stencilmap.sim import SimConfig
from stencilmap.sim.trace import ACTIVITY, Trace, trace_format, write_trace
from tests.sim.helpers import simulated, soda

ACT = np.array([[1, 0, 2], [1, 3, 2], [4, 1, 0]], np.int8)
OCC = np.array([[0, 1], [2, 1], [0, 0]], np.int32)
SYNTHETIC = Trace("d", "soda", ("read.a", "tap[-1]", "write.b"), ACT, 10, ("a->b", "b->c"), OCC)


def test_format_follows_the_suffix() -> None:
    assert trace_format(Path("t.jsonl")) == "jsonl" and trace_format(Path("T.VCD")) == "vcd"
    with pytest.raises(StencilmapError, match=r"\.jsonl, \.ndjson or \.vcd"):
        trace_format(Path("t.txt"))


def test_jsonl_header_and_one_line_per_cycle(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, SYNTHETIC)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    header = lines[0]
    assert header["modules"] == list(SYNTHETIC.modules) and header["activity"] == list(ACTIVITY)
    assert header["cycles"] == 3 and header["total_cycles"] == 10 and header["channels"] == ["a->b", "b->c"]
    assert lines[1] == {
        "cycle": 0,
        "modules": {"read.a": "busy", "write.b": "starved"},
        "channels": {"b->c": 1},
    }
    assert lines[3]["modules"] == {"read.a": "finished", "tap[-1]": "busy"} and lines[3]["channels"] == {}
    assert len(lines) == 4


def test_vcd_declares_every_module_and_dumps_changes(tmp_path: Path) -> None:
    path = tmp_path / "t.vcd"
    write_trace(path, SYNTHETIC)
    text = path.read_text()
    assert "$enddefinitions $end" in text and "$timescale 1 ns $end" in text
    assert "$var wire 3 ! read_a $end" in text and "tap__1_" in text  # brackets and dots sanitized
    assert "$var integer 32" in text
    body = text.split("$enddefinitions $end\n")[1].splitlines()
    assert body[0] == "#0" and body[-1] == "#3"
    # cycle 1: only tap[-1] (0 → 3) and channel a->b (0 → 2) change
    at1 = body[body.index("#1") + 1 : body.index("#2")]
    assert sorted(at1) == sorted(['b11 "', "b10 $"])


def test_vcd_names_stay_unique_after_sanitizing(tmp_path: Path) -> None:
    t = Trace("d", "x", ("a.b", "a_b"), np.zeros((1, 2), np.int8), 1)
    path = tmp_path / "t.vcd"
    write_trace(path, t)
    assert " a_b $end" in path.read_text() and " a_b_2 $end" in path.read_text()


def test_vcd_names_cannot_end_a_declaration(tmp_path: Path) -> None:
    """A design or module named ``$end`` (a program file ``$end.json``) would close the ``$comment`` or
    ``$var`` it stands in: ``$`` is sanitized like any other character a reference cannot hold."""
    t = Trace("$end", "x", ("$end", "a$b"), np.zeros((1, 2), np.int8), 1)
    path = tmp_path / "t.vcd"
    write_trace(path, t)
    head = path.read_text().split("$enddefinitions $end\n")[0]
    assert all(line.count("$end") == 1 and line.endswith("$end") for line in head.splitlines())
    assert " _end $end" in head and " a_b $end" in head


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="activity"):
        write_trace(Path("x.jsonl"), Trace("d", "x", ("a",), np.zeros((2, 3), np.int8), 2))


def test_trace_of_a_simulation(tmp_path: Path) -> None:
    program = soda("kernel: c\ninput float: a(8, *)\noutput float: b(0, 0) = a(0, 0) * 2.0f\n", (4, 8))
    run = simulated(program, "soda", sim=SimConfig(trace_cycles=1000))
    assert run.result.trace is not None
    recorded = run.result.trace[: run.result.cycles]
    t = Trace(run.design.name, "soda", tuple(m.name for m in run.design.modules), recorded, run.result.cycles)
    path = tmp_path / "sim.jsonl"
    write_trace(path, t)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == run.result.cycles + 1
    busy = sum(1 for line in lines[1:] if line["modules"].get("write.b") == "busy")
    assert busy == 32  # one beat per point, k = 1
    assert set(lines[-1]["modules"].values()) == {"finished"}
