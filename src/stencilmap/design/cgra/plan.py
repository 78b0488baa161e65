"""How a program becomes a CGRA worker mapping: its stages (one linear MUL/MAC chain, or expression DAGs),
the workers (§VI), the strips (§III-B), the queue depths that keep it deadlock-free, then the PEs
(``cgra.place``). ``plan_mapping`` is the outline; each step is one function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from math import ceil, prod

from stencilmap.design.cgra.dag import Access, OpNode, StageDag, stage_dag
from stencilmap.design.cgra.mapping import CgraMapping, Fabric
from stencilmap.design.cgra.regions import Box, Span, Stage, needs, regions, source
from stencilmap.design.cgra.terms import LinearStencil, Offset, Term, linear_stencil, refusal
from stencilmap.design.common import concrete_shape
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError, param
from stencilmap.program.dtypes import bits
from stencilmap.program.expr import refs
from stencilmap.program.graph import stencil_order
from stencilmap.program.ir import Program

#: arg depths of each op node of a DAG: {(node, argument position): depth}
Depths = dict[tuple[int, int], int]


@dataclass(frozen=True, slots=True)
class Plan:
    """The program as the workers see it."""

    shape: tuple[int, int, int]
    q: int
    linear: LinearStencil | None
    dags: tuple[StageDag, ...]
    stages: tuple[Stage, ...]
    feed: dict[str, str]  # iterated input → the output that feeds it (§IV)
    fields: tuple[str, ...]  # the inputs the readers load
    preserve: bool = False  # border: preserve — the output's undefined ring keeps the input's values
    #: per stage, the reads its region counts that its PEs do not compute with (an unused temporary's: every
    #: read shrinks where a stencil is defined, as in the reference); they load nothing
    unused: tuple[tuple[tuple[str, Offset, str], ...], ...] = ()

    def region_stages(self) -> tuple[Stage, ...]:
        """The stages with the reads their regions count (``unused`` included)."""
        if not any(self.unused):
            return self.stages
        return tuple(replace(s, reads=s.reads + u) for s, u in zip(self.stages, self.unused, strict=True))

    def arith_per_worker(self) -> int:
        """Floating-point PEs of one worker of one layer."""
        if self.linear is not None:
            return len(self.linear.terms) + (1 if self.linear.constant else 0)
        return sum(d.ops() for d in self.dags)

    def filters_per_worker(self) -> int:
        if self.linear is not None:
            return len(self.linear.terms)
        return sum(len(d.accesses()) for d in self.dags)


#: The §VI roofline's count of workers for a plan on a fabric, before the PE grid's limit (the caller's
#: model: ``model.cgra.roofline_workers_of``).
RooflineWorkers = Callable[[Program, "Plan", Fabric], int]


def plan_mapping(
    program: Program, config: BuildConfig, fab: Fabric, roofline: int | RooflineWorkers
) -> CgraMapping:
    """Stages → regions → workers → strips → depths → PEs (see the module docstring). ``roofline``: the
    §VI roofline's count of workers (or the caller's model that counts them once the plan is known)."""
    from stencilmap.design.cgra.place import assemble

    plan = make_plan(program)
    regs = regions(plan.region_stages(), plan.feed, plan.shape, plan.q, plan.preserve)
    _check_constant_reads(plan, regs)
    for k in (k for k, s in enumerate(plan.stages) if s.output):
        if _empty(regs[-1][k]):
            raise refusal(
                f"{plan.q} step(s) leave no point of '{plan.stages[k].name}' on the {plan.shape} grid"
            )
    wanted = roofline if isinstance(roofline, int) else roofline(program, plan, fab)
    w, roofline_w = _workers(plan, fab, config.workers, wanted)
    strips = _strips(plan, regs, w, fab, config.strip)
    return assemble(program, plan, fab, regs, strips, w, roofline_w)


def make_plan(program: Program) -> Plan:
    _check(program)
    shape = _shape3(concrete_shape(program))
    q = max(1, program.iterate)
    feed = dict(program.feeds()) if q > 1 else {}
    try:
        lin = linear_stencil(program)
    except StencilmapError:
        lin = None
    if lin is not None:
        reads = tuple((t.field, t.offset, "shrink") for t in lin.terms)
        flops = 2 * len(lin.terms) - 1 + (1 if lin.constant else 0)
        stage = Stage(lin.output, lin.dtype, reads, flops, True)
        preserve = program.border == "preserve"
        return Plan(shape, q, lin, (), (stage,), feed, lin.fields, preserve, (_unused_reads(program, stage),))
    dags = tuple(stage_dag(program, st) for st in stencil_order(program))
    stages = tuple(_stage(d, d.name in program.outputs) for d in dags)
    names = {s.name for s in stages}
    fields = tuple(sorted({f for s in stages for f, _, _ in s.reads if f not in names}))
    if q > 1 and any(b != "shrink" for s in stages for _, _, b in s.reads):
        raise refusal("iterating with constant or copy boundaries: a layer would fill values inside the grid")
    unused = tuple(_unused_reads(program, s) for s in stages)
    return Plan(shape, q, None, dags, stages, feed, fields, program.border == "preserve", unused)


def _unused_reads(program: Program, stage: Stage) -> tuple[tuple[str, Offset, str], ...]:
    """The reads of ``stage``'s stencil (its temporaries' included) that its PEs do not make."""
    st = program.stencil(stage.name)
    assert st is not None
    out: list[tuple[str, Offset, str]] = []
    for root in (st.expr, *(t.expr for t in st.temps)):
        for r in refs(root):
            full = [0, 0, 0]
            for a, o in zip(program.field_axes(r.field), r.offset, strict=True):
                full[3 - program.rank + a] = o
            read = (r.field, (full[0], full[1], full[2]), st.boundary_of(r.field).kind)
            if read not in stage.reads and read not in out:
                out.append(read)
    return tuple(out)


def _stage(d: StageDag, output: bool) -> Stage:
    reads = tuple((a.field, a.offset, a.boundary) for a in d.accesses())
    return Stage(d.name, d.dtype, reads, d.ops(), output)


def _check_constant_reads(plan: Plan, regs: list[list[Box]]) -> None:
    """A constant or copy boundary fills the reads outside the grid; inside it the stage read must be defined
    everywhere (a stage shrunk by its own reads would leave holes the reference calls undefined)."""
    grid: Box = (0, plan.shape[0], 0, plan.shape[1], 0, plan.shape[2])
    for t in range(plan.q):
        for s in plan.stages:
            for f, _, kind in s.reads:
                src = source(plan.stages, plan.feed, t, f)
                if kind != "shrink" and src.layer >= 0 and regs[src.layer][src.stage] != grid:
                    raise refusal(
                        f"stencil '{s.name}' reads '{f}', defined on part of the grid only, with a {kind} boundary"
                    )


def _check(program: Program) -> None:
    if program.params:
        raise refusal("it reads param arrays; coefficients must be constants (§III-A)")
    if program.border == "preserve":
        same = len(program.inputs) == len(program.outputs) == 1
        if not same or program.field_dtype(program.inputs[0].name) != program.field_dtype(program.outputs[0]):
            raise refusal("border: preserve with other than one input and one output of one type")
        if program.inputs[0].axes != tuple(range(program.rank)):
            raise refusal("border: preserve of a lower-dimensional input")
    if program.iterate > 1 and any(i.axes != tuple(range(program.rank)) for i in program.inputs):
        raise refusal("iterating a program with lower-dimensional inputs (§IV chains whole grids)")


def _shape3(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) > 3:
        raise refusal(f"it is {len(shape)}-D; the workers map 1-D to 3-D grids")
    full = (1,) * (3 - len(shape)) + shape
    return (full[0], full[1], full[2])


def _empty(b: Box) -> bool:
    return b[1] <= b[0] or b[3] <= b[2] or b[5] <= b[4]


# ------------------------------------------------------------------------------------------ workers


def grid_pes(plan: Plan, w: int) -> int:
    """PEs of a mapping: readers (AGEN + LOAD), per layer a FILTER per read and a PE per operation,
    writers (STORE + COUNT) and DONE."""
    outputs = sum(1 for s in plan.stages if s.output)
    per_worker = plan.arith_per_worker() + plan.filters_per_worker()
    return 2 * w * len(plan.fields) + plan.q * w * per_worker + 2 * w * outputs + 1


def _grid_workers(plan: Plan, cells: int) -> int:
    """The most workers whose PEs (``grid_pes``, linear in the workers) fit ``cells``: worked out, not
    searched, so a device file's MAC count (the other bound on the workers) costs nothing however large."""
    fixed = grid_pes(plan, 0)
    per_worker = grid_pes(plan, 1) - fixed
    if cells < fixed:
        return 0
    return (cells - fixed) // per_worker if per_worker > 0 else cells


