"""Spatial stencil fusion (StencilFlow §V-B): inline a producer into its only consumer.

StencilFlow fuses two stencils when they operate on the same shape, have the same boundary condition
definitions, and are connected by a field u with deg(u) = 2 — written by one, read by exactly one other —
that appears nowhere else (not an output), so it can be removed without an extra off-chip write. The
effect on a spatial pipeline is a shorter critical path (the two initialization phases combine) and one
internal buffer per input field instead of two. Every stencil here spans the whole iteration space, so the
shape condition always holds; the boundary condition is checked per field both stencils read.

The fused consumer reads the producer's fields at shifted offsets: for every offset o at which it read the
producer, the producer's temporaries and expression, shifted by o, become temporaries of the consumer
(the last one typed as the producer's field, so its value is rounded exactly as storing it did), and the
read becomes that temporary. Operation order is unchanged, so results are bit-exact.

Boundary semantics must stay exact, and the IR has no in-bounds predicate, so a read at o ≠ 0 is fused
only where the reference gives the same answer without one:

* o = 0 is always in bounds; the producer's own boundaries apply at the consumer's point, which is the
  producer's point, so ``constant``, ``copy`` and ``shrink`` all carry over;
* o ≠ 0 needs ``shrink`` everywhere: the consumer on the producer, and the producer on every field it
  reads. Then the original point is defined iff x + o and every x + o + a are in bounds (undefinedness
  propagates), the fused one iff every x + o + a is; the two agree when the producer's reads span 0 on
  every axis (some a_d ≤ 0 and some a_d ≥ 0), since x + o then lies between in-bounds points. A
  ``constant`` or ``copy`` boundary at o ≠ 0 would need the producer's value out of bounds (the boundary
  value, not the expression) or its own centre (x + o, not x): refused, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from stencilmap.program.expr import Expr, Ref, Var, map_expr, refs, shift
from stencilmap.program.graph import reads
from stencilmap.program.ir import Boundary, Program, Stencil, Temp


@dataclass(frozen=True, slots=True)
class Fusion:
    """A fused program, the (producer, consumer) pairs fused in order, and the pairs refused, with why."""

    program: Program
    fused: tuple[tuple[str, str], ...]
    refused: tuple[tuple[str, str, str], ...]


def fuse(program: Program) -> Fusion:
    """Fuse producers into their only consumer until no candidate is left (StencilFlow §V-B: aggressive)."""
    fused: list[tuple[str, str]] = []
    refused: dict[tuple[str, str], str] = {}
    while (step := _next(program, refused)) is not None:
        program = _fused(program, *step)
        fused.append(step)
    return Fusion(program, tuple(fused), tuple((p, c, why) for (p, c), why in refused.items()))


def fuse_if(program: Program, on: bool) -> Fusion:
    """``fuse(program)`` when ``on`` (the jobs' ``--fuse``), else the program unchanged."""
    return fuse(program) if on else Fusion(program, (), ())


def _next(program: Program, refused: dict[tuple[str, str], str]) -> tuple[str, str] | None:
    """The first (producer, consumer) pair that may fuse, in program order; ``refused`` is refilled with
    the pairs of this program that may not (at the fixpoint: the final refusals)."""
    refused.clear()
    for producer in program.stencils:
        readers = [s for s in program.stencils if producer.name in reads(s)]
        if producer.name in program.outputs or len(readers) != 1:
            continue  # deg(u) = 2 and not an output: StencilFlow §V-B
        consumer = readers[0]
        why = why_not(program, producer, consumer)
        if why is None:
            return producer.name, consumer.name
        refused[(producer.name, consumer.name)] = why
    return None


def why_not(program: Program, producer: Stencil, consumer: Stencil) -> str | None:
    """Why ``producer`` cannot be fused into ``consumer`` exactly, or None when it can."""
    if producer.name == consumer.name:
        return "a stencil reading its own output"
    for f in reads(producer):
        if f in reads(consumer) and producer.boundary_of(f) != consumer.boundary_of(f):
            return f"different boundary conditions for '{f}'"
    offsets = {r.offset for r in _refs(consumer) if r.field == producer.name}
    if all(not any(o) for o in offsets):
        return None
    if consumer.boundary_of(producer.name).kind != "shrink":
        kind = consumer.boundary_of(producer.name).kind
        return f"read at a nonzero offset with a '{kind}' boundary (the value out of bounds is not the expression's)"
    if any(producer.boundary_of(f).kind != "shrink" for f in reads(producer)):
        return "read at a nonzero offset, and the producer has a non-shrink boundary (its centre moves)"
    if not _spans_zero(program, producer):
        return "read at a nonzero offset, and the producer's reads do not span 0 on every axis"
    return None


def _refs(stencil: Stencil) -> list[Ref]:
    out = list(refs(stencil.expr))
    for t in stencil.temps:
        out.extend(refs(t.expr))
    return out


def _spans_zero(program: Program, producer: Stencil) -> bool:
    """Every axis has reads of the producer at a_d ≤ 0 and at a_d ≥ 0 (fields spanning that axis)."""
    for axis in range(program.rank):
        along = [
            r.offset[program.field_axes(r.field).index(axis)]
            for r in _refs(producer)
            if axis in program.field_axes(r.field)
        ]
        if not along or min(along) > 0 or max(along) < 0:
            return False
    return True


def _fused(program: Program, producer_name: str, consumer_name: str) -> Program:
    """The program with ``producer`` inlined into ``consumer`` and removed."""
    producer, consumer = program.stencil(producer_name), program.stencil(consumer_name)
    assert producer is not None and consumer is not None
    offsets = sorted({r.offset for r in _refs(consumer) if r.field == producer.name})
    temps: list[Temp] = []
    value: dict[tuple[int, ...], str] = {}
    taken = {t.name for t in consumer.temps} | _names(program)
    for o in offsets:
        inlined, value[o] = _inline(program, producer, o, taken)
        temps.extend(inlined)
        taken.update(t.name for t in inlined)
    replaced = replace(
        consumer,
        expr=_substitute(consumer.expr, producer.name, value),
        temps=(*temps, *(replace(t, expr=_substitute(t.expr, producer.name, value)) for t in consumer.temps)),
        boundary=_boundaries(consumer, producer),
    )
    stencils = tuple(
        replaced if s.name == consumer.name else s for s in program.stencils if s.name != producer.name
    )
    return replace(program, stencils=stencils)


def _names(program: Program) -> set[str]:
    names = {i.name for i in program.inputs} | {s.name for s in program.stencils}
    names |= {p.name for p in program.params} | {c.name for c in program.constants}
    return names | {t.name for s in program.stencils for t in s.temps}


def _inline(
    program: Program, producer: Stencil, o: tuple[int, ...], taken: set[str]
) -> tuple[list[Temp], str]:
    """The producer's temporaries and value at offset ``o`` as temporaries; the name holding its value."""
    tag = "_".join(f"m{-d}" if d < 0 else str(d) for d in o) or "c"
    delta = {f: tuple(o[a] for a in program.field_axes(f)) for f in reads(producer)}
    rename: dict[str, str] = {}
    out = []
    for t in producer.temps:
        rename[t.name] = _fresh(f"{producer.name}_{t.name}_at_{tag}", taken)
        out.append(Temp(rename[t.name], t.dtype, _rename(shift(t.expr, delta), rename)))
    name = _fresh(f"{producer.name}_at_{tag}", taken)
    out.append(Temp(name, producer.dtype, _rename(shift(producer.expr, delta), rename)))
    return out, name


def _fresh(name: str, taken: set[str]) -> str:
    n, candidate = 1, name
    while candidate in taken:
        n, candidate = n + 1, f"{name}{n + 1}"
    taken.add(candidate)
    return candidate


def _boundaries(consumer: Stencil, producer: Stencil) -> tuple[tuple[str, Boundary], ...]:
    """The consumer's boundaries without the producer's field, plus the producer's for fields it adds."""
    out = {f: b for f, b in consumer.boundary if f != producer.name}
    for f, b in producer.boundary:
        out.setdefault(f, b)
    return tuple(sorted(out.items()))


def _substitute(e: Expr, field: str, value: dict[tuple[int, ...], str]) -> Expr:
    """``e`` with every read of ``field`` at offset o replaced by the temporary ``value[o]``."""
    return map_expr(e, lambda x: Var(value[x.offset]) if isinstance(x, Ref) and x.field == field else None)


def _rename(e: Expr, names: dict[str, str]) -> Expr:
    return map_expr(
        e, lambda x: Var(names[x.name], x.index) if isinstance(x, Var) and x.name in names else None
    )
