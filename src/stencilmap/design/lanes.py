"""The skeleton SODA and the PCM platform share: P lanes per stream, P PEs per stencil and stage.

Token model (what a simulator executes). Every stream carries the points of one tile in C order,
``P`` per beat: lane ``r`` carries the elements at linear addresses ``r, r + P, r + 2P, …`` (the
element at address ``x`` travels on lane ``x mod P``), padded to ``V = ⌈N / P⌉`` tokens per lane.
PE lane ``j`` of a stencil computes, at its ``n``-th firing, the point at address ``y + j`` with
``y = n·P``, and sends it on its output ``out`` — so PE lane ``j`` produces lane ``j`` of the stencil's
output stream, ready to feed the next stencil or stage unchanged. To do so, its port ``f@(a)`` must
receive at firing ``n`` the element at address ``n·P + j + a_lin`` (``a_lin``: the offset ``a``
linearized over the stream shape); the window buffer of ``f`` (``buffer``) provides a source for each
relative address ``x = a_lin + j``, namely lane ``x mod P`` delayed to address ``n·P + x``. Addresses
outside ``[0, N)`` are placeholders: the PE replaces them by its boundary value (it knows its point
from the address and the stream shape), and writers drop the outputs of the padding.

Channels into a window buffer absorb the skew between the inputs of a unit: the analysis delay buffer
of the edge (``delay_buffers`` of ``pipeline_timing`` with P lanes), ``depth / P`` tokens per lane,
on top of ``LINK_DEPTH``, plus one token when P > 1: the P lanes of a stream enter buffers (chains)
whose first taps are up to one beat apart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from math import prod

from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.latency import OperatorLatencies, stencil_latency
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.analysis.windows import access_sets, linearize
from stencilmap.design.common import (
    LINK_DEPTH,
    LiveGraph,
    Params,
    Sink,
    Stream,
    Wiring,
    merged,
    port_name,
    reader_params,
    writer_params,
)
from stencilmap.design.ir import Design, Module, params
from stencilmap.program.ir import Program, Stencil


class LaneBuilder(ABC):
    """Builds readers, ``lanes`` PEs per stencil copy and writers; subclasses build the window buffers."""

    unit = "stage"  # module name prefix of a stencil copy: ``{unit}{copy}.{stencil}``

    def __init__(
        self,
        program: Program,
        live: LiveGraph,
        lanes: int,
        stream_shape: tuple[int, ...],
        latencies: OperatorLatencies,
    ) -> None:
        self.program = program
        self.live = live
        self.lanes = lanes
        self.stream_shape = stream_shape
        self.wiring = Wiring()
        self.streams: dict[str, tuple[Stream, ...]] = {}  # node name -> its stream, lane by lane
        self.latencies = latencies  # the device's table (``BuildConfig.device``), else the default
        self.timing = pipeline_timing(program, stream_shape, lanes, latencies)
        self.delays = delay_buffers(self.timing)
        self.latency = {s.name: stencil_latency(s, latencies) for s in program.stencils}

    @abstractmethod
    def buffer(self, prefix: str, node: Node, edge: Edge, depth: int) -> dict[int, Stream]:
        """The window buffer of ``edge.field`` in ``node``, fed from the producer's lanes through
        channels of ``depth``; returns the source of every relative address ``a_lin + j``."""

    def source(self, edge: Edge, delay: int) -> tuple[Edge, int]:
        """The edge a window buffer is fed through and the delay (tokens per lane) its channels absorb:
        by default straight from the producer."""
        return edge, delay

    def reader_extra(self, name: str) -> Params:
        return ()

    def writer_extra(self, name: str) -> Params:
        return ()

    def build(self, arch: str, parameters: Params, notes: tuple[str, ...], device: str | None) -> Design:
        for node in self.live.inputs:
            self.read(node.field)
        for node in self.live.stencils:
            self.compute(node)
        for out, node_name in self.live.outputs:
            self.write(out, node_name)
        return self.wiring.design(self.program.name, arch, parameters, self.live.notes + notes, device)

    def read(self, name: str) -> None:
        p = merged(reader_params(self.program, name, self.lanes), self.reader_extra(name))
        mod = self.wiring.add(Module(f"read.{name}", "reader", p))
        dtype = self.program.field_dtype(name)
        self.streams[name] = tuple(Stream(mod, f"lane{r}", 1, dtype) for r in range(self.lanes))

    def write(self, name: str, node_name: str) -> None:
        points = prod(int(n or 0) for n in self.program.shape)
        p = merged(writer_params(self.program, name, self.lanes, points), self.writer_extra(name))
        mod = self.wiring.add(Module(f"write.{name}", "writer", p))
        for j, src in enumerate(self.streams[node_name]):
            self.wiring.feed(src, Sink(mod, f"lane{j}"))

    def compute(self, node: Node) -> None:
        st = node.stencil
        assert st is not None
        prefix = f"{self.unit}{node.copy}.{st.name}"
        offsets = access_sets(st, self.program)
        ports = tuple(sorted(port_name(f, a) for f, offs in offsets.items() for a in offs))
        pes = [self._pe(prefix, node, st, j, ports) for j in range(self.lanes)]
        for edge in self.live.into(node.name):
            # the lanes of one stream enter chains whose tops are up to one beat apart: one more slot
            skew = 1 if self.lanes > 1 else 0
            e, delay = self.source(edge, self.delays.get(edge.key, 0) // self.lanes)
            sources = self.buffer(f"{prefix}.{e.field}", node, e, LINK_DEPTH + skew + delay)
            axes = self.program.field_axes(e.field)
            for a in offsets[e.field]:
                x = linearize(a, axes, self.stream_shape)
                for j, pe in enumerate(pes):
                    self.wiring.link(sources[x + j], Sink(pe, port_name(e.field, a)))
        self.streams[node.name] = tuple(Stream(pe, "out", 1, st.dtype) for pe in pes)

    def _pe(self, prefix: str, node: Node, st: Stencil, lane: int, ports: tuple[str, ...]) -> str:
        p = params(
            stencil=st.name, lane=lane, lanes=self.lanes, stage=node.copy, inputs=ports, dtype=st.dtype
        )
        return self.wiring.add(Module(f"{prefix}.pe{lane}", "pe", p, self.latency[st.name]))
