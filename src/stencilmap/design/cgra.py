"""The worker mapping of a stencil onto a triggered-instruction CGRA (CGRA paper §III, §IV, §VI).

Every PE holds one instruction and fires when its operands are in its input queues and its consumers
have room (§II-A). A pass is a pipeline of workers (§III-A):

* **readers** — per input field, w readers load the grid interleaved: reader r loads the points whose
  x ≡ r (mod w) (Fig. 3), row by row; each is a control unit (``AGEN``: the addresses and row/column ids)
  and a ``LOAD``, which broadcasts what it loads to the filters of the compute workers;
* **compute workers** — worker c computes the outputs with x ≡ c (mod w) by a chain of one ``MUL`` and a
  ``MAC`` per further product (Fig. 5), coefficients as constants. The chain takes the products in the
  order their operands arrive (``cgra_terms.arrival_order``): for a 2-D star the y neighbours of the
  rows above, the row's x neighbours, the rows below — §III-B's y chain of 2r_y MUL/MACs fed by the
  reader that owns the column, and the x contributions of §III-A, its partial sums added by chaining
  (the y chain's MACs accumulate onto the x chain's sum: 1 MUL + 4r MACs, §VI's 49 PEs at r = 12).
  Each MUL/MAC takes its operand through a ``FILTER`` that keeps the points it needs from a reader's
  broadcast (Fig. 6: 0^m 1^n 0^p per row, implemented as the row/column-id compare);
* **writers** store worker c's outputs; **synchronization** workers count the stores (``COUNT``) and
  one ``DONE`` raises the end when every count is reached (§III-A).

§III-B's mandatory buffering: a MAC whose operand lies rows later than its predecessor's holds the
partial sums of those rows in its accumulator queue, and a MAC late in a row's chain holds its data
while the partial sum catches up; ``queue_depths`` sizes both from the offsets, so the design does not
deadlock. When the deep queues exceed the fabric's storage (``scratchpad_bytes``) the grid is cut into
vertical strips (§III-B, Fig. 10), each re-reading its halo columns; ``--strip`` asks for a width.
§IV: ``iterate q`` chains q layers of compute workers, layer t+1's filters fed by layer t's PEs.
§VI: w from the roofline (``model.cgra.choose_workers``) unless ``--workers``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from math import ceil

from stencilmap.design.cgra_terms import LinearStencil, Offset, Term, linear_stencil, refusal
from stencilmap.design.common import concrete_shape
from stencilmap.design.ir import Channel, Design, Module, ParamValue, params
from stencilmap.design.registry import BuildConfig, register
from stencilmap.errors import StencilmapError
from stencilmap.model.cgra import choose_workers
from stencilmap.model.devices import Device, load_device
from stencilmap.program.dtypes import bits
from stencilmap.program.ir import Program

Box = tuple[int, int, int, int, int, int]  # z0, z1, y0, y1, x0, x1 (half-open)

#: Ops whose PEs count against the fabric's floating-point MUL/MAC units (the device's ``mac``).
ARITH_OPS = ("MUL", "MAC", "ADD")


@dataclass(frozen=True, slots=True)
class Pe:
    """One PE and its one instruction. ``stream``: the reader (field, r) or worker a FILTER listens to."""

    name: str
    op: str  # AGEN LOAD FILTER MUL MAC ADD STORE COUNT DONE
    row: int
    col: int
    layer: int = -1  # compute layer (§IV), -1 for readers and writers
    worker: int = -1
    inputs: tuple[str, ...] = ()  # input queue ports, in operand order
    const: float = 0.0
    offset: Offset = (0, 0, 0)
    field: str = ""
    latency: int = 1


@dataclass(frozen=True, slots=True)
class Queue:
    """An input queue of ``dst`` (port ``port``) fed by ``src``: ``depth`` entries."""

    src: str
    dst: str
    port: str
    depth: int


@dataclass(frozen=True, slots=True)
class CgraMapping:
    """The mapping of one program onto one CGRA device (see the module docstring)."""

    program: str
    device: str
    dtype: str
    shape: tuple[int, int, int]  # (Z, Y, X); lower-rank programs pad with 1
    rank: int
    stencil: LinearStencil
    workers: int
    layers: int
    strips: tuple[tuple[int, int], ...]  # final output columns [x0, x1) of each strip
    boxes: tuple[tuple[Box, ...], ...]  # [layer][strip]: the points that layer computes in that strip
    pes: tuple[Pe, ...]
    queues: tuple[Queue, ...]
    grid: tuple[int, int]
    queue_entries: int
    buffered_words: int  # queue entries beyond queue_entries: the §III-B buffering, in words
    storage_words: int  # what the scratchpad holds
    mem_latency: int
    roofline_workers: int

    def count(self, op: str) -> int:
        return sum(1 for p in self.pes if p.op == op)

    def op_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.pes:
            out[p.op] = out.get(p.op, 0) + 1
        return dict(sorted(out.items()))

    def reader_span(self, strip: int) -> tuple[int, int]:
        """Input columns strip ``strip`` reads: its output columns and q halos."""
        lo, hi = self.stencil.halo()
        x0, x1 = self.strips[strip]
        return max(0, x0 - self.layers * lo[2]), min(self.shape[2], x1 + self.layers * hi[2])


# ------------------------------------------------------------------------------------------ device


@dataclass(frozen=True, slots=True)
class Fabric:
    """What the mapping needs of a ``cgra`` device file."""

    device: Device
    rows: int
    cols: int
    macs: int
    queue_entries: int
    scratchpad_bytes: int
    mem_latency: int
    pe_latency: int  # MUL / MAC / ADD: the device's ``mul`` latency


def fabric(name: str | None) -> Fabric:
    device = load_device(name or "cgra-tia")
    if "cgra" not in device.archs:
        raise StencilmapError(f"device '{device.name}' is not a CGRA of workers (its archs: {', '.join(device.archs)})")  # fmt: skip
    need = ("pe_rows", "pe_columns", "mac", "queue_entries", "scratchpad_bytes", "load_latency")
    got = {k: device.resource(k) for k in need}
    missing = [k for k, v in got.items() if v is None]
    if missing:
        raise StencilmapError(f"device '{device.name}' lacks {', '.join(missing)} (resources)")
    lat = dict(device.latencies)
    return Fabric(
        device, int(got["pe_rows"] or 0), int(got["pe_columns"] or 0), int(got["mac"] or 0),
        int(got["queue_entries"] or 0), int(got["scratchpad_bytes"] or 0), int(got["load_latency"] or 0),
        max(1, lat.get("mul", 1), lat.get("add", 1)),
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ geometry


def layer_boxes(
    shape: tuple[int, int, int], lin: LinearStencil, q: int, strips: tuple[tuple[int, int], ...]
) -> tuple[tuple[Box, ...], ...]:
    """Layer t (0-based) of q computes, in strip s, its shrunk region (t + 1 halos in) restricted to the
    strip's output columns widened by the q − 1 − t halos the later layers still need."""
    lo, hi = lin.halo()
    out = []
    for t in range(q):
        n = t + 1
        z0, z1 = n * lo[0], shape[0] - n * hi[0]
        y0, y1 = n * lo[1], shape[1] - n * hi[1]
        row = []
        for x0, x1 in strips:
            later = q - 1 - t
            row.append((z0, z1, y0, y1, max(n * lo[2], x0 - later * lo[2]), min(shape[2] - n * hi[2], x1 + later * hi[2])))  # fmt: skip
        out.append(tuple(row))
    return tuple(out)


