"""What the compiled backends need to know about a program before generating code: its fields, which of
them can hold undefined points (and so carry a definedness mask), and the margins of overlapped tiles.

Overlapped temporal tiles (the picture is 1-D, two fused steps of a 3-point stencil, ``o`` owned points,
``+`` points computed redundantly because the next step of this tile reads them)::

    step 1 (r = 1 step left after it)   + + o o o o + +     margin 1 each side
    step 2 (r = 0)                        o o o o         margin 0: the tile's own points

``margins(plan, r)`` gives, per stencil, how far beyond the tile it must be computed when ``r`` steps of the
block follow; a stencil not needed at all (a dead intermediate, an unpaired output before the last step)
gets None. Everything is computed once per program here, so the C driver only indexes tables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from stencilmap.program.expr import Expr, Ref, map_expr, refs
from stencilmap.program.graph import stencil_order
from stencilmap.program.ir import SHRINK, Program, Stencil

from .cexpr import Unsupported

Margin = tuple[tuple[int, int], ...]  # per iteration axis: (below, above)


@dataclass(frozen=True)
class Plan:
    """The static facts of one program that every compiled backend shares."""

    program: Program
    order: tuple[Stencil, ...]  # topological
    fields: tuple[str, ...]  # inputs, then stencils in topological order
    pairs: tuple[tuple[str, str], ...]  # (input, output) pairs that iterate or preserve
    feeds: bool  # iterate > 1: each pair's output feeds its input (``Program.feeds``)
    masked: frozenset[str]  # fields that may hold undefined points

    # Facts derived once per plan (``reach``, ``margins``): the cost model asks for them per candidate.
    @cached_property
    def reach_memo(self) -> dict[tuple[int, str], tuple[Stencil, Margin | None]]:
        return {}

    @cached_property
    def margin_rows(self) -> list[dict[str, Margin | None]]:
        return []

    def index(self, name: str) -> int:
        return self.fields.index(name)

    def axes(self, name: str) -> tuple[int, ...]:
        return self.program.field_axes(name)

    def preserve_input(self, stencil: str) -> str | None:
        """The input whose values fill this output's undefined points (``border: preserve``)."""
        if self.program.border != "preserve":
            return None
        return next((i for i, o in self.pairs if o == stencil), None)


def make_plan(program: Program) -> Plan:
    program = pass_values_read(program)
    order = tuple(stencil_order(program))
    fields = tuple(i.name for i in program.inputs) + tuple(s.name for s in order)
    pairs: tuple[tuple[str, str], ...] = ()
    if program.iterate > 1 or program.border == "preserve":
        pairs = program.feeds()
        for i, o in pairs:
            inp = program.input(i)
            if inp is None or inp.axes != tuple(range(program.rank)) or inp.dtype != program.field_dtype(o):
                raise Unsupported(f"output '{o}' does not match input '{i}' in type and dimensions")
    for o in program.outputs:
        if program.stencil(o) is None:
            raise Unsupported(f"output '{o}' is not a stencil")
    plan = Plan(program, order, fields, pairs, program.iterate > 1, frozenset())
    return Plan(program, order, fields, pairs, plan.feeds, _masked(plan))


def pass_values_read(program: Program) -> Program:
    """``border: preserve`` fills a fed output's undefined points with its input *after* the pass (the
    reference's rule), so a stencil of the same pass that reads the output sees the values the pass computed,
    undefined where they are. The backends fill in place; an output read that way is therefore computed under
    a fresh name (``<output>__pass``), which its readers read, and the output itself becomes a copy of it."""
    if program.border != "preserve":
        return program
    fed = {o for _, o in program.feeds()}
    read = {r.field for s in program.stencils for r in stencil_refs(s)} & fed
    if not read:
        return program
    taken = {i.name for i in program.inputs} | {s.name for s in program.stencils}
    taken |= {q.name for q in program.params} | {c.name for c in program.constants}
    renamed: dict[str, str] = {}
    for name in sorted(read):
        fresh = f"{name}__pass"
        while fresh in taken:
            fresh += "_"
        taken.add(fresh)
        renamed[name] = fresh

    def moved(e: Expr) -> Expr | None:
        return Ref(renamed[e.field], e.offset) if isinstance(e, Ref) and e.field in renamed else None

    stencils: list[Stencil] = []
    for s in program.stencils:
        boundary = tuple(sorted((renamed.get(f, f), b) for f, b in s.boundary))
        temps = tuple(replace(t, expr=map_expr(t.expr, moved)) for t in s.temps)
        s = replace(s, expr=map_expr(s.expr, moved), temps=temps, boundary=boundary)
        if s.name in renamed:
            centre = Ref(renamed[s.name], (0,) * program.rank)
            stencils.append(replace(s, name=renamed[s.name]))
            s = Stencil(s.name, s.dtype, centre, (), ((renamed[s.name], SHRINK),), s.banks, s.loc)
        stencils.append(s)
    return replace(program, stencils=tuple(stencils))