def _workers(plan: Plan, fab: Fabric, asked: int | None, wanted: int) -> tuple[int, int]:
    """§VI: the roofline's ``wanted`` workers (the fewest whose flops reach it, within the MACs: the
    caller's model), within the grid; or the ``asked`` ones if they fit."""
    q, pes = plan.q, plan.arith_per_worker()
    max_workers = fab.macs // (pes * q) if pes > 0 else wanted
    cells = fab.rows * fab.cols
    fits = max(0, min(max_workers, _grid_workers(plan, cells)))
    roofline_w = min(wanted, fits)
    if asked is not None:
        if asked < 1:
            raise StencilmapError(f"{param('workers')} must be ≥ 1, got {asked}")
        if asked * pes * q > fab.macs or grid_pes(plan, asked) > cells:
            raise refusal(
                f"{asked} workers of {pes} arithmetic PEs × {q} layer(s) need {asked * pes * q} MACs and {grid_pes(plan, asked)} PEs; '{fab.device.name}' has {fab.macs} and {cells}"
            )
        return asked, roofline_w
    if roofline_w < 1:
        raise refusal(
            f"one worker of {pes} arithmetic PEs × {q} layer(s) does not fit {fab.macs} MACs and {fab.rows}×{fab.cols} PEs"
        )
    return roofline_w, roofline_w


