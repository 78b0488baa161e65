"""The OpenCL FPGA platform (OpenCL paper §3, Fig. 4, Algorithm 1): d chained PCMs of P_cell PEs each.

One pipelined computation module (PCM) per iteration: PCM t computes every stencil of iteration t (PE
lanes ``pcm{t}.{stencil}.pe{j}``, j < P_cell, in the lane model of ``lanes``) and its outputs feed PCM
t + 1 (output i → input i), the last PCM's go to memory. Each field a stencil reads is held in a
``shift_register`` ``pcm{t}.{stencil}.{field}.sr`` (Algorithm 1, lines 6–13: every cycle the register
shifts by P_cell and takes P_cell new elements, one per input port ``lane{r}``). Its output port
``tap{x}`` holds, at PE firing n, the element at address n·P_cell + x; PE lane j's port ``f@(a)`` reads
``tap{a_lin + j}``.

Size (Fig. 6): a p×q window over rows of N cells needs (q − 1)N + p registers from its first to its
last cell plus one for the newly read value: (q − 1)N + p + 1 = D_r + 1 with D_r the reuse distance.
With P_cell lanes the window the PEs read spans D_r + P_cell − 1 cells and P_cell new values arrive per
cycle: ``size = D_r + P_cell``, which is the paper's formula at P_cell = 1 (and, per lane, matches
the paper's observation that memory use does not grow with P_cell: P_cell shorter pipelines).
"""

from __future__ import annotations

from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.windows import linear_offsets, reuse_distance
from stencilmap.design.common import (
    LINK_DEPTH,
    Sink,
    Stream,
    concrete_shape,
    device_latencies,
    live_graph,
    or_hint,
    positive,
    with_iterate,
)
from stencilmap.design.ir import Design, Module, params
from stencilmap.design.lanes import LaneBuilder
from stencilmap.design.registry import BuildConfig, register
from stencilmap.program.ir import Program


def shift_register_size(reuse: int, lanes: int = 1) -> int:
    """Cells of a PCM shift register: D_r + P_cell ((q − 1)N + p + 1 at P_cell = 1; OpenCL paper §4.1)."""
    return reuse + lanes


@register("pcm")
def build_pcm(program: Program, config: BuildConfig) -> Design:
    """d = iterate PCMs of P_cell = unroll PEs per stencil, shift registers for the windows."""
    p_cell = positive("P_cell (the unroll factor)", or_hint(config.unroll, program.hints.unroll))
    program = with_iterate(program, or_hint(config.iterate, program.iterate))
    shape = concrete_shape(program)
    parameters = params(d=program.iterate, P_cell=p_cell, shape=shape)
    lat = device_latencies(config.device)
    return _Pcm(program, p_cell, shape, lat).build("pcm", parameters, (), config.device)


class _Pcm(LaneBuilder):
    unit = "pcm"

    def __init__(
        self, program: Program, p_cell: int, shape: tuple[int, ...], latencies: OperatorLatencies
    ) -> None:
        super().__init__(program, live_graph(program), p_cell, shape, latencies)
        self.relays: dict[str, tuple[str, int]] = {}  # replayed input -> (its latest relay, that delay)

    def source(self, edge: Edge, delay: int) -> tuple[Edge, int]:
        """An input no output feeds (FDTD's C1–C4), read by PCM t > 1: passed on from the relay of the
        PCM before, as the paper's PCMs pass their data on (§3, Fig. 4), so its delay lines add up to the
        last PCM's delay (linear in d) instead of one line per PCM from the reader (quadratic)."""
        node = self.live.graph.node(edge.producer)
        if node.stencil is not None or self.live.graph.node(edge.consumer).copy < 2:
            return edge, delay
        key, at = self.relays.get(edge.producer, (edge.producer, 0))
        if delay < at:
            return edge, delay  # earlier than the last relay: straight from the reader
        relay = f"{self.unit}{self.live.graph.node(edge.consumer).copy}.{edge.field}.relay{delay}"
        dtype = self.program.field_dtype(edge.field)
        streams = []
        for r, src in enumerate(self.streams[key]):
            name = self.wiring.add(
                Module(f"{relay}.lane{r}", "broadcast", params(fanout=1, field=edge.field))
            )
            self.wiring.feed(src, Sink(name, "", LINK_DEPTH + delay - at))
            streams.append(Stream(name, "o0", 1, dtype))
        self.streams[relay] = tuple(streams)
        self.relays[edge.producer] = (relay, delay)
        return Edge(relay, edge.consumer, edge.field), 0

    def buffer(self, prefix: str, node: Node, edge: Edge, depth: int) -> dict[int, Stream]:
        st = node.stencil
        assert st is not None
        taps = linear_offsets(self.program, st, edge.field, self.stream_shape)
        p, dtype = self.lanes, self.program.field_dtype(edge.field)
        size = shift_register_size(reuse_distance(taps), p)
        sr = Module(
            f"{prefix}.sr",
            "shift_register",
            params(
                field=edge.field, stencil=st.name, stage=node.copy, size=size, taps=taps, lanes=p, dtype=dtype
            ),
        )
        name = self.wiring.add(sr)
        for r, src in enumerate(self.streams[edge.producer]):
            self.wiring.feed(src, Sink(name, f"lane{r}", depth))
        return {x: Stream(name, f"tap{x}", 1, dtype) for x in sorted({a + j for a in taps for j in range(p)})}