def _masked(plan: Plan) -> frozenset[str]:
    """Fields that can be undefined somewhere, as a fixpoint over the iterations (inputs start defined)."""
    masked: set[str] = set()
    changed = True
    while changed:
        changed = False
        for st in plan.order:
            if st.name not in masked and _may_be_undefined(plan, st, masked):
                masked.add(st.name)
                changed = True
        if plan.feeds:
            for i, o in plan.pairs:
                if o in masked and i not in masked:
                    masked.add(i)
                    changed = True
    return frozenset(masked)


def _may_be_undefined(plan: Plan, st: Stencil, masked: set[str]) -> bool:
    keep = plan.preserve_input(st.name)
    if keep is not None:  # preserve: the output is defined exactly where the input is
        return keep in masked
    for r in stencil_refs(st):
        if not plan.axes(r.field):
            if r.field in masked:
                return True
            continue
        if r.field in masked or st.boundary_of(r.field).kind == "shrink":
            return True
    return False


def stencil_refs(st: Stencil) -> tuple[Ref, ...]:
    """Distinct field reads of a stencil (temporaries included), in first-use order."""
    seen: dict[Ref, None] = {}
    for t in st.temps:
        for r in refs(t.expr):
            seen.setdefault(r)
    for r in refs(st.expr):
        seen.setdefault(r)
    return tuple(seen)


def reach(plan: Plan, st: Stencil, field: str) -> Margin | None:
    """How far below and above a point ``st`` reads ``field``, per iteration axis; None if it does not."""
    hit = plan.reach_memo.get((id(st), field))
    if hit is not None and hit[0] is st:
        return hit[1]
    value = _reach(plan, st, field)
    plan.reach_memo[(id(st), field)] = (st, value)  # holding ``st`` keeps its id from being reused
    return value


def _reach(plan: Plan, st: Stencil, field: str) -> Margin | None:
    rank = plan.program.rank
    lo, hi = [0] * rank, [0] * rank
    found = False
    for r in stencil_refs(st):
        if r.field != field:
            continue
        found = True
        for a, o in zip(plan.axes(field), r.offset, strict=True):
            lo[a], hi[a] = max(lo[a], -o), max(hi[a], o)
    if plan.preserve_input(st.name) == field:
        found = True
    return tuple(zip(lo, hi, strict=True)) if found else None


def interior(plan: Plan, st: Stencil) -> Margin:
    """Per axis, how far from each edge a point must be for every read of ``st`` to fall inside the grid."""
    rank = plan.program.rank
    lo, hi = [0] * rank, [0] * rank
    for r in stencil_refs(st):
        for a, o in zip(plan.axes(r.field), r.offset, strict=True):
            lo[a], hi[a] = max(lo[a], -o), max(hi[a], o)
    return tuple(zip(lo, hi, strict=True))


def _grow(m: Margin | None, by: Margin) -> Margin:
    base = m if m is not None else tuple((0, 0) for _ in by)
    return tuple((a + c, b + d) for (a, b), (c, d) in zip(base, by, strict=True))


def _union(a: Margin | None, b: Margin | None) -> Margin | None:
    if a is None:
        return b
    if b is None:
        return a
    return tuple((max(x, z), max(y, w)) for (x, y), (z, w) in zip(a, b, strict=True))


def margins(plan: Plan, steps: int) -> list[dict[str, Margin | None]]:
    """``result[r][field]``: the margin each field is needed with when ``r`` steps of the block follow.
    Row ``r`` depends on rows below it only, so the rows are computed once per plan and shared by every
    ``steps`` (each call gets its own dicts)."""
    rows = plan.margin_rows
    if len(rows) < steps:
        rows[:] = _margins(plan, steps)
    return [dict(row) for row in rows[:steps]]


def _margins(plan: Plan, steps: int) -> list[dict[str, Margin | None]]:
    rank = plan.program.rank
    zero: Margin = tuple((0, 0) for _ in range(rank))
    out: list[dict[str, Margin | None]] = []
    read_fields = {
        st.name: dict.fromkeys(
            [*(r.field for r in stencil_refs(st)), *filter(None, [plan.preserve_input(st.name)])]
        )
        for st in plan.order
    }
    for r in range(steps):
        need: dict[str, Margin | None] = dict.fromkeys(plan.fields)
        if r == 0:
            for o in plan.program.outputs:
                need[o] = zero
        elif plan.feeds:
            for i, o in plan.pairs:
                need[o] = _union(need[o], out[r - 1][i])
        for st in reversed(plan.order):
            m = need[st.name]
            if m is None:
                continue
            for f in read_fields[st.name]:  # the fields ``reach`` is not None for: not every field's
                by = reach(plan, st, f)
                if by is not None:
                    need[f] = _union(need[f], _grow(m, by))
        out.append(need)
    return out


def max_margin(plan: Plan, steps: int) -> Margin:
    """The largest margin any field of the block needs, per axis: the depth of a tile's halo."""
    rank = plan.program.rank
    best: Margin = tuple((0, 0) for _ in range(rank))
    for table in margins(plan, steps):
        for m in table.values():
            best = _union(best, m) or best
    return best
