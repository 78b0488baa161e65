"""The OpenCL FPGA platform (OpenCL paper §3, Fig. 4, Algorithm 1): d chained PCMs of P_cell PEs each.

One pipelined computation module (PCM) per iteration: PCM t computes every stencil of iteration t (PE
lanes ``pcm{t}.{stencil}.pe{j}``, j < P_cell, in the lane model of ``lanes``) and its outputs feed PCM
t + 1 (output i → input i), the last PCM's go to memory. Each field the PCM reads is held in one
``shift_register`` (§3, Fig. 4: a PCM is shift registers and PEs; Algorithm 1, lines 6–13: every cycle
the register shifts by P_cell and takes P_cell new elements, one per input port ``lane{r}``), which every
stencil of the PCM reading that field taps: ``pcm{t}.{stencil}.{field}.sr``, named after its first
reader, its taps the union of its readers'. Its output port ``tap{x}`` holds, at firing n, the element
at address n·P_cell + x; PE lane j's port ``f@(a)`` reads ``tap{a_lin + j}``. A shared register emits
to its readers in step; its readers' tap channels hold the skew per-reader registers absorbed on their
inputs (``_Pcm.share``).

Size (Fig. 6): a p×q window over rows of N cells needs (q − 1)N + p registers from its first to its
last cell plus one for the newly read value: (q − 1)N + p + 1 = D_r + 1 with D_r the reuse distance.
With P_cell lanes the window the PEs read spans D_r + P_cell − 1 cells and P_cell new values arrive per
cycle: ``size = D_r + P_cell``, which is the paper's formula at P_cell = 1 (and, per lane, matches
the paper's observation that memory use does not grow with P_cell: P_cell shorter pipelines).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.delays import absorbs, relay_delay
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.timing import EdgeTiming
from stencilmap.analysis.windows import linear_offsets, reuse_distance
from stencilmap.design.common import (
    LINK_DEPTH,
    Params,
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


@dataclass
class _Register:
    """A PCM's shift register of one field while the PCM's stencils are built: where it sits in the
    module list and its readers so far, (stencil, taps, depth of the channels into it for that reader)."""

    index: int
    name: str
    producer: str
    readers: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)
    #: reader -> the cycle it processes its first point, and the cycle its edge lets it (``analysis.timing``)
    starts: dict[str, int] = field(default_factory=dict)
    arrivals: dict[str, int] = field(default_factory=dict)


class _Pcm(LaneBuilder):
    unit = "pcm"

    def __init__(
        self, program: Program, p_cell: int, shape: tuple[int, ...], latencies: OperatorLatencies
    ) -> None:
        super().__init__(program, live_graph(program), p_cell, shape, latencies)
        #: replayed input -> its latest relay, that delay, and the points upstream of the relay's end: the
        #: edges whose consumers take from a line's end (None: the reader) and the lines since each
        self.relays: dict[str, tuple[str, int, list[tuple[EdgeTiming | None, int]]]] = {}
        #: (PCM, producer, field) -> the PCM's shift register of that field (§3: one per field)
        self.registers: dict[tuple[int, str, str], _Register] = {}
        self.edge_timing = {e.key: e for e in self.timing.edges}
        self.edge_timing = {e.key: e for e in self.timing.edges}

    def build(self, arch: str, parameters: Params, notes: tuple[str, ...], device: str | None) -> Design:
        for node in self.live.inputs:
            self.read(node.field)
        for node in self.live.stencils:
            self.compute(node)
        self.share()
        for out, node_name in self.live.outputs:
            self.write(out, node_name)
        return self.wiring.design(self.program.name, arch, parameters, self.live.notes + notes, device)

    def source(self, edge: Edge, delay: int) -> tuple[Edge, int]:
        """An input no output feeds (FDTD's C1–C4), read by PCM t > 1: passed on from the relay of the
        PCM before, as the paper's PCMs pass their data on (§3, Fig. 4), so its delay lines add up to the
        last PCM's delay (linear in d) instead of one line per PCM from the reader (quadratic). A relay's
        line holds what each point upstream requires (as ``pipeline.source``): the edge's delay less the
        lines from the reader, and past each earlier relay's consumer w what w takes before this consumer
        needs it (``delays.relay_delay``; not the difference of two capped delays, too short on a grid
        shorter than the lag between PCMs: a deadlock)."""
        node = self.live.graph.node(edge.producer)
        if node.stencil is not None or self.live.graph.node(edge.consumer).copy < 2:
            return edge, delay
        key, at, points = self.relays.get(edge.producer, (edge.producer, 0, [(None, 0)]))
        here = self.edge_timing.get(edge.key)
        if delay < at or here is None:
            return edge, delay  # earlier than the last relay: straight from the reader
        if delay == at and key != edge.producer:  # as late as the last relay: that relay
            w = points[-1][0]
            if w is not None and absorbs(self.timing, here) < absorbs(self.timing, w):
                self.relays[edge.producer] = (key, at, [*points[:-1], (here, points[-1][1])])
            return Edge(key, edge.consumer, edge.field), 0
        need = [
            (delay if w is None else relay_delay(self.timing, w, here) // self.lanes) - held
            for w, held in points
        ]
        depth = max(0, *need)
        relay = f"{self.unit}{self.live.graph.node(edge.consumer).copy}.{edge.field}.relay{delay}"
        dtype = self.program.field_dtype(edge.field)
        streams = []
        for r, src in enumerate(self.streams[key]):
            name = self.wiring.add(
                Module(f"{relay}.lane{r}", "broadcast", params(fanout=1, field=edge.field))
            )
            self.wiring.feed(src, Sink(name, "", LINK_DEPTH + depth))
            streams.append(Stream(name, "o0", 1, dtype))
        self.streams[relay] = tuple(streams)
        self.relays[edge.producer] = (relay, delay, [*((w, held + depth) for w, held in points), (here, 0)])
        return Edge(relay, edge.consumer, edge.field), 0

    def buffer(self, prefix: str, node: Node, edge: Edge, depth: int) -> dict[int, Stream]:
        """The PCM's shift register of ``edge.field`` (from ``edge.producer``): built at its first
        reader, shared by the later ones (``share`` sizes it for all of them)."""
        st = node.stencil
        assert st is not None
        taps = linear_offsets(self.program, st, edge.field, self.stream_shape)
        p, dtype = self.lanes, self.program.field_dtype(edge.field)
        key = (node.copy, edge.producer, edge.field)
        register = self.registers.get(key)
        if register is None:
            name = self.wiring.add(
                Module(
                    f"{prefix}.sr", "shift_register", self._params(edge.field, (st.name,), node.copy, taps)
                )
            )
            register = self.registers[key] = _Register(len(self.wiring.modules) - 1, name, edge.producer)
            for r, src in enumerate(self.streams[edge.producer]):
                self.wiring.feed(src, Sink(name, f"lane{r}", depth))
        register.readers.append((st.name, taps, depth))
        register.starts[st.name] = self.timing.start[node.name]
        timing = self.edge_timing.get(edge.key) or self.edge_timing.get(f"{edge.field}->{edge.consumer}")
        register.arrivals[st.name] = timing.arrival if timing is not None else 0
        return {
            x: Stream(register.name, f"tap{x}", 1, dtype)
            for x in sorted({a + j for a in taps for j in range(p)})
        }

    def _params(self, fld: str, readers: tuple[str, ...], stage: int, taps: tuple[int, ...]) -> Params:
        size = shift_register_size(reuse_distance(taps), self.lanes)
        dtype = self.program.field_dtype(fld)
        more = {"readers": readers} if len(readers) > 1 else {}
        return params(
            field=fld,
            stencil=readers[0],
            **more,
            stage=stage,
            size=size,
            taps=taps,
            lanes=self.lanes,
            dtype=dtype,
        )

    def share(self) -> None:
        """Size each register read by several stencils of its PCM for all of them: the union of their
        taps (Fig. 6's size over that window), fed through the shortest of their input depths.

        One register emits to its readers in step, so each reader's tap channels hold what its own
        register's input channel held (depth D_r), one link, and the beats by which its reach a_max falls
        short of the farthest-reaching reader's: then a reader can lag the producer, and another reader
        can lead it, by at least as much as with registers of their own, whose timing the delays of the
        rest of the design were sized for (``analysis.delays``). Where those delays are capped (a grid
        shorter than the lags: a register of its own holds the stream), a later reader's tap channels hold
        what the register emits at its earliest reader's pace before the later one starts (``_lead``)."""
        skew = 1 if self.lanes > 1 else 0
        for (stage, producer, fld), reg in self.registers.items():
            if len(reg.readers) < 2:
                continue
            taps = tuple(sorted({a for _, reader_taps, _ in reg.readers for a in reader_taps}))
            readers = tuple(name for name, _, _ in reg.readers)
            module = self.wiring.modules[reg.index]
            self.wiring.modules[reg.index] = replace(module, params=self._params(fld, readers, stage, taps))
            low = min(depth for _, _, depth in reg.readers)
            for src in self.streams[producer]:
                sinks = self.wiring.nets[src]
                self.wiring.nets[src] = [replace(s, depth=low) if s.dst == reg.name else s for s in sinks]
            shortest = min(max(t) for _, t, _ in reg.readers)
            first = max(min(reg.starts.values()), max(reg.arrivals.values()))
            extra = {
                f"{self.unit}{stage}.{name}": max(depth, LINK_DEPTH + skew + self._lead(reg, name, first))
                + -(-(max(t) - shortest) // self.lanes)
                for name, t, depth in reg.readers
            }
            self.wiring.channels = [
                replace(c, depth=c.depth + extra[c.dst.rpartition(".pe")[0]]) if c.src == reg.name else c
                for c in self.wiring.channels
            ]
        self._hold_late_inputs()

    def _lead(self, reg: _Register, reader: str, first: int) -> int:
        """Beats a reader's tap channels must hold so that the register never waits for it before it starts:
        it emits at the pace of its earliest reader, from cycle ``first`` (no earlier than every reader's
        window is in), up to the whole stream. Within the stream this is at most the reader's own delay; a
        grid shorter than the lags caps that delay (a register of its own would hold the stream), not this."""
        return max(0, min(reg.starts[reader] - first, self.timing.vectors))

    def _hold_late_inputs(self) -> None:
        """A reader of shorter reach gets its taps later than from a register of its own (the register
        emits once the farthest reader's window is in), and then its output can be late too, for every
        stencil downstream. In topological order: an input arrives late by its producer's lateness plus what
        a shared register adds; a stencil fires late by what its latest input's lateness exceeds the slack
        its channels were sized for (``analysis.delays``), and each other input's channels hold the
        difference."""
        skew = 1 if self.lanes > 1 else 0
        edges: dict[str, list[tuple[str, int, int]]] = {}  # reader's prefix -> (register, late, slack)
        producer: dict[str, str] = {}  # register -> the node feeding it
        for (stage, prod, _), reg in self.registers.items():
            producer[reg.name] = prod
            reach = max(a for _, t, _ in reg.readers for a in t)
            for name, t, depth in reg.readers:
                late = -(-(reach - max(t)) // self.lanes)
                edges.setdefault(f"{self.unit}{stage}.{name}", []).append(
                    (reg.name, late, depth - LINK_DEPTH - skew)
                )
        late_out: dict[str, int] = {}  # node -> beats its output is late
        hold: dict[tuple[str, str], int] = {}  # (register, reader's prefix) -> beats its channels add
        for node in self.live.stencils:
            assert node.stencil is not None
            prefix = f"{self.unit}{node.copy}.{node.stencil.name}"
            arrive = [
                (r, late + late_out.get(producer[r], 0), slack) for r, late, slack in edges.get(prefix, [])
            ]
            fire = max([a - slack for _, a, slack in arrive] + [0])
            late_out[node.name] = fire
            for r, a, _ in arrive:
                if fire > a:
                    hold[(r, prefix)] = fire - a
        self.wiring.channels = [
            replace(c, depth=c.depth + extra)
            if (extra := hold.get((c.src, c.dst.rpartition(".pe")[0])))
            else c
            for c in self.wiring.channels
        ]
