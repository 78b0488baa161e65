"""What every builder shares: the live dataflow DAG, port names, memory ports and stream wiring.

Conventions (all builders):

* A PE input port is named after what it carries: ``field@(offset)``, the field as the stencil names it
  and its C-order offset over the field's own axes, e.g. ``"v@(0,-1)"``, ``"u@(3)"``, ``"c@()"`` (0-D).
* A stream of a field visits the points of the iteration space (of one tile) in C order, ``P`` elements
  per beat; element at linear address ``x`` travels on lane ``x mod P``. Streams split into lanes (SODA,
  PCM) use one width-1 channel per lane, ports ``lane{r}``; vector streams (StencilFlow) one width-``W``
  channel. Stream lengths are padded to whole beats; writers drop the padding.
* A lower-dimensional input is read once (reader ``points`` = its own size) and replayed as its
  broadcast over the missing axes (reader ``replay`` = those axes), so every stream has the full length.
* Plain links are ``LINK_DEPTH``-deep channels; channels that must absorb a timing skew between the
  inputs of a unit are deeper (each builder says by how much).
* A stream with several consumers goes through a ``broadcast`` module ``{source}.bcast`` (``{source}.{port}.bcast``
  for a stream on a named port other than ``out``, e.g. ``read.v.lane0.bcast``).
* Channels are named ``{src}[:{src_port}]->{dst}[:{dst_port}]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import TypeVar

from stencilmap.analysis.dag import Edge, Node, PassGraph, node_name, pass_graph
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.design.ir import Channel, Design, Module, ParamValue, params
from stencilmap.errors import StencilmapError, param
from stencilmap.program.ir import Program
from stencilmap.program.verify import MAX_LANES, verify

#: Depth of a plain link: a register slice sustaining one beat per cycle under a ready/valid handshake.
LINK_DEPTH = 2
#: Burst width (bits) of a reader when the program gives none: SODA §3.4, W_b = 512 bits per cycle.
DEFAULT_BURST_WIDTH = 512

#: Memory ports of different devices never share a bank: device d's bank b is memory bank d · DEVICE_BANKS + b
#: (``memory_bank``) for the simulator and the bandwidth model (a partitioned design, ``design.partition``).
DEVICE_BANKS = 64

Params = tuple[tuple[str, ParamValue], ...]
T = TypeVar("T")


def port_name(field_name: str, offset: tuple[int, ...]) -> str:
    """``"v@(0,-1)"``: the PE port reading ``field_name`` at C-order ``offset``."""
    return f"{field_name}@({','.join(str(o) for o in offset)})"


def or_hint(value: T | None, hint: T) -> T:
    """A configured value, else the program's hint (0 is a value, not an absence)."""
    return hint if value is None else value


#: Largest iterate (q, d) a design may ask for, as ``MAX_LANES`` (``program.verify``) is for unroll
#: (k, P_cell, workers, p) and vector width W: design size and analysis time grow with them (the largest
#: published designs use k ≤ 64).
MAX_STAGES = 1024


def check_parameters(unroll: int | None, iterate: int | None, vector: int | None) -> None:
    """Refuse design parameters below 1 or beyond ``MAX_LANES`` / ``MAX_STAGES`` (before any work)."""
    for flag, value, top in (
        ("unroll", unroll, MAX_LANES),
        ("iterate", iterate, MAX_STAGES),
        ("vector", vector, MAX_LANES),
    ):
        if value is not None and not 1 <= value <= top:
            raise StencilmapError(f"{param(flag)} must be between 1 and {top:,}, got {value:,}")


def positive(what: str, value: int) -> int:
    if value < 1:
        raise StencilmapError(f"{what} must be at least 1, got {value}")
    return value


def concrete_shape(program: Program) -> tuple[int, ...]:
    """The program's shape, which must be bound (``bind_shape``) before a design is built."""
    if any(n is None for n in program.shape):
        raise StencilmapError(f"program '{program.name}' has a run-time dimension: bind a shape first")
    return tuple(int(n) for n in program.shape if n is not None)


def device_latencies(device: str | None) -> OperatorLatencies:
    """The operator latencies a builder gives its PEs: the table of ``BuildConfig.device`` (a catalog name
    or a PATH.json), or with no device the default table (``OperatorLatencies.default()``)."""
    if device is None:
        return OperatorLatencies.default()
    from stencilmap.device.catalog import load_device  # the model layer, loaded only when a device is named

    return load_device(device).operator_latencies()


def on_device_banks(program: Program, banks: int, device: str) -> tuple[Program, tuple[str, ...]]:
    """``program`` with every DRAM bank it names taken modulo the ``banks`` the device has (SODA's
    ``dram N`` numbers a board's banks; sodac's corpus names bank 2 on two-bank boards), and a note per
    bank moved — a bank the board lacks is not modelled as an extra full-speed one."""
    moved: dict[int, int] = {}

    def fold(named: tuple[int, ...]) -> tuple[int, ...]:
        for b in named:
            if b >= banks:
                moved[b] = b % banks
        return tuple(b % banks for b in named)

    inputs = tuple(replace(i, banks=fold(i.banks)) for i in program.inputs)
    stencils = tuple(replace(st, banks=fold(st.banks)) for st in program.stencils)
    if not moved:
        return program, ()
    notes = tuple(
        f"dram {b} is bank {to} on {device} ({banks} bank{'s' if banks > 1 else ''})"
        for b, to in sorted(moved.items())
    )
    return replace(program, inputs=inputs, stencils=stencils), notes