def split_strips(x0: int, x1: int, width: int) -> tuple[tuple[int, int], ...]:
    """[x0, x1) cut into ⌈(x1 − x0) / width⌉ strips of near-equal width."""
    n = max(1, ceil((x1 - x0) / width))
    edges = [x0 + (x1 - x0) * i // n for i in range(n + 1)]
    return tuple(pairwise(edges))


def flat(o: Offset, width: int, height: int) -> int:
    """An offset as a distance in a strip's row-major stream of ``width`` columns, ``height`` rows."""
    return (o[0] * height + o[1]) * width + o[2]


def queue_depths(
    terms: tuple[Term, ...], width: int, height: int, w: int, latency: int, entries: int
) -> list[tuple[int, int]]:
    """(data queue, accumulator queue) depths of each product of a chain (§III-B: sized so that the design
    cannot deadlock). A worker sees one point of a reader's stream per cycle (w points of the grid):
    term k's operand arrives ⌈Δ_k / w⌉ stream places after term k − 1's (Δ_k its flat distance). The
    partial sum waits that long in term k's accumulator queue (rows later: a row of the strip per w);
    when the operands come faster than the chain's latency, the data waits instead, growing by
    latency − Δ_k / w per product."""
    slack = latency + 3
    out: list[tuple[int, int]] = []
    late = 0.0
    for k, t in enumerate(terms):
        delta = flat(t.offset, width, height) - flat(terms[k - 1].offset, width, height) if k else 0
        gap = delta / w
        late = max(0.0, late + latency - gap) if k else 0.0
        acc = ceil(max(0.0, gap - latency)) + slack if k else 0
        out.append((max(entries, ceil(late) + slack), max(entries, acc) if k else 0))
    return out


# ------------------------------------------------------------------------------------------ mapping


def map_cgra(program: Program, config: BuildConfig) -> CgraMapping:
    """Map ``program`` (shape bound, ``iterate`` = layers) onto the device of ``config``."""
    fab = fabric(config.device)
    lin = linear_stencil(program)
    shape3 = _shape3(concrete_shape(program))
    q = max(1, program.iterate)
    lo, hi = lin.halo()
    if any(shape3[a] - q * (lo[a] + hi[a]) < 1 for a in range(3)):
        raise refusal(f"{q} step(s) of halo {lo}/{hi} leave no point of the {shape3} grid")
    w, roofline_w = _workers(program, lin, fab, q, config.workers)
    strips = _strips(shape3, lin, q, w, fab, config.strip)
    return build_mapping(program, lin, fab, shape3, q, w, strips, roofline_w)


def _shape3(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) > 3:
        raise refusal(f"it is {len(shape)}-D; the workers map 1-D to 3-D grids")
    full = (1,) * (3 - len(shape)) + shape
    return (full[0], full[1], full[2])


def _workers(program: Program, lin: LinearStencil, fab: Fabric, q: int, asked: int | None) -> tuple[int, int]:
    """§VI: the fewest workers whose flops reach the roofline, within the MACs and the grid."""
    from stencilmap.model.roofline import roofline_of

    pes = len(lin.terms) + (1 if lin.constant else 0)
    ops = 2 * len(lin.terms) - 1 + (1 if lin.constant else 0)
    attainable = roofline_of(program, concrete_shape(program), fab.device, q).attainable_gops
    choice = choose_workers(attainable, ops, pes, fab.macs, fab.device.clock_mhz / 1e3, q)
    fits = max(w for w in range(0, choice.max_workers + 1) if w == 0 or _grid_pes(lin, w, q) <= fab.rows * fab.cols)  # fmt: skip
    roofline_w = min(choice.workers, fits)
    if asked is not None:
        if asked < 1:
            raise StencilmapError(f"--workers must be ≥ 1, got {asked}")
        if asked * pes * q > fab.macs or _grid_pes(lin, asked, q) > fab.rows * fab.cols:
            raise refusal(f"{asked} workers of {pes} MUL/MACs × {q} layer(s) need {asked * pes * q} MACs and {_grid_pes(lin, asked, q)} PEs; '{fab.device.name}' has {fab.macs} and {fab.rows * fab.cols}")  # fmt: skip
        return asked, roofline_w
    if roofline_w < 1:
        raise refusal(f"one worker of {pes} MUL/MACs × {q} layer(s) does not fit {fab.macs} MACs and {fab.rows}×{fab.cols} PEs")  # fmt: skip
    return roofline_w, roofline_w


def _grid_pes(lin: LinearStencil, w: int, q: int) -> int:
    """PEs of a mapping: readers (AGEN + LOAD), per layer a FILTER + MUL/MAC per product (and an ADD for a
    constant), writers, counters and DONE."""
    per_worker = 2 * len(lin.terms) + (1 if lin.constant else 0)
    return 2 * w * len(lin.fields) + q * w * per_worker + 2 * w + 1


def _strips(
    shape: tuple[int, int, int], lin: LinearStencil, q: int, w: int, fab: Fabric, asked: int | None
) -> tuple[tuple[int, int], ...]:
    """One strip, or the widest strips whose buffering fits the scratchpad (§III-B, Fig. 10)."""
    lo, hi = lin.halo()
    x0, x1 = q * lo[2], shape[2] - q * hi[2]
    if asked is not None:
        if asked < 1:
            raise StencilmapError(f"--strip must be ≥ 1, got {asked}")
        return split_strips(x0, x1, asked)
    size = bits(lin.dtype) // 8
    store = fab.scratchpad_bytes // size
    width = x1 - x0
    while _buffered(lin, shape, q, w, width, fab) > store:
        if width <= max(1, w):
            need = _buffered(lin, shape, q, w, width, fab)
            raise refusal(f"its buffering needs {need:,} words even in strips {width} wide; '{fab.device.name}' holds {store:,}")  # fmt: skip
        width = max(w, width * 3 // 4)
    return split_strips(x0, x1, width)


def _buffered(
    lin: LinearStencil, shape: tuple[int, int, int], q: int, w: int, width: int, fab: Fabric
) -> int:
    lo, hi = lin.halo()
    span = width + q * (lo[2] + hi[2])
    depths = queue_depths(lin.terms, span, shape[1], w, fab.pe_latency, fab.queue_entries)
    per_chain = sum(max(0, d - fab.queue_entries) + max(0, a - fab.queue_entries) for d, a in depths)
    return per_chain * w * q


def build_mapping(
    program: Program,
    lin: LinearStencil,
    fab: Fabric,
    shape: tuple[int, int, int],
    q: int,
    w: int,
    strips: tuple[tuple[int, int], ...],
    roofline_w: int,
) -> CgraMapping:
    from stencilmap.design.cgra_place import place, wire

    lo, hi = lin.halo()
    span = max(b - a for a, b in strips) + q * (lo[2] + hi[2])
    depths = queue_depths(lin.terms, span, shape[1], w, fab.pe_latency, fab.queue_entries)
    pes, queues = wire(lin, w, q, depths, fab)
    placed = place(pes, fab.cols)
    grid = (max(p.row for p in placed) + 1, fab.cols)
    if grid[0] > fab.rows:
        raise refusal(f"{len(placed)} PEs exceed the {fab.rows}×{fab.cols} grid of '{fab.device.name}'")
    buffered = sum(max(0, qu.depth - fab.queue_entries) for qu in queues)
    return CgraMapping(
        program=program.name, device=fab.device.name, dtype=lin.dtype, shape=shape, rank=program.rank,
        stencil=lin, workers=w, layers=q, strips=strips, boxes=layer_boxes(shape, lin, q, strips),
        pes=placed, queues=queues, grid=grid, queue_entries=fab.queue_entries, buffered_words=buffered,
        storage_words=fab.scratchpad_bytes // (bits(lin.dtype) // 8), mem_latency=fab.mem_latency,
        roofline_workers=roofline_w,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ builder


def design_of(m: CgraMapping) -> Design:
    """The mapping as a Design: one ``cgra_pe`` module per PE (its instruction as parameters), one channel
    per input queue."""
    modules = tuple(Module(p.name, "cgra_pe", _params(p), latency=p.latency) for p in m.pes)
    channels = tuple(
        Channel(f"{qu.src}->{qu.dst}.{qu.port}", qu.src, qu.dst, qu.depth, 1, m.dtype, "", qu.port)
        for qu in m.queues
    )
    parameters = params(
        workers=m.workers, layers=m.layers, strips=len(m.strips), grid=m.grid, shape=m.shape,
        products=len(m.stencil.terms),
    )  # fmt: skip
    return Design(m.program, "cgra", modules, channels, parameters, m.device, None)


def _params(p: Pe) -> tuple[tuple[str, ParamValue], ...]:
    const = p.const if p.op in ("MUL", "MAC", "ADD") else None
    offset = p.offset if p.op in ("FILTER", "MUL", "MAC") else None
    return params(
        op=p.op, row=p.row, col=p.col, layer=p.layer, worker=p.worker, inputs=p.inputs, const=const,
        offset=offset, field=p.field or None,
    )  # fmt: skip


@register("cgra")
def build_cgra(program: Program, config: BuildConfig) -> Design:
    """The worker mapping (see the module docstring)."""
    return design_of(map_cgra(program, config))