# ------------------------------------------------------------------------------------------- strips


def output_columns(plan: Plan, regs: list[list[Box]]) -> Span:
    outs = [regs[-1][k] for k, s in enumerate(plan.stages) if s.output]
    return min(b[4] for b in outs), max(b[5] for b in outs)


def split_strips(x0: int, x1: int, width: int) -> tuple[Span, ...]:
    """[x0, x1) cut into ⌈(x1 − x0) / width⌉ strips of near-equal width."""
    n = max(1, ceil((x1 - x0) / width))
    edges = [x0 + (x1 - x0) * i // n for i in range(n + 1)]
    return tuple(pairwise(edges))


def _strips(plan: Plan, regs: list[list[Box]], w: int, fab: Fabric, asked: int | None) -> tuple[Span, ...]:
    """One strip, or the widest strips whose buffering fits the scratchpad (§III-B, Fig. 10)."""
    x0, x1 = output_columns(plan, regs)
    if asked is not None and asked < 1:
        raise StencilmapError(f"{param('strip')} must be ≥ 1, got {asked}")
    if plan.preserve:  # the ring writers and the layers' ring reads stream the whole grid: one strip
        if asked is not None and asked < x1 - x0:
            raise refusal("border: preserve maps in one strip (its ring is read and written whole)")
        return ((x0, x1),)
    if asked is not None:
        return split_strips(x0, x1, asked)
    dtype = plan.stages[0].dtype
    store = fab.scratchpad_bytes // (bits(dtype) // 8)
    width = x1 - x0
    while (need := buffered(plan, regs, (x0, x0 + width), w, fab)) > store:
        if width <= max(1, w):
            raise refusal(
                f"its buffering needs {need:,} words even in strips {width} wide; '{fab.device.name}' holds {store:,}"
            )
        width = max(w, width * 3 // 4)
    return split_strips(x0, x1, width)


def reader_width(plan: Plan, regs: list[list[Box]], strip: Span) -> int:
    """Columns a strip's widest reader loads: the row length that sets the stream's timing."""
    _, reads = needs(plan.stages, plan.feed, plan.shape, regs, strip, plan.preserve)
    return max((b - a for a, b in reads.values()), default=strip[1] - strip[0])


def buffered(plan: Plan, regs: list[list[Box]], strip: Span, w: int, fab: Fabric) -> int:
    """Queue entries beyond the PEs' own, over the whole fabric, for strips like ``strip``."""
    width = reader_width(plan, regs, strip)
    e = fab.queue_entries
    if plan.linear is not None:
        chain = queue_depths(plan.linear.terms, width, plan.shape[1], w, fab.pe_latency, e)
        per = sum(max(0, d - e) + max(0, a - e) for d, a in chain)
        return per * w * plan.q
    depths = dag_depths(plan, width, w, fab)
    return sum(max(0, d - e) for layer in depths for stage in layer for d in stage.values()) * w


# ------------------------------------------------------------------------------------------- depths


def places(o: tuple[int, int, int], width: int, height: int, w: int) -> float:
    """An offset as a distance in stream places (cycles at one point a cycle) of a reader of a strip of
    ``width`` columns and ``height`` rows: the busiest reader has ⌈width / w⌉ points per row."""
    return (o[0] * height + o[1]) * ceil(width / w) + o[2] / w


def queue_depths(
    terms: tuple[Term, ...], width: int, height: int, w: int, latency: int, entries: int
) -> list[tuple[int, int]]:
    """(data queue, accumulator queue) depths of each product of a chain (§III-B: sized so that the design
    cannot deadlock). A worker sees one point of a reader's stream per cycle (w points of the grid):
    term k's operand arrives ``places`` (Δ_k) after term k − 1's (Δ_k their offsets' distance). The
    partial sum waits that long in term k's accumulator queue (rows later: ⌈width / w⌉ per row); when
    the operands come faster than the chain's latency, the data waits instead, growing by latency −
    places per product."""
    slack = latency + 3
    out: list[tuple[int, int]] = []
    late = 0.0
    for k, t in enumerate(terms):
        gap = places(t.offset, width, height, w) - places(terms[k - 1].offset, width, height, w) if k else 0.0
        late = max(0.0, late + latency - gap) if k else 0.0
        acc = ceil(max(0.0, gap - latency)) + slack if k else 0
        out.append((max(entries, ceil(late) + slack), max(entries, acc) if k else 0))
    return out


def dag_depths(plan: Plan, width: int, w: int, fab: Fabric) -> list[list[Depths]]:
    """[layer][stage] the depth of every operand queue of a DAG's ops. Times are cycles after the reader
    delivers the output point itself, one stream place a cycle: a read at offset o arrives places(o)
    after (plus its source's own time and the filter), an op fires when its last operand is there;
    each operand waits, in its queue, the difference (§III-B's buffering, generalised)."""
    height, slack = plan.shape[1], fab.pe_latency + 3
    roots: list[list[float]] = []
    out: list[list[Depths]] = []
    for t in range(plan.q):
        roots.append([])
        out.append([])
        for d in plan.dags:
            arrive: list[float] = []
            depths: Depths = {}
            for i, n in enumerate(d.nodes):
                if isinstance(n, Access):
                    src = source(plan.stages, plan.feed, t, n.field)
                    base = fab.mem_latency + 2.0 if src.layer < 0 else roots[src.layer][src.stage]
                    arrive.append(base + places(n.offset, width, height, w) + 1)
                    continue
                assert isinstance(n, OpNode)
                ready = max(arrive[a] for a in n.args if isinstance(a, int))
                for pos, a in enumerate(n.args):
                    if isinstance(a, int):
                        depths[(i, pos)] = max(fab.queue_entries, ceil(ready - arrive[a]) + slack)
                arrive.append(ready + fab.pe_latency)
            roots[t].append(arrive[d.root])
            out[t].append(depths)
    return out


def input_strides(program: Program) -> dict[str, tuple[int, int, int]]:
    """Each input's element strides along the (z, y, x) iteration axes; 0 along an axis it lacks."""
    shape = concrete_shape(program)
    shift = 3 - len(shape)
    out: dict[str, tuple[int, int, int]] = {}
    for inp in program.inputs:
        dims = [shape[a] for a in inp.axes]
        strides = [0, 0, 0]
        for j, a in enumerate(inp.axes):
            strides[shift + a] = prod(dims[j + 1 :])
        out[inp.name] = (strides[0], strides[1], strides[2])
    return out