def with_iterate(program: Program, q: int) -> Program:
    """The program chained ``q`` times (output i of copy c feeds input i of copy c + 1, or as its
    ``feedback`` names them), verified."""
    positive("the iterate factor", q)
    if q == program.iterate:
        return program
    chained = replace(program, iterate=q)
    try:
        verify(chained)
    except StencilmapError as exc:
        raise StencilmapError(f"cannot chain {q} iterations: {exc.message}", exc.where) from None
    return chained


@dataclass(frozen=True, slots=True)
class LiveGraph:
    """The unrolled DAG (``pass_graph``) restricted to what reaches an output of the last copy."""

    graph: PassGraph
    outputs: tuple[tuple[str, str], ...]  # (output field, node producing it)
    notes: tuple[str, ...]

    @property
    def inputs(self) -> tuple[Node, ...]:
        return tuple(n for n in self.graph.nodes if n.stencil is None)

    @property
    def stencils(self) -> tuple[Node, ...]:
        return tuple(n for n in self.graph.nodes if n.stencil is not None)

    def into(self, name: str) -> tuple[Edge, ...]:
        return self.graph.into(name)

    def consumers(self, name: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.graph.edges if e.producer == name)


def live_graph(program: Program) -> LiveGraph:
    """Prune nodes whose values reach no output: they would be modules without a consumer."""
    g = pass_graph(program)
    q = max(1, program.iterate)
    outputs = tuple((o, node_name(o, q, q)) for o in program.outputs)
    live = {n for _, n in outputs}
    for e in reversed(g.edges):  # edges are in topological order of their consumers
        if e.consumer in live:
            live.add(e.producer)
    notes = []
    for n in g.nodes:
        if n.name not in live:
            what = "input" if n.stencil is None else "stencil"
            notes.append(f"{what} '{n.name}' reaches no output: not built")
    nodes = tuple(n for n in g.nodes if n.name in live)
    edges = tuple(e for e in g.edges if e.consumer in live)
    return LiveGraph(PassGraph(nodes, edges), outputs, tuple(notes))


def memory_bank(m: Module) -> int:
    """The memory bank of a reader or writer across all devices of a (partitioned) design."""
    bank, device = m.param("bank", 0), m.param("device", 0)
    assert isinstance(bank, int) and isinstance(device, int)
    return bank + DEVICE_BANKS * device


def merged(*groups: Params) -> Params:
    """Several parameter groups in one, later groups overriding earlier ones, sorted."""
    out: dict[str, ParamValue] = {}
    for group in groups:
        out.update(group)
    return tuple(sorted(out.items()))


def bank_of(banks: tuple[int, ...]) -> int:
    """The memory bank of a port: the first the program names, else bank 0."""
    return banks[0] if banks else 0


def reader_params(program: Program, name: str, width: int) -> Params:
    """Parameters of the reader of input ``name``: bank, burst width, elements/cycle, points read
    (the field's own size), and ``replay``: the axes it is broadcast over, if any."""
    inp = program.input(name)
    assert inp is not None
    shape = concrete_shape(program)
    own = tuple(shape[a] for a in inp.axes)
    missing = tuple(a for a in range(program.rank) if a not in inp.axes)
    return params(
        field=name,
        bank=bank_of(inp.banks),
        burst_width=program.hints.burst_width or DEFAULT_BURST_WIDTH,
        width=width,
        points=prod(own),
        shape=own,
        replay=missing or None,
        dtype=inp.dtype,
    )


def writer_params(program: Program, name: str, width: int, points: int) -> Params:
    st = program.stencil(name)
    assert st is not None
    return params(field=name, bank=bank_of(st.banks), width=width, points=points, dtype=st.dtype)


@dataclass(frozen=True, slots=True)
class Stream:
    """One output of a module carrying (one lane of) a field's stream."""

    module: str
    port: str
    width: int
    dtype: str


@dataclass(frozen=True, slots=True)
class Sink:
    dst: str
    dst_port: str = ""
    depth: int = LINK_DEPTH


@dataclass
class Wiring:
    """A design under construction: modules, direct channels, and streams with their consumers.

    ``feed`` registers a consumer of a stream; ``design`` wires every stream to its consumers, through a
    broadcast when there are several, in the order streams and consumers were registered.
    """

    modules: list[Module] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    nets: dict[Stream, list[Sink]] = field(default_factory=dict)

    def add(self, module: Module) -> str:
        self.modules.append(module)
        return module.name

    def link(self, src: Stream, sink: Sink) -> None:
        name = f"{_end(src.module, src.port)}->{_end(sink.dst, sink.dst_port)}"
        self.channels.append(
            Channel(name, src.module, sink.dst, sink.depth, src.width, src.dtype, src.port, sink.dst_port)
        )

    def feed(self, src: Stream, sink: Sink) -> None:
        self.nets.setdefault(src, []).append(sink)

    def design(
        self, name: str, arch: str, parameters: Params, notes: tuple[str, ...], device: str | None = None
    ) -> Design:
        for src, sinks in self.nets.items():
            if len(sinks) == 1:
                self.link(src, sinks[0])
                continue
            named = src.module if src.port in ("", "out") else f"{src.module}.{src.port}"
            hub = self.add(Module(f"{named}.bcast", "broadcast", params(fanout=len(sinks))))
            self.link(src, Sink(hub))
            for n, sink in enumerate(sinks):
                self.link(Stream(hub, f"o{n}", src.width, src.dtype), sink)
        self.nets = {}
        modules, channels = tuple(self.modules), tuple(self.channels)
        return Design(name, arch, modules, channels, parameters, device=device, notes=notes)


def _end(module: str, port: str) -> str:
    return f"{module}:{port}" if port else module
