"""Which points each stage of a CGRA worker mapping computes, per layer and vertical strip (CGRA §III-B,
§IV): pure functions over the stages' reads.

A stage's *region* is where its value is defined: the grid shrunk by every ``shrink`` read (its source's
region moved back by the offset); a ``constant`` read of an input does not shrink it. A strip of the
last layer's outputs *needs* columns of every stage and input it reads, widened by the reads' x offsets
backwards through the stages and layers (the halos re-computed by neighbouring strips, Fig. 10); a stage
computes, in a strip, its region's rows and planes and the columns needed there.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.design.cgra.terms import Offset

Box = tuple[int, int, int, int, int, int]  # z0, z1, y0, y1, x0, x1 (half-open)
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Stage:
    """One stencil the compute workers evaluate: its reads (field, offset, boundary kind) and flops."""

    name: str
    dtype: str
    reads: tuple[tuple[str, Offset, str], ...]
    flops: int
    output: bool


@dataclass(frozen=True, slots=True)
class Source:
    """Where layer t's stages read field f: an input's reader, or stage ``stage`` of layer ``layer``."""

    field: str
    layer: int = -1  # -1: the input's reader
    stage: int = -1


def source(stages: tuple[Stage, ...], feed: dict[str, str], t: int, field: str) -> Source:
    """Stages read a stencil of their own layer; an input is the reader's at layer 0 and, when the
    program iterates (§IV), the output it is fed by at layer t − 1."""
    names = [s.name for s in stages]
    if field in names:
        return Source(field, t, names.index(field))
    if t > 0 and field in feed:
        return Source(feed[field], t - 1, names.index(feed[field]))
    return Source(field)


def regions(
    stages: tuple[Stage, ...],
    feed: dict[str, str],
    shape: tuple[int, int, int],
    q: int,
    preserve: bool = False,
) -> list[list[Box]]:
    """[layer][stage] the region where the stage's value is defined; with ``border: preserve`` the
    previous layer's output is defined everywhere (its ring keeps the input's values)."""
    grid: Box = (0, shape[0], 0, shape[1], 0, shape[2])
    out: list[list[Box]] = []
    for t in range(q):
        row: list[Box] = []
        for s in stages:
            box = grid
            for f, o, kind in s.reads:
                src = source(stages, feed, t, f)
                if kind == "shrink":
                    whole = src.layer < 0 or (preserve and src.layer < t)
                    have = grid if whole else (row if src.layer == t else out[src.layer])[src.stage]
                    box = _meet(box, _moved(have, o))
            row.append(box)
        out.append(row)
    return out


def needs(
    stages: tuple[Stage, ...],
    feed: dict[str, str],
    shape: tuple[int, int, int],
    regs: list[list[Box]],
    strip: Span,
    preserve: bool = False,
) -> tuple[list[list[Span]], dict[str, Span]]:
    """Columns each stage computes and each input's reader loads for the outputs of ``strip``: a read's
    columns moved by its offset, and with a ``copy`` boundary the centre's columns too (with ``border:
    preserve``, one strip: the readers load every column, the ring's too)."""
    q = len(regs)
    empty: Span = (0, 0)
    need = [[empty for _ in stages] for _ in range(q)]
    reads: dict[str, Span] = {}
    for k, s in enumerate(stages):
        if s.output:
            need[q - 1][k] = _clip(strip, regs[q - 1][k][4:])
    for t in reversed(range(q)):
        for k in reversed(range(len(stages))):
            if need[t][k][1] <= need[t][k][0]:
                continue
            for f, o, kind in stages[k].reads:
                want = (need[t][k][0] + o[2], need[t][k][1] + o[2])
                if kind == "copy":  # outside the grid it takes the centre point's value: those columns too
                    want = _hull(want, need[t][k])
                src = source(stages, feed, t, f)
                if src.layer < 0:
                    reads[f] = _hull(reads.get(f, empty), _clip(want, (0, shape[2])))
                else:
                    have = need[src.layer][src.stage]
                    need[src.layer][src.stage] = _hull(have, _clip(want, regs[src.layer][src.stage][4:]))
    if preserve:
        reads = {f: (0, shape[2]) for f in reads}
    return need, reads


def _moved(b: Box, o: Offset) -> Box:
    return (b[0] - o[0], b[1] - o[0], b[2] - o[1], b[3] - o[1], b[4] - o[2], b[5] - o[2])


def _meet(a: Box, b: Box) -> Box:
    return (
        max(a[0], b[0]),
        min(a[1], b[1]),
        max(a[2], b[2]),
        min(a[3], b[3]),
        max(a[4], b[4]),
        min(a[5], b[5]),
    )


def _clip(s: Span, limit: tuple[int, ...]) -> Span:
    lo, hi = max(s[0], limit[0]), min(s[1], limit[1])
    return (lo, hi) if hi > lo else (0, 0)


def _hull(a: Span, b: Span) -> Span:
    if a[1] <= a[0]:
        return b
    if b[1] <= b[0]:
        return a
    return (min(a[0], b[0]), max(a[1], b[1]))


def points(b: Box) -> int:
    return max(0, b[1] - b[0]) * max(0, b[3] - b[2]) * max(0, b[5] - b[4])
