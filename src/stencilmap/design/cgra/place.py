"""The PEs of a CGRA worker mapping, their queues (``wire``), and their places on the grid (``place``).

Placement follows Fig. 4: the compute PEs of one product of a linear chain form a block of w (FILTER,
MUL/MAC) pairs on one grid row, the pair of reader r in columns 2r, 2r + 1 of the block, so that the PEs
of a block share their coefficient and the PEs of a column (within the blocks) listen to the same reader;
as many blocks as fit share a row. DAG PEs fill the rows in order, each worker's together. Readers take
the first rows, writers and synchronization the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import ceil

from stencilmap.design.cgra.dag import Access, OpNode
from stencilmap.design.cgra.mapping import CgraMapping, Fabric, Pe, Queue
from stencilmap.design.cgra.plan import Plan, dag_depths, input_strides, places, queue_depths, reader_width
from stencilmap.design.cgra.regions import Box, Span, needs, source
from stencilmap.design.cgra.terms import refusal
from stencilmap.program.dtypes import bits
from stencilmap.program.ir import Program


def reader_name(field_name: str, r: int) -> str:
    return f"rd.{field_name}.{r}"


def chain_name(t: int, c: int, k: int, op: str) -> str:
    return f"L{t}.w{c}.k{k}.{op.lower()}"


def assemble(
    program: Program,
    plan: Plan,
    fab: Fabric,
    regs: list[list[Box]],
    strips: tuple[Span, ...],
    w: int,
    roofline_w: int,
) -> CgraMapping:
    """Boxes and reader spans of every strip, then the PEs, queues and places."""
    nst = len(plan.stages)
    boxes: list[list[Box]] = [[] for _ in range(plan.q * nst)]
    spans: list[list[Span]] = [[] for _ in plan.fields]
    for strip in strips:
        need, reads = needs(plan.stages, plan.feed, plan.shape, regs, strip, plan.preserve)
        for t in range(plan.q):
            for k in range(nst):
                z0, z1, y0, y1, _, _ = regs[t][k]
                boxes[t * nst + k].append((z0, z1, y0, y1, *need[t][k]))
        for i, f in enumerate(plan.fields):
            spans[i].append(reads.get(f, (0, 0)))
    width = max(reader_width(plan, regs, s) for s in strips)
    wiring = _Wiring(plan, fab, w, width)
    wiring.wire()
    placed = place(tuple(wiring.pes), fab.cols, plan.linear is not None)
    grid = (max(p.row for p in placed) + 1, fab.cols)
    if grid[0] > fab.rows:
        raise refusal(f"{len(placed)} PEs exceed the {fab.rows}×{fab.cols} grid of '{fab.device.name}'")
    strides = input_strides(program)
    out_dtype = next(s.dtype for s in plan.stages if s.output)
    return CgraMapping(
        program=program.name,
        device=fab.device.name,
        dtype=out_dtype,
        shape=plan.shape,
        rank=program.rank,
        linear=plan.linear,
        stages=plan.stages,
        inputs=tuple((f, program.field_dtype(f), strides[f]) for f in plan.fields),
        workers=w,
        layers=plan.q,
        strips=strips,
        regions=tuple(tuple(r) for r in regs),
        boxes=tuple(tuple(b) for b in boxes),
        spans=tuple(tuple(s) for s in spans),
        pes=placed,
        queues=tuple(wiring.queues),
        grid=grid,
        queue_entries=fab.queue_entries,
        buffered_words=sum(max(0, q.depth - fab.queue_entries) for q in wiring.queues),
        storage_words=fab.scratchpad_bytes // (bits(out_dtype) // 8),
        mem_latency=fab.mem_latency,
        roofline_workers=roofline_w,
        preserve=plan.preserve,
    )


@dataclass
class _Wiring:
    """Every PE (unplaced) and every input queue of the mapping (see ``design.cgra``)."""

    plan: Plan
    fab: Fabric
    w: int
    width: int
    pes: list[Pe] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    roots: dict[tuple[int, int, int], str] = field(default_factory=dict)  # (layer, stage, worker) → PE

    def wire(self) -> None:
        e = self.fab.queue_entries
        for f in self.plan.fields:
            for r in range(self.w):
                base = reader_name(f, r)
                self.pes.append(Pe(f"{base}.agen", "AGEN", 0, 0, worker=r, field=f))
                self.pes.append(
                    Pe(
                        f"{base}.load",
                        "LOAD",
                        0,
                        0,
                        worker=r,
                        inputs=("addr",),
                        field=f,
                        latency=self.fab.mem_latency,
                    )
                )
                self.queues.append(Queue(f"{base}.agen", f"{base}.load", "addr", e))
        for t in range(self.plan.q):
            if self.plan.linear is not None:
                for c in range(self.w):
                    self.roots[(t, 0, c)] = self._chain(t, c)
            else:
                depths = dag_depths(self.plan, self.width, self.w, self.fab)
                for k in range(len(self.plan.stages)):
                    for c in range(self.w):
                        self.roots[(t, k, c)] = self._dag(t, k, c, depths[t][k])
        self._writers()

    def _stream(self, t: int, field_name: str, residue: int) -> str:
        src = source(self.plan.stages, self.plan.feed, t, field_name)
        if src.layer < 0:
            return f"{reader_name(field_name, residue)}.load"
        return self.roots[(src.layer, src.stage, residue)]

    def _filter(self, name: str, t: int, k: int, c: int, a: Access) -> None:
        """A FILTER of the read ``a``: a shrink read keeps what its worker needs of a stream (Fig. 6); a
        constant or copy read walks its worker's points, taking each from the stream or, outside the grid,
        the constant or the centre point's value (from the stream of the worker's own column)."""
        nst = len(self.plan.stages)
        if self.plan.preserve and t > 0 and a.field in self.plan.feed:  # the ring: the input's values
            a = Access(a.field, a.offset, "preserve", a.value)
        ports = {"copy": ("x", "centre"), "preserve": ("x", "ring")}.get(a.boundary, ("x",))
        self.pes.append(
            Pe(name, "FILTER", 0, 0, t, c, ports, a.value, a.offset, a.field, 1, t * nst + k, (), a.boundary)
        )
        depth = self.fab.queue_entries
        if a.boundary != "shrink":  # it takes what it needs in order: the stream may run ahead by the offset
            ahead = abs(places(a.offset, self.width, self.plan.shape[1], self.w))
            depth += ceil(ahead) + self.fab.pe_latency
        self.queues.append(Queue(self._stream(t, a.field, (c + a.offset[2]) % self.w), name, "x", depth))
        if a.boundary == "copy":
            self.queues.append(Queue(self._stream(t, a.field, c), name, "centre", depth))
        if a.boundary == "preserve":  # the readers run ahead of layer t by t layers' lag
            ring = f"{reader_name(a.field, (c + a.offset[2]) % self.w)}.load"
            self.queues.append(Queue(ring, name, "ring", depth + t * self._layer_lag()))

    def _chain(self, t: int, c: int) -> str:
        """Worker c of layer t: FILTER → MUL, FILTER → MAC, … (+ ADD of the constant); its last PE."""
        lin, fab = self.plan.linear, self.fab
        assert lin is not None
        depths = queue_depths(
            lin.terms, self.width, self.plan.shape[1], self.w, fab.pe_latency, fab.queue_entries
        )
        prev = ""
        for k, term in enumerate(lin.terms):
            flt = chain_name(t, c, k, "flt")
            self._filter(flt, t, 0, c, Access(term.field, term.offset))
            op = "MUL" if k == 0 else "MAC"
            name = chain_name(t, c, k, op)
            ports = ("x",) if k == 0 else ("acc", "x")
            operands: tuple[str | float, ...] = ("x", term.coeff) if k == 0 else ("x", term.coeff, "acc")
            self.pes.append(
                Pe(
                    name,
                    op,
                    0,
                    0,
                    t,
                    c,
                    ports,
                    term.coeff,
                    term.offset,
                    term.field,
                    fab.pe_latency,
                    operands=operands,
                )
            )
            data, acc = depths[k]
            self.queues.append(Queue(flt, name, "x", data))
            if k:
                self.queues.append(Queue(prev, name, "acc", acc))
            prev = name
        if lin.constant:
            add = f"L{t}.w{c}.add"
            self.pes.append(
                Pe(
                    add,
                    "ADD",
                    0,
                    0,
                    t,
                    c,
                    ("acc",),
                    lin.constant,
                    latency=fab.pe_latency,
                    operands=("acc", lin.constant),
                )
            )
            self.queues.append(Queue(prev, add, "acc", fab.queue_entries))
            prev = add
        return prev

    def _dag(self, t: int, k: int, c: int, depths: dict[tuple[int, int], int]) -> str:
        """Worker c's PEs of stage k in layer t: a FILTER per read, a PE per operation; its root PE."""
        d = self.plan.dags[k]
        names: list[str] = []
        for i, n in enumerate(d.nodes):
            base = f"L{t}.{d.name}.w{c}.n{i}"
            if isinstance(n, Access):
                names.append(f"{base}.flt")
                self._filter(names[-1], t, k, c, n)
                continue
            assert isinstance(n, OpNode)
            name = f"{base}.{n.op.lower()}"
            ports = tuple(f"a{pos}" for pos, a in enumerate(n.args) if isinstance(a, int))
            operands = tuple(f"a{pos}" if isinstance(a, int) else a for pos, a in enumerate(n.args))
            self.pes.append(
                Pe(
                    name,
                    n.op,
                    0,
                    0,
                    t,
                    c,
                    ports,
                    latency=self.fab.pe_latency,
                    stage=t * len(self.plan.stages) + k,
                    operands=operands,
                    dtype=n.dtype,
                    cast=n.cast,
                )
            )
            for pos, a in enumerate(n.args):
                if isinstance(a, int):
                    self.queues.append(Queue(names[a], name, f"a{pos}", depths[(i, pos)]))
            names.append(name)
        return names[d.root]

    def _writers(self) -> None:
        e, q = self.fab.queue_entries, self.plan.q
        ports = []
        for k, s in enumerate(self.plan.stages):
            if not s.output:
                continue
            for c in range(self.w):
                tag = f"{s.name}.{c}" if self.plan.linear is None else f"{c}"
                store, count = f"wr.{tag}.store", f"sync.{tag}.count"
                self.pes.append(Pe(store, "STORE", 0, 0, worker=c, inputs=("x",), field=s.name, stage=k))
                self.pes.append(Pe(count, "COUNT", 0, 0, worker=c, inputs=("x",), stage=k))
                self.queues += [Queue(self.roots[(q - 1, k, c)], store, "x", e), Queue(store, count, "x", e)]
                ports.append(f"c{tag}")
                self.queues.append(Queue(count, "sync.done", ports[-1], e))
                if self.plan.preserve:
                    ports.append(self._ring_writer(k, c))
        self.pes.append(Pe("sync.done", "DONE", 0, 0, inputs=tuple(ports)))

    def _layer_lag(self) -> int:
        """Cycles a layer's stream trails its source's: its farthest read ahead, and its PEs' latency."""
        reach = max(
            places(o, self.width, self.plan.shape[1], self.w) for s in self.plan.stages for _, o, _ in s.reads
        )
        ops = sum(s.flops for s in self.plan.stages)
        return ceil(max(0.0, reach)) + (ops + 2) * self.fab.pe_latency

    def _ring_writer(self, k: int, c: int) -> str:
        """``border: preserve``: a FILTER keeps the input points of the worker's column outside the
        output's region (the ring) and a writer stores them as they are; returns its count's DONE port."""
        e, f, nst = self.fab.queue_entries, self.plan.fields[0], len(self.plan.stages)
        flt, store, count = f"wr.ring{c}.flt", f"wr.ring{c}.store", f"sync.ring{c}.count"
        box = (self.plan.q - 1) * nst + k
        self.pes.append(Pe(flt, "FILTER", 0, 0, worker=c, inputs=("x",), field=f, stage=box, boundary="ring"))
        self.pes.append(
            Pe(
                store,
                "STORE",
                0,
                0,
                worker=c,
                inputs=("x",),
                field=self.plan.stages[k].name,
                stage=k,
                boundary="ring",
            )
        )
        self.pes.append(Pe(count, "COUNT", 0, 0, worker=c, inputs=("x",), stage=k, boundary="ring"))
        self.queues += [Queue(f"{reader_name(f, c)}.load", flt, "x", e), Queue(flt, store, "x", e)]
        self.queues += [Queue(store, count, "x", e), Queue(count, "sync.done", f"cring{c}", e)]
        return f"cring{c}"


