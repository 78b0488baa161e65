"""The static delay-line check: it passes the builder's designs and catches under-sized lines, among them
the continuation sized as the difference of two capped delays (issue 19, item 6)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.timing import EdgeTiming, PipelineTiming, pipeline_timing
from stencilmap.design import pipeline
from stencilmap.design.common import concrete_shape, with_iterate
from stencilmap.design.delay_check import Shortfall, check_delay_lines
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig, build
from stencilmap.program.ir import Program
from stencilmap.program.stencilflow import parse_stencilflow
from tests.conftest import EXAMPLES
from tests.sim.test_replayed_inputs import REPRODUCER

from .helpers import bound


def _reproducer() -> Program:
    return parse_stencilflow(json.dumps(REPRODUCER), "replayed.json")


def _timing(program: Program, w: int = 1) -> PipelineTiming:
    return pipeline_timing(program, concrete_shape(program), w)


def test_the_builder_passes_with_no_slack() -> None:
    p = _reproducer()
    verdict = check_delay_lines(build("stencilflow", p, BuildConfig()), _timing(p))
    assert verdict.shortfalls == ()
    assert dict(verdict.slack) == {"e@1.C.delay": 0, "e@2.C.delay": 0, "e@3.C.delay": 0, "x@2.X.delay": 0,
                                   "x@3.X.delay": 0, "x@1.X.delay": 0}  # fmt: skip


def test_the_capped_difference_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule before the fix: a continuation held the difference of the two edges' capped delays."""
    p = _reproducer()
    capped = delay_buffers(_timing(p))

    def old_rule(timing: PipelineTiming, tap: EdgeTiming, e: EdgeTiming) -> int:
        return max(0, capped[e.key] - capped[tap.key])

    monkeypatch.setattr(pipeline, "relay_delay", old_rule)
    broken = build("stencilflow", p, BuildConfig())
    assert check_delay_lines(broken, _timing(p)).shortfalls == (
        Shortfall("C->e@2", "e@1.C.delay", 0, 15),
        Shortfall("C->e@3", "e@1.C.delay", 0, 15),
    )


def _shallower(design: Design, name: str, by: int) -> Design:
    """``design`` with delay module ``name`` ``by`` elements shallower."""
    modules = tuple(
        replace(m, params=tuple((k, int(str(v)) - by if k == "depth" else v) for k, v in m.params))
        if m.name == name
        else m
        for m in design.modules
    )
    return replace(design, modules=modules)


def test_one_element_short_anywhere_is_caught() -> None:
    p = with_iterate(bound(EXAMPLES / "fdtd2d_iterate.json"), 3)
    design = build("stencilflow", p, BuildConfig())
    timing = _timing(p)
    lines = [m.name for m in design.modules if m.kind == "delay"]
    assert len(lines) > 10 and check_delay_lines(design, timing).shortfalls == ()
    for name in lines:
        short = check_delay_lines(_shallower(design, name, 1), timing).shortfalls
        assert short and all(s.held == s.needed - 1 for s in short), name


def test_min_delay_buffers_fall_short() -> None:
    """``--delay-buffers min`` (StencilFlow Fig. 4, the deadlock demonstration) is short on the join."""
    p = bound(EXAMPLES / "dag_listing1.json")
    verdict = check_delay_lines(build("stencilflow", p, BuildConfig(delay_buffers="min")), _timing(p))
    assert any(s.edge == "b2->b4" and s.point == "b2" and s.held == 1 for s in verdict.shortfalls)
    assert check_delay_lines(build("stencilflow", p, BuildConfig()), _timing(p)).shortfalls == ()


def test_vector_width_counts_elements() -> None:
    p = _reproducer()
    design = build("stencilflow", p, BuildConfig(vector=2))
    assert check_delay_lines(design, _timing(p, 2)).shortfalls == ()
    assert (
        str(Shortfall("C->e@2", "e@1.C.delay", 0, 14))
        == "C->e@2: 0 elements of delay after e@1.C.delay, 14 needed"
    )
