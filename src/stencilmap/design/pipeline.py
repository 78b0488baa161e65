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
"""

from __future__ import annotations

from stencilmap.analysis.buffers import internal_buffers
from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.timing import grid_points, pipeline_timing
from stencilmap.analysis.windows import access_sets, linearize
from stencilmap.design.common import (
    Params,
    Sink,
    Stream,
    Wiring,
    concrete_shape,
    device_latencies,
    live_graph,
    or_hint,
    port_name,
    positive,
    reader_params,
    with_iterate,
    writer_params,
)
from stencilmap.design.ir import Design, Module, ParamValue, params
from stencilmap.design.registry import BuildConfig, register
from stencilmap.program.ir import Program


@register("stencilflow")
def build_stencilflow(program: Program, config: BuildConfig) -> Design:
    """The StencilFlow pipeline of a shape-bound program with vector width W."""
    w = positive("the vector width W", or_hint(config.vector, program.hints.vectorization))
    program = with_iterate(program, or_hint(config.iterate, program.iterate))
    shape = concrete_shape(program)
    lat = device_latencies(config.device)
    delays = delay_buffers(pipeline_timing(program, shape, w, lat))
    if config.delay_buffers == "min":
        delays = {key: min(depth, 1) for key, depth in delays.items()}
    parameters = params(W=w, delay_buffers=config.delay_buffers, shape=shape)
    return _Pipeline(program, shape, w, delays, lat).build(parameters, config.device)


class _Pipeline:
    def __init__(
        self,
        program: Program,
        shape: tuple[int, ...],
        w: int,
        delays: dict[str, int],
        lat: OperatorLatencies,
    ) -> None:
        self.program, self.shape, self.w, self.delays = program, shape, w, delays
        self.latency = {s.name: stencil_latency(s, lat) for s in program.stencils}
        self.wiring = Wiring()
        self.streams: dict[str, Stream] = {}  # node name -> its output stream

    def build(self, parameters: Params, device: str | None) -> Design:
        live = live_graph(self.program)
        for node in live.inputs:
            reader = Module(f"read.{node.field}", "reader", reader_params(self.program, node.field, self.w))
            dtype = self.program.field_dtype(node.field)
            self.streams[node.name] = Stream(self.wiring.add(reader), "out", self.w, dtype)
        for node in live.stencils:
            self.unit(node, live.into(node.name))
        for out, node_name in live.outputs:
            p = writer_params(self.program, out, self.w, grid_points(self.shape))
            self.wiring.feed(
                self.streams[node_name], Sink(self.wiring.add(Module(f"write.{out}", "writer", p)))
            )
        return self.wiring.design(self.program.name, "stencilflow", parameters, live.notes, device)

    def unit(self, node: Node, edges: tuple[Edge, ...]) -> None:
        """The PE of one stencil copy, fed by an internal buffer (and maybe a delay) per field."""
        st = node.stencil
        assert st is not None
        offsets = access_sets(st)
        ports = tuple(sorted(port_name(f, a) for f, offs in offsets.items() for a in offs))
        p = params(stencil=st.name, stage=node.copy, lane=0, width=self.w, inputs=ports, dtype=st.dtype)
        pe = self.wiring.add(Module(f"{node.name}.pe", "pe", p, self.latency[st.name]))
        sizes = {b.field: b.size for b in internal_buffers(self.program, st, self.shape, self.w)}
        for e in edges:
            mine = tuple(port_name(e.field, a) for a in offsets[e.field])
            axes, dtype = self.program.field_axes(e.field), self.program.field_dtype(e.field)
            where: dict[str, ParamValue] = dict(stencil=st.name, stage=node.copy, field=e.field, width=self.w)
            taps = tuple(linearize(a, axes, self.shape) for a in offsets[e.field])
            bp = params(**where, size=sizes[e.field], ports=mine, taps=taps, dtype=dtype)
            buf = self.wiring.add(Module(f"{node.name}.{e.field}.buf", "internal_buffer", bp))
            sink = Sink(buf)
            if self.delays.get(e.key, 0) > 0:
                dp = params(**where, edge=e.key, depth=self.delays[e.key], dtype=dtype)
                delay = self.wiring.add(Module(f"{node.name}.{e.field}.delay", "delay", dp))
                self.wiring.link(Stream(delay, "", self.w, dtype), sink)
                sink = Sink(delay)
            self.wiring.feed(self.streams[e.producer], sink)
            for port in mine:
                self.wiring.link(Stream(buf, port, self.w, dtype), Sink(pe, port))
        self.streams[node.name] = Stream(pe, "out", self.w, st.dtype)