def place(pes: tuple[Pe, ...], cols: int, linear: bool) -> tuple[Pe, ...]:
    """Grid positions (see the module docstring); the order of ``pes`` is kept."""
    w = 1 + max(p.worker for p in pes)
    pos: dict[str, tuple[int, int]] = {}
    row = _fill([p for p in pes if p.op in ("AGEN", "LOAD")], cols, 0, pos)
    block = 2 * w
    per_row = max(1, cols // block)
    compute = [p for p in pes if p.layer >= 0]
    if not linear or block > cols:
        row = _fill(compute, cols, row, pos)
    else:
        products = sorted({(p.layer, _k(p.name)) for p in compute if p.op != "ADD"})
        slot = {key: i for i, key in enumerate(products)}
        for p in (p for p in compute if p.op != "ADD"):
            i = slot[(p.layer, _k(p.name))]
            src = (p.worker + p.offset[2]) % w
            pos[p.name] = (row + i // per_row, (i % per_row) * block + 2 * src + (p.op != "FILTER"))
        row += -(-len(products) // per_row)
    rest = [p for p in pes if p.name not in pos]
    _fill(rest, cols, row, pos)
    return tuple(replace(p, row=pos[p.name][0], col=pos[p.name][1]) for p in pes)


def _fill(items: list[Pe], cols: int, row: int, pos: dict[str, tuple[int, int]]) -> int:
    """Row-major from ``row``; returns the first free row after them."""
    for i, p in enumerate(items):
        pos[p.name] = (row + i // cols, i % cols)
    return row + -(-len(items) // cols)


def _k(name: str) -> int:
    return int(name.split(".")[2][1:])
