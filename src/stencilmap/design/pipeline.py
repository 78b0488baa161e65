"""StencilFlow's spatial pipeline (StencilFlow §IV): one unit per stencil, W-wide, delay buffers on edges.

Every stencil copy v of the unrolled DAG is one unit: per field f it reads an ``internal_buffer``
``{v}.{f}.buf`` (§IV-A, ``size`` = the analysis internal buffer, span + W; 0 for a single access, a
wire) whose output port ``f@(a)`` carries, at firing n, the W elements at addresses n·W + a_lin + [0, W)
into the same-named port of the one ``pe`` ``{v}.pe`` (W lanes, the stencil's compute latency). All
streams are W-wide vectors of the points in C order (lower-dimensional inputs replayed, see
``common``).

Delay buffers (§IV-B): on every DAG edge u → v whose analysis delay (``delay_buffers`` of
``pipeline_timing`` with W lanes) is positive, a ``delay`` module ``{v}.{f}.delay`` of ``depth`` that
many elements (a FIFO of ⌈depth / W⌉ beats) sits between u (or u's broadcast) and v's internal buffer.
An edge of delay 0 needs no buffering beyond a plain link: it gets a ``LINK_DEPTH`` channel and no
delay module (channels cannot have depth 0). With ``delay_buffers="min"`` the same edges get a delay of
depth 1 instead — the under-buffered pipeline of StencilFlow Fig. 4, for showing deadlocks.

Inputs are read once (``read.{field}``) and broadcast when several units read them; a unit's output
goes through a broadcast when it feeds several units and/or a writer (``write.{field}``).

Several devices (``BuildConfig.parts``, StencilFlow §VI-B, Fig. 5): every module carries its ``device``;
an input read on several devices is replicated (``read.{field}.d{n}``, from device n's own memory), and
a stream crossing devices goes once per (producer, destination device) through a ``network`` module
``net.{producer}.d{a}-d{b}`` of the link's latency, at the share of the link's bandwidth that the
streams between the two devices leave it. Delay buffers absorb the link latency (``extra`` edge cycles
in ``pipeline_timing``: the latency plus one registered hop into the network).
"""

from __future__ import annotations

from math import ceil

from stencilmap.analysis.buffers import internal_buffers
from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.delays import absorbs, delay_buffers, relay_delay
from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.timing import EdgeTiming, PipelineTiming, grid_points, pipeline_timing
from stencilmap.analysis.windows import access_sets, linearize
from stencilmap.design.common import (
    LINK_DEPTH,
    LiveGraph,
    Params,
    Sink,
    Stream,
    Wiring,
    concrete_shape,
    device_latencies,
    live_graph,
    merged,
    or_hint,
    port_name,
    positive,
    reader_params,
    with_iterate,
    writer_params,
)
from stencilmap.design.ir import Design, Module, ParamValue, params
from stencilmap.design.registry import BuildConfig, register
from stencilmap.errors import StencilmapError
from stencilmap.point import NetworkLink
from stencilmap.program.ir import Program


@register("stencilflow")
def build_stencilflow(program: Program, config: BuildConfig) -> Design:
    """The StencilFlow pipeline of a shape-bound program with vector width W."""
    w = positive("the vector width W", or_hint(config.vector, program.hints.vectorization))
    program = with_iterate(program, or_hint(config.iterate, program.iterate))
    shape = concrete_shape(program)
    live = live_graph(program)
    devices = _devices(live, config.parts)
    link = config.link if config.link is not None else NetworkLink(1, float("inf"))
    cut = {e.key: link.latency + 1 for e in live.graph.edges if _crosses(e, devices)}
    lat = device_latencies(config.device)
    timing = pipeline_timing(program, shape, w, lat, extra=cut)
    delays = delay_buffers(timing)
    if config.delay_buffers == "min":
        delays = {key: min(depth, 1) for key, depth in delays.items()}
    parameters = params(
        W=w, delay_buffers=config.delay_buffers, shape=shape, devices=len(config.parts or ()) or None
    )
    relay = timing if config.delay_buffers == "computed" else None
    pipeline = _Pipeline(program, shape, w, delays, lat, devices, link, relay)
    return pipeline.build(live, parameters, config.device)


