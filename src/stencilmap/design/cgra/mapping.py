"""The worker mapping of a stencil onto a triggered-instruction CGRA (CGRA paper §III, §IV, §VI).

Every PE holds one instruction and fires when its operands are in its input queues and its consumers
have room (§II-A). A pass is a pipeline of workers (§III-A):

* **readers** — per input field, w readers load the grid interleaved: reader r loads the points whose
  x ≡ r (mod w) (Fig. 3), row by row; each is a control unit (``AGEN``: the addresses and row/column ids)
  and a ``LOAD``, which broadcasts what it loads to the filters of the compute workers;
* **compute workers** — worker c computes the outputs with x ≡ c (mod w) by a chain of one ``MUL`` and a
  ``MAC`` per further product (Fig. 5), coefficients as constants. The chain takes the products in the
  order their operands arrive (``cgra.terms.arrival_order``): for a 2-D star the y neighbours of the
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
§VI: w from the roofline unless ``--workers``: a count the caller's model gives (``model.cgra.roofline_workers``),
fitted here to the PE grid.

Programs that are not linear map their expression DAG one operation per PE in the same scheme
(``cgra.dag``); constant and copy boundaries and ``border: preserve`` get filters that fill (the
paper's mux). The steps are in ``cgra.plan`` (stages, workers, strips, depths), ``cgra.regions`` (what
each stage computes where) and ``cgra.place`` (the PEs, queues and grid places).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stencilmap.design.cgra.regions import Box, Span, Stage
from stencilmap.design.cgra.terms import LinearStencil, Offset
from stencilmap.design.ir import Channel, Design, Module, ParamValue, params
from stencilmap.design.registry import BuildConfig, register
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.program.ir import Program

#: Cycles without any firing the CGRA simulator takes for a deadlock (``sim.cgra``): a PE's load latency
#: must stay below it (``codegen.cgra_asm`` refuses a longer one).
STALL_CYCLES = 10_000

if TYPE_CHECKING:
    from stencilmap.design.cgra.plan import RooflineWorkers


@dataclass(frozen=True, slots=True)
class Pe:
    """One PE and its one instruction.

    ``operands`` (arithmetic PEs): in evaluation order, an input port's name or an immediate constant;
    ``stage``: for a FILTER the box its consumer computes (layer × stages + stage), for a STORE the
    output stage; ``boundary``: a FILTER's reads outside the grid — ``shrink`` (none) or ``constant``
    (``const`` filled in, the paper's mux)."""

    name: str
    op: str  # AGEN LOAD FILTER STORE COUNT DONE, or an arithmetic op: MUL MAC ADD SUB MIN SEL SQRT ...
    row: int
    col: int
    layer: int = -1  # compute layer (§IV), -1 for readers and writers
    worker: int = -1
    inputs: tuple[str, ...] = ()  # input queue ports
    const: float = 0.0
    offset: Offset = (0, 0, 0)
    field: str = ""
    latency: int = 1
    stage: int = -1
    operands: tuple[str | float, ...] = ()
    boundary: str = "shrink"
    dtype: str = ""  # a DAG op's result type ("" for the chain's MUL/MAC: the stencil's)
    cast: str = ""  # the type a DAG op converts its operands to ("" none)


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
    dtype: str  # the outputs' element type
    shape: tuple[int, int, int]  # (Z, Y, X); lower-rank programs pad with 1
    rank: int
    linear: LinearStencil | None  # the MUL/MAC chain's products, or None: expression DAGs
    stages: tuple[Stage, ...]
    inputs: tuple[tuple[str, str, tuple[int, int, int]], ...]  # field, dtype, strides (0: an axis it lacks)
    workers: int
    layers: int
    strips: tuple[Span, ...]  # the outputs' columns [x0, x1) of each strip
    regions: tuple[tuple[Box, ...], ...]  # [layer][stage]: where the stage is defined
    boxes: tuple[tuple[Box, ...], ...]  # [layer × stages + stage][strip]: what it computes there
    spans: tuple[tuple[Span, ...], ...]  # [input][strip]: the columns its readers load
    pes: tuple[Pe, ...]
    queues: tuple[Queue, ...]
    grid: tuple[int, int]
    queue_entries: int
    buffered_words: int  # queue entries beyond queue_entries: the §III-B buffering, in words
    storage_words: int  # what the scratchpad holds
    mem_latency: int
    roofline_workers: int
    preserve: bool = False  # border: preserve (ring writers; the layers read the ring from the readers)

    def count(self, op: str) -> int:
        return sum(1 for p in self.pes if p.op == op)

    def op_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.pes:
            out[p.op] = out.get(p.op, 0) + 1
        return dict(sorted(out.items()))

    def box_id(self, layer: int, stage: int) -> int:
        return layer * len(self.stages) + stage

    def outputs(self) -> tuple[int, ...]:
        """The stages the writers store (of the last layer)."""
        return tuple(k for k, s in enumerate(self.stages) if s.output)


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
        raise StencilmapError(
            f"device '{device.name}' is not a CGRA of workers (its archs: {', '.join(device.archs)})"
        )
    need = ("pe_rows", "pe_columns", "mac", "queue_entries", "scratchpad_bytes", "load_latency")
    got = {k: device.resource(k) for k in need}
    missing = [k for k, v in got.items() if v is None]
    if missing:
        raise StencilmapError(f"device '{device.name}' lacks {', '.join(missing)} (resources)")
    lat = dict(device.latencies)
    return Fabric(
        device,
        int(got["pe_rows"] or 0),
        int(got["pe_columns"] or 0),
        int(got["mac"] or 0),
        int(got["queue_entries"] or 0),
        int(got["scratchpad_bytes"] or 0),
        int(got["load_latency"] or 0),
        max(1, lat.get("mul", 1), lat.get("add", 1)),
    )


# ------------------------------------------------------------------------------------------ mapping


def map_cgra(program: Program, config: BuildConfig, roofline: RooflineWorkers | int) -> CgraMapping:
    """Map ``program`` (shape bound, ``iterate`` = layers) onto the device of ``config``; ``--unroll``
    names the workers too (as ``estimate --arch cgra`` always took it). ``roofline``: the §VI roofline's
    count of workers, or the model that counts them — the caller's choice (``model.cgra``
    .roofline_workers_of): design never calls a model."""
    from dataclasses import replace

    from stencilmap.design.cgra.plan import plan_mapping

    if config.vector is not None:
        raise StencilmapError(
            f"{param('vector')} does not apply to the CGRA mapping (its workers are its lanes)"
        )
    if config.workers is None and config.unroll is not None:
        config = replace(config, workers=config.unroll)
    return plan_mapping(program, config, fabric(config.device), roofline)


# ------------------------------------------------------------------------------------------ summary


def cgra_json(m: CgraMapping) -> dict[str, object]:
    """``analyze --json``'s ``"cgra"`` object (the assembly and DFG are ``codegen.cgra``'s)."""
    return {
        "kind": "linear" if m.linear is not None else "dag",
        "stages": [s.name for s in m.stages],
        "workers": m.workers,
        "roofline_workers": m.roofline_workers,
        "layers": m.layers,
        "pes": m.op_counts(),
        "grid": list(m.grid),
        "strips": len(m.strips),
        "strip_columns": [list(s) for s in m.strips],
        "buffered_words": m.buffered_words,
        "storage_words": m.storage_words,
    }


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
        workers=m.workers,
        layers=m.layers,
        strips=len(m.strips),
        grid=m.grid,
        shape=m.shape,
        stages=tuple(s.name for s in m.stages),
        kind="linear" if m.linear is not None else "dag",
    )
    return Design(m.program, "cgra", modules, channels, parameters, m.device, None)


def _params(p: Pe) -> tuple[tuple[str, ParamValue], ...]:
    operands = tuple(str(o) for o in p.operands) if p.operands else None
    offset = p.offset if p.op == "FILTER" else None
    return params(
        op=p.op,
        row=p.row,
        col=p.col,
        layer=p.layer,
        worker=p.worker,
        inputs=p.inputs,
        operands=operands,
        offset=offset,
        field=p.field or None,
        boundary=p.boundary if p.op == "FILTER" else None,
    )


@register("cgra")
def build_cgra(
    program: Program, config: BuildConfig, roofline: RooflineWorkers | int | None = None
) -> Design:
    """The worker mapping (see the module docstring); ``roofline`` as ``map_cgra``'s, which the caller
    gives (``arch("cgra").build`` passes ``model.cgra.roofline_workers_of``)."""
    if roofline is None:
        raise StencilmapError(
            "the CGRA builder needs the §VI roofline's worker count: build through stencilmap.arch"
        )
    return design_of(map_cgra(program, config, roofline))
