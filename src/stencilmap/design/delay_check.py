"""Static check of a StencilFlow design's delay lines (StencilFlow §IV-B): enough credits on every path.

A stream u → v reaches v's internal buffer ``{v}.{f}.buf`` through broadcasts, network hops and delay
lines, which may be shared: a replayed input's lines are chained copy to copy (``design.pipeline``),
so one line's end is a *tap* that feeds its own consumer and the next line. Each point X on the path
releases element m only when every branch below it has room, so it runs no later than the first of
its consumers to need the element. The lines between X and v must hold what that consumer (or, at the
producer, u itself, one element a cycle from its first result) has released before v needs it:

* at the producer: the edge's analysis delay, P · min(s_v − arrival_e, N_v − 1 − ρ_e) (``delays``);
* after a delay line D: P · min(absorbs_v − min_{w below D} absorbs_w, N_v − 1 − ρ_e)
  (``delays.relay_delay``, w ranging over the edges whose buffers D feeds).

``check_delay_lines`` lists every (edge, point) short of its requirement — a design that can deadlock
in the model the delay analysis is proved against — and each delay module's slack (the elements it
could lose with every requirement through it still met; 0 for a tight line). The paths count delay
lines only: the plain ``LINK_DEPTH`` channels between modules are margin, as in the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.delays import absorbs, delay_buffers, relay_delay
from stencilmap.analysis.timing import EdgeTiming, PipelineTiming
from stencilmap.design.ir import Design

#: modules a stream passes through between its producer and the consumer's internal buffer
_THROUGH = ("delay", "broadcast", "network")


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Edge ``edge``'s lines after ``point`` (its producer, or a delay module) hold ``held`` elements,
    fewer than the ``needed``."""

    edge: str
    point: str
    held: int
    needed: int

    def __str__(self) -> str:
        return f"{self.edge}: {self.held} elements of delay after {self.point}, {self.needed} needed"


@dataclass(frozen=True, slots=True)
class DelayLines:
    """The verdict on a design's delay lines: what falls short, and each delay module's slack."""

    shortfalls: tuple[Shortfall, ...]
    slack: tuple[tuple[str, int], ...]  # (delay module, elements it could lose), in design order


def check_delay_lines(design: Design, timing: PipelineTiming) -> DelayLines:
    """Every requirement of the module docstring on ``design`` with the timing it was built for (the
    same lanes, latencies and network hops). Edges whose consumer buffer is absent (dead code) are
    skipped."""
    names = {m.name for m in design.modules}
    edges = {f"{e.consumer}.{e.field}.buf": e for e in timing.edges}
    depth = {m.name: int(str(m.param("depth"))) for m in design.modules if m.kind == "delay"}
    analysis = delay_buffers(timing)
    below: dict[str, EdgeTiming] = {}  # delay module -> the first of the consumers it feeds
    shortfalls: list[Shortfall] = []
    slack: dict[str, int] = {}
    for buf, e in edges.items():
        if buf not in names:
            continue
        path = _path_up(design, buf)  # delay modules from the consumer's side up to the producer
        points = [(e.producer, analysis[e.key], path)]
        for i, d in enumerate(path):
            if d not in below:
                below[d] = min(_consumers(design, d, edges), key=lambda w: absorbs(timing, w))
            points.append((d, relay_delay(timing, below[d], e), path[:i]))
        for point, needed, lines in points:
            held = sum(depth[d] for d in lines)
            if held < needed:
                shortfalls.append(Shortfall(e.key, point, held, needed))
            for d in lines:
                slack[d] = min(slack.get(d, held - needed), held - needed)
    spare = tuple((d, max(0, slack.get(d, n))) for d, n in depth.items())
    return DelayLines(tuple(shortfalls), spare)


def _path_up(design: Design, buf: str) -> list[str]:
    """The delay modules between ``buf`` and its stream's producer, nearest the buffer first."""
    lines: list[str] = []
    at = buf
    while True:
        (into,) = design.inputs_of(at)
        src = design.module(into.src)
        if src.kind not in _THROUGH:
            return lines
        if src.kind == "delay":
            lines.append(src.name)
        at = src.name


def _consumers(design: Design, start: str, edges: dict[str, EdgeTiming]) -> tuple[EdgeTiming, ...]:
    """The edges whose internal buffers ``start`` feeds, through broadcasts, hops and further lines."""
    found: list[EdgeTiming] = []
    todo = [start]
    while todo:
        for c in design.outputs_of(todo.pop()):
            kind = design.module(c.dst).kind
            if kind in _THROUGH:
                todo.append(c.dst)
            elif kind == "internal_buffer" and c.dst in edges:
                found.append(edges[c.dst])
    return tuple(found)