def _devices(live: LiveGraph, parts: tuple[tuple[str, ...], ...] | None) -> dict[str, int]:
    """The device of every stencil node (empty: one device, no ``device`` parameters)."""
    if parts is None:
        return {}
    devices = {name: n for n, part in enumerate(parts) for name in part}
    missing = [n.name for n in live.stencils if n.name not in devices]
    if missing:
        raise StencilmapError(f"the partition places no device for stencil '{missing[0]}'")
    return devices


def _crosses(e: Edge, devices: dict[str, int]) -> bool:
    """Whether edge ``e`` carries a stencil's stream to another device (inputs are replicated)."""
    return e.producer in devices and devices[e.producer] != devices.get(e.consumer, devices[e.producer])


class _Pipeline:
    def __init__(
        self,
        program: Program,
        shape: tuple[int, ...],
        w: int,
        delays: dict[str, int],
        lat: OperatorLatencies,
        devices: dict[str, int],
        link: NetworkLink,
        timing: PipelineTiming | None,
    ) -> None:
        self.program, self.shape, self.w, self.delays = program, shape, w, delays
        self.devices, self.link, self.timing = devices, link, timing
        self.edges = {e.key: e for e in timing.edges} if timing is not None else {}
        fed = {i for i, _ in program.feeds()}
        chained = timing is not None and program.iterate > 1
        self.replayed = {i.name for i in program.inputs if chained and i.name not in fed}
        self.latency = {s.name: stencil_latency(s, lat) for s in program.stencils}
        self.wiring = Wiring()
        self.streams: dict[tuple[str, int], Stream] = {}  # (node name, device) -> its stream there
        self.crossing: dict[tuple[int, int], int] = {}  # (device a, device b) -> streams from a to b
        # replayed input -> the end of its last chained line, and every point on the way there: the reader
        # (None) or a line's end (the edge its consumer serves), with the delay between it and the end
        self.relays: dict[tuple[str, int], tuple[Stream, list[tuple[EdgeTiming | None, int]]]] = {}

    def build(self, live: LiveGraph, parameters: Params, device: str | None) -> Design:
        sent = {(e.producer, self.devices[e.consumer]) for e in live.graph.edges if _crosses(e, self.devices)}
        for producer, b in sent:
            pair = (self.devices[producer], b)
            self.crossing[pair] = self.crossing.get(pair, 0) + 1
        if not self.devices:  # one device: every input read once, in the program's order
            for node in live.inputs:
                self.stream(node.name, 0)
        for node in live.stencils:
            self.unit(node, live.into(node.name))
        for out, node_name in live.outputs:
            here = self.devices.get(node_name)
            p = merged(writer_params(self.program, out, self.w, grid_points(self.shape)), _on(here))
            writer = self.wiring.add(Module(f"write.{out}", "writer", p))
            self.wiring.feed(self.stream(node_name, here or 0), Sink(writer))
        return self.wiring.design(self.program.name, "stencilflow", parameters, live.notes, device)

    def stream(self, node: str, device: int) -> Stream:
        """The stream of ``node`` on ``device``: read there (inputs), or sent there over the network."""
        key = (node, device)
        if key in self.streams:
            return self.streams[key]
        if node not in self.devices:  # an input, read from this device's own memory
            field_name = node
            suffix = f".d{device}" if self.devices else ""
            p = merged(reader_params(self.program, field_name, self.w), _on(device if self.devices else None))
            reader = self.wiring.add(Module(f"read.{field_name}{suffix}", "reader", p))
            self.streams[key] = Stream(reader, "out", self.w, self.program.field_dtype(field_name))
            return self.streams[key]
        home = self.devices[node]
        src = self.stream(node, home)
        self.streams[key] = self.network(node, src, home, device)
        return self.streams[key]

    def network(self, node: str, src: Stream, a: int, b: int) -> Stream:
        """A network module carrying ``src`` from device ``a`` to ``b`` (StencilFlow §VI-B, SMI)."""
        beat = self.link.wire_bytes(self.w, itemsize(src.dtype))  # with SMI's packet headers (§VI-B)
        rate = min(1.0, self.link.bytes_per_cycle / (self.crossing[(a, b)] * beat))
        depth = ceil(self.link.latency * rate) + LINK_DEPTH
        p = params(
            producer=node,
            src_device=a,
            dst_device=b,
            device=a,
            width=self.w,
            dtype=src.dtype,
            latency=self.link.latency,
            rate=round(rate, 6),
            depth=depth,
        )
        net = self.wiring.add(Module(f"net.{node}.d{a}-d{b}", "network", p, self.link.latency))
        self.wiring.feed(src, Sink(net))
        return Stream(net, "out", self.w, src.dtype)

    def relayed(self, e: Edge) -> bool:
        """Whether edge ``e`` carries an input no output feeds (FDTD's C1–C4), read by every chained copy
        (not with ``delay_buffers="min"``: that design keeps one under-sized line per edge, Fig. 4)."""
        return e.producer in self.replayed

    def source(self, e: Edge, device: int) -> tuple[Stream, int, list[tuple[EdgeTiming | None, int]]]:
        """The stream edge ``e`` is fed from, the delay (elements) still to add, and the points upstream
        (``relays``; the reader alone when not chained). A replayed input's
        delay lines are chained copy to copy — copy c's line continues the last line before it, unless
        that line's consumer takes the input later than c (``delays.absorbs``: then c's starts at the
        reader) — so they hold about the last copy's delay, linear in q, instead of one line per copy
        from the reader (quadratic). The continuation holds what the tap's consumer takes before this
        one needs it, capped by the stream (``delays.relay_delay``, StencilFlow §IV-B's rule between the
        two consumers; not the difference of the two capped depths, which is too short on a grid shorter
        than the lag between copies, and deadlocks). ``design.delay_check`` verifies every path."""
        depth = self.delays.get(e.key, 0)
        src = self.stream(e.producer, device)
        tap = self.relays.get((e.producer, device))
        timing = self.timing
        if depth > 0 and self.relayed(e) and tap is not None and timing is not None:
            last, points = tap
            here, before = self.edges[e.key], points[-1][0]
            if before is not None and absorbs(timing, here) >= absorbs(timing, before):
                # every point upstream needs its own requirement met (``design.delay_check``): the reader
                # the edge's delay, a line's end the relay from its consumer; lines of different reach
                # are capped differently, so the last tap alone is not enough
                need = [(depth if w is None else relay_delay(timing, w, here)) - held for w, held in points]
                return last, max(0, *need), points
        return src, depth, [(None, 0)]

    def unit(self, node: Node, edges: tuple[Edge, ...]) -> None:
        """The PE of one stencil copy, fed by an internal buffer (and maybe a delay) per field."""
        st = node.stencil
        assert st is not None
        offsets = access_sets(st, self.program)
        ports = tuple(sorted(port_name(f, a) for f, offs in offsets.items() for a in offs))
        p = params(stencil=st.name, stage=node.copy, lane=0, width=self.w, inputs=ports, dtype=st.dtype)
        here = self.devices.get(node.name)
        p = merged(p, _on(here))
        pe = self.wiring.add(Module(f"{node.name}.pe", "pe", p, self.latency[st.name]))
        sizes = {b.field: b.size for b in internal_buffers(self.program, st, self.shape, self.w)}
        for e in edges:
            mine = tuple(port_name(e.field, a) for a in offsets[e.field])
            axes, dtype = self.program.field_axes(e.field), self.program.field_dtype(e.field)
            where: dict[str, ParamValue] = dict(stencil=st.name, stage=node.copy, field=e.field, width=self.w)
            if here is not None:
                where["device"] = here
            taps = tuple(linearize(a, axes, self.shape) for a in offsets[e.field])
            bp = params(**where, size=sizes[e.field], ports=mine, taps=taps, dtype=dtype)
            buf = self.wiring.add(Module(f"{node.name}.{e.field}.buf", "internal_buffer", bp))
            src, depth, upstream = self.source(e, here or 0)
            if depth > 0:
                dp = params(**where, edge=e.key, depth=depth, dtype=dtype)
                delay = self.wiring.add(Module(f"{node.name}.{e.field}.delay", "delay", dp))
                self.wiring.feed(src, Sink(delay))
                src = Stream(delay, "", self.w, dtype)
                if self.relayed(e):  # this line's end is the input's next tap
                    points = [(w, held + depth) for w, held in upstream] + [(self.edges[e.key], 0)]
                    self.relays[(e.producer, here or 0)] = (src, points)
            self.wiring.feed(src, Sink(buf))
            for port in mine:
                self.wiring.link(Stream(buf, port, self.w, dtype), Sink(pe, port))
        self.streams[(node.name, here or 0)] = Stream(pe, "out", self.w, st.dtype)


def _on(device: int | None) -> Params:
    """The ``device`` parameter of a module of a partitioned design (none on one device)."""
    return params(device=device)
