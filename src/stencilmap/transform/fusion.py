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

Boundary semantics stay exact:

* o = 0 is always in bounds; the producer's own boundaries apply at the consumer's point, which is the
  producer's point, so ``constant``, ``copy`` and ``shrink`` all carry over;
* o ≠ 0 under ``shrink`` needs ``shrink`` everywhere: the consumer on the producer, and the producer on
  every field it reads. Then the original point is defined iff x + o and every x + o + a are in bounds
  (undefinedness propagates), the fused one iff every x + o + a is; the two agree when the producer's
  reads span 0 on every axis (some a_d ≤ 0 and some a_d ≥ 0), since x + o then lies between in-bounds
  points;
* o ≠ 0 under ``constant`` v or ``copy`` is guarded with the IR's in-bounds predicate: the producer's value
  becomes ``InBounds(o) ? producer at o : v`` (``copy``: ``: producer at 0``, the reader's centre), and a
  read the producer makes of a ``copy``-boundary field at o + a becomes ``InBounds(o + a) ? f[o + a] :
  f[o]`` (its centre is x + o, not x). A point's definedness counts the reads of both branches, so every
  read the inlined producer makes must be defined wherever it lands: ``constant``/``copy`` boundaries on
  its fields, each defined everywhere (``analysis.halos.everywhere_defined``); otherwise refused, with the
  reason. Such a fusion duplicates the producer per guarded offset: it is taken by cost (``NODE_OPS``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from stencilmap.analysis.halos import everywhere_defined
from stencilmap.program.expr import Cast, Const, Expr, InBounds, Ref, Select, Var, map_expr, refs, shift
from stencilmap.program.graph import reads
from stencilmap.program.ir import Boundary, Program, Stencil, Temp


@dataclass(frozen=True, slots=True)
class Fusion:
    """A fused program, the (producer, consumer) pairs fused in order, and the pairs refused, with why."""

    program: Program
    fused: tuple[tuple[str, str], ...]
    refused: tuple[tuple[str, str, str], ...]
    #: the cost of the program before and after (None when nothing fused)
    before: Cost | None = None
    after: Cost | None = None
    #: the pairs of ``fused`` fused under an ``InBounds`` guard (a ``constant``/``copy`` read at o ≠ 0)
    guarded: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Cost:
    """What fusion changes (StencilFlow §V-B): the pipeline latency L in cycles (``analysis.timing``), the
    on-chip buffers in elements (internal + delay, StencilFlow §IV) and the operations per point; and the
    runtime C = L + N/W cycles (StencilFlow §IV-B) the latency is weighed against."""

    latency: int
    buffers: int
    ops: int
    runtime: int = 0

    def change(self, after: Cost) -> str:
        """``latency 8,528 → 8,532 cycles, buffers 16,392 → 16,390 elements, ops 48 → 120 per point``."""
        return (
            f"latency {self.latency:,} → {after.latency:,} cycles, buffers {self.buffers:,} → "
            f"{after.buffers:,} elements, ops {self.ops:,} → {after.ops:,} per point"
        )


#: A guarded fusion computes the producer once per offset its reader guards: taken when the operations it
#: adds per point are at most what a stencil node's own pipeline is worth (its shift register, channel
#: handshakes and initialization counters; StencilFlow §V-B: coarser nodes raise the ratio of useful logic)
#: and neither the buffers grow nor the latency by more than 1% of the runtime C = L + N/W (a guard adds a
#: select, and the producer's compute, to the fused stencil's critical path; StencilFlow §IV-B).
NODE_OPS = 64
LATENCY_SLACK = 0.01
#: Grid size along an axis the program leaves to run time, for the cost only.
COST_EXTENT = 64


def fuse(program: Program, guards: bool = True, by_cost: bool = True) -> Fusion:
    """Fuse producers into their only consumer until no candidate is left (StencilFlow §V-B: aggressive
    where nothing is duplicated under a guard, by cost where it is). ``guards``: whether a ``constant`` or
    ``copy`` read at a nonzero offset may be fused under an ``InBounds`` guard (not for architectures
    whose PEs compute no such test: CGRA, EMAX); ``by_cost=False`` takes every exact fusion (tests)."""
    start = program
    fused: list[tuple[str, str]] = []
    guarded: list[tuple[str, str]] = []
    refused: dict[tuple[str, str], str] = {}
    while (step := _next(program, refused, guards, by_cost)) is not None:
        producer, consumer = program.stencil(step[0]), program.stencil(step[1])
        assert producer is not None and consumer is not None
        if _guarded(program, producer, consumer):
            guarded.append(step)
        program = _fused(program, *step)
        fused.append(step)
    why = tuple((p, c, reason) for (p, c), reason in refused.items())
    if not fused:
        return Fusion(program, (), why)
    return Fusion(program, tuple(fused), why, cost(start), cost(program), tuple(guarded))


def fuse_if(program: Program, on: bool, arch: str | None = None) -> Fusion:
    """``fuse(program)`` when ``on`` (the jobs' ``--fuse``), else the program unchanged; the CGRA and EMAX
    PEs have no in-bounds test, so for them nothing is fused under a guard."""
    return fuse(program, guards=arch not in ("cgra", "emax")) if on else Fusion(program, (), ())


def cost(program: Program) -> Cost:
    """The cost of one pass of ``program`` at its shape (``COST_EXTENT`` along run-time axes)."""
    from stencilmap.analysis.ops import stencil_ops
    from stencilmap.analysis.summary import analyze_program

    shape = tuple(COST_EXTENT if n is None else n for n in program.shape)
    facts = analyze_program(replace(program, iterate=1), shape)
    ops = sum(stencil_ops(s).total for s in program.stencils)
    buffers = facts.internal_buffer_elements + facts.delay_buffer_elements
    return Cost(facts.latency_cycles, buffers, ops, facts.runtime_cycles)


def _next(
    program: Program, refused: dict[tuple[str, str], str], guards: bool = True, by_cost: bool = True
) -> tuple[str, str] | None:
    """The first (producer, consumer) pair that may fuse, in program order; ``refused`` is refilled with
    the pairs of this program that may not (at the fixpoint: the final refusals)."""
    refused.clear()
    for producer in program.stencils:
        readers = [s for s in program.stencils if producer.name in reads(s)]
        if producer.name in program.outputs or len(readers) != 1:
            continue  # deg(u) = 2 and not an output: StencilFlow §V-B
        consumer = readers[0]
        why = why_not(program, producer, consumer)
        if why is None and _guarded(program, producer, consumer):
            why = "a guarded fusion, and the architecture has no in-bounds test" if not guards else None
            why = why or (_too_costly(program, producer, consumer) if by_cost else None)
        if why is None:
            return producer.name, consumer.name
        refused[(producer.name, consumer.name)] = why
    return None


def _guarded(program: Program, producer: Stencil, consumer: Stencil) -> bool:
    """Whether fusing needs ``InBounds`` guards: a ``constant``/``copy`` read at a nonzero offset."""
    b = consumer.boundary_of(producer.name)
    return b.kind != "shrink" and any(any(r.offset) for r in _refs(consumer) if r.field == producer.name)


def _too_costly(program: Program, producer: Stencil, consumer: Stencil) -> str | None:
    """Why the cost refuses a guarded fusion (``NODE_OPS``, ``LATENCY_SLACK``), or None."""
    from stencilmap.analysis.ops import stencil_ops

    fused = _fused(program, producer.name, consumer.name)
    merged = fused.stencil(consumer.name)
    assert merged is not None
    added = stencil_ops(merged).total - stencil_ops(producer).total - stencil_ops(consumer).total
    if added > NODE_OPS:
        return f"the cost: {added:,} more operations per point (a node is worth {NODE_OPS})"
    before, after = cost(program), cost(fused)
    if after.buffers > before.buffers:
        return f"the cost: buffers grow, {before.change(after)}"
    if after.latency - before.latency > LATENCY_SLACK * before.runtime:
        return f"the cost: latency grows, {before.change(after)}"
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
        return _why_not_guarded(program, producer)
    if any(producer.boundary_of(f).kind != "shrink" for f in reads(producer)):
        return "read at a nonzero offset, and the producer has a non-shrink boundary (its centre moves)"
    if not _spans_zero(program, producer):
        return "read at a nonzero offset, and the producer's reads do not span 0 on every axis"
    return None


def _why_not_guarded(program: Program, producer: Stencil) -> str | None:
    """Why a read at o ≠ 0 under a ``constant``/``copy`` boundary cannot be guarded exactly, or None.

    The guard ``InBounds(o)`` selects the producer's expression or the boundary value, but a point's
    definedness counts every read of both branches (``program.expr.InBounds``): so every read the
    inlined producer makes must be defined wherever it lands — a ``constant`` or ``copy`` boundary on
    every field it reads, each of them defined everywhere."""
    for f in sorted(reads(producer)):
        if program.field_axes(f) and producer.boundary_of(f).kind == "shrink":
            return f"read at a nonzero offset, and the producer has a 'shrink' boundary on '{f}'"
        if not everywhere_defined(program, f):
            return f"read at a nonzero offset, and '{f}', which the producer reads, is not defined everywhere"
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
    b = consumer.boundary_of(producer.name)
    guarded = b.kind != "shrink"  # out of bounds the read yields b's value: guard the inlined producer
    zero = (0,) * program.rank
    if b.kind == "copy" and any(any(o) for o in offsets):
        offsets = sorted({*offsets, zero}, key=lambda o: (any(o), o))  # the centre first: the guards read it
    temps: list[Temp] = []
    value: dict[tuple[int, ...], str] = {}
    taken = {t.name for t in consumer.temps} | _names(program)
    for o in offsets:
        outside: Expr | None = None
        if guarded and any(o):
            outside = (
                Var(value[zero]) if b.kind == "copy" else Cast(producer.dtype, Const(b.value, "float64"))
            )
        inlined, value[o] = _inline(program, producer, o, taken, outside)
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
    program: Program, producer: Stencil, o: tuple[int, ...], taken: set[str], outside: Expr | None = None
) -> tuple[list[Temp], str]:
    """The producer's temporaries and value at offset ``o`` as temporaries; the name holding its value.

    With ``outside`` (a ``constant``/``copy`` read at o ≠ 0) the value is
    ``InBounds(o) ? producer : outside``, both of the producer's type; and a read the producer makes of a
    field with a ``copy`` boundary at o + a, a ≠ 0, becomes ``InBounds(o + a) ? f[o + a] : f[o]``: its
    centre is the producer's point, x + o, not the fused stencil's."""
    tag = "_".join(f"m{-d}" if d < 0 else str(d) for d in o) or "c"
    delta = {f: tuple(o[a] for a in program.field_axes(f)) for f in reads(producer)}

    def moved(e: Expr) -> Expr:
        e = map_expr(shift(e, delta), lambda x: _moved_guard(x, o))
        if outside is None:
            return e
        return map_expr(e, lambda x: _copy_guard(program, producer, x, delta))

    rename: dict[str, str] = {}
    out = []
    for t in producer.temps:
        rename[t.name] = _fresh(f"{producer.name}_{t.name}_at_{tag}", taken)
        out.append(Temp(rename[t.name], t.dtype, _rename(moved(t.expr), rename)))
    name = _fresh(f"{producer.name}_at_{tag}", taken)
    value = _rename(moved(producer.expr), rename)
    if outside is not None:
        value = Select(InBounds(o), Cast(producer.dtype, value), outside)
    out.append(Temp(name, producer.dtype, value))
    return out, name


def _moved_guard(x: Expr, o: tuple[int, ...]) -> Expr | None:
    """A guard of an already fused producer, moved with it to offset ``o``."""
    if isinstance(x, InBounds):
        return InBounds(tuple(a + d for a, d in zip(x.offset, o, strict=True)))
    return None


def _copy_guard(
    program: Program, producer: Stencil, x: Expr, delta: dict[str, tuple[int, ...]]
) -> Expr | None:
    """A shifted read of a ``copy``-boundary field away from the producer's point, guarded (see _inline)."""
    if not isinstance(x, Ref) or producer.boundary_of(x.field).kind != "copy" or x.offset == delta[x.field]:
        return None
    full = [0] * program.rank
    for a, d in zip(program.field_axes(x.field), x.offset, strict=True):
        full[a] = d
    return Select(InBounds(tuple(full)), x, Ref(x.field, delta[x.field]))


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
