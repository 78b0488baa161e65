"""The SODA microarchitecture (SODA §3): k PEs per stencil per stage, q chained stages, reuse chains.

Per stage (one ``iterate`` copy; stage s's output i feeds stage s + 1's input i) and per stencil, k PEs
(``stage{s}.{stencil}.pe{j}``) produce k consecutive outputs a cycle (the lane model of ``lanes``).
Each producer — an input, a stencil copy — has one reuse buffer over the union of its readers' accesses
(SODA §3.2–3.3, ``analysis.sharing``): reader v's offsets a, for its k PEs {a + j}, sit at positions
z = a + j − lag_v·k (lag_v: how many beats later than the earliest reader it runs, from the schedule),
split by residue mod k into k reuse chains. Chain r takes lane r of the producer's stream (the element at
relative address x goes to chain x mod k) and is built, as SODA §3.4 builds it from forwarding modules
(Figure 3), of:

* a ``forward`` tap per position z of its readers of one lag, ``stage{c}.{field}.c{r}.tap[{z}]`` (the
  producer's stage and field; a suffix ``lag{L}`` where readers of two lags need one position): at PE
  firing n it holds the element at address n·k + x of its readers' frame, x = z + lag·k (its ``offset``),
  and sends it (port ``out``) to every PE port that needs it — PE lane j's port ``f@(a)`` is fed by the
  tap x = a_lin + j — and (port ``next``) down the chain;
* between consecutive taps lo < hi of a chain, d = z_hi − z_lo: a direct channel when d = k (an FF in
  Figure 2), else a ``fifo`` ``…c{r}.fifo[{lo},{hi}]`` of depth d/k − 1 (the segment delays by d/k
  cycles: d/k − 1 in the FIFO plus the lower tap).

So chain r stores (hi − lo)/k + 1 elements and the buffer D_r + k − 1 over the shifted union (SODA §3.2),
checked by the tests. The channels into a buffer's chains hold the delay its earliest reader can wait.
The program's inputs are read once (``read.{field}``, k lanes); stage q's outputs are written by
``write.{field}``; streams with several consumers go through broadcasts.

Tiling (SODA §4.2, ``tiling``): with a tile size (``BuildConfig.tile``, else the program's) below an
inner dimension the grid is streamed tile by tile, every stream and reuse buffer sized for the tile
(``stream_shape``). Readers record ``tile_shape``, ``tiles`` (count per inner axis) and per inner axis
a ``tile_starts_axis{a}`` (the first grid index of each tile, halos re-read: ``points`` counts them);
writers the same plus ``owned_lo_axis{a}`` / ``owned_hi_axis{a}``, the global [lo, hi) each tile writes.
"""

from __future__ import annotations

from collections import Counter

from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.latency import OperatorLatencies
from stencilmap.analysis.sharing import SharedBuffer, SharedChain, Tap, shared_buffers
from stencilmap.analysis.storage import Storage
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.design.common import (
    DEFAULT_BURST_WIDTH,
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
from stencilmap.design.ir import Design, Module, ParamValue, params
from stencilmap.design.lanes import LaneBuilder
from stencilmap.design.registry import BuildConfig, register
from stencilmap.design.tiling import TilePlan, tile_plan
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program


@register("soda")
def build_soda(program: Program, config: BuildConfig) -> Design:
    """The SODA design of a shape-bound program: k = unroll, q = iterate, tiles from the tile size."""
    k = positive("the unroll factor", or_hint(config.unroll, program.hints.unroll))
    program = with_iterate(program, or_hint(config.iterate, program.iterate))
    shape = concrete_shape(program)
    plan = tile_plan(shape, or_hint(config.tile, program.hints.tile), program_halo(program))
    if plan.tiled and any(len(i.axes) < program.rank for i in program.inputs):
        raise StencilmapError("SODA tiling needs full-dimensional inputs (a lower-dimensional one is read)")
    parameters = params(
        k=k,
        q=program.iterate,
        shape=shape,
        stream_shape=plan.stream_shape,
        tile=plan.tile,
        tiles=plan.counts,
        tiles_total=plan.total,
        burst_width=program.hints.burst_width or DEFAULT_BURST_WIDTH,
    )
    notes = (f"tiled: {plan.total} tiles of {list(plan.stream_shape)}",) if plan.tiled else ()
    builder = _Soda(program, plan, k, device_latencies(config.device))
    return builder.build("soda", parameters, notes, config.device)


class _Soda(LaneBuilder):
    unit = "stage"

    def __init__(self, program: Program, plan: TilePlan, k: int, latencies: OperatorLatencies) -> None:
        super().__init__(program, live_graph(program), k, plan.stream_shape, latencies)
        self.plan = plan
        timing = pipeline_timing(program, plan.stream_shape, k, latencies, graph=self.live.graph)
        self.shared = shared_buffers(program, self.live.graph, timing, plan.stream_shape)
        self.taps: dict[str, dict[Tap, Stream]] = {}  # producer -> its buffer's taps, built once

    def buffer(self, prefix: str, node: Node, edge: Edge, depth: int) -> dict[int, Stream]:
        """The taps of ``node``'s reads in the one buffer of ``edge.producer`` (built at its first reader)."""
        buf = self.shared[edge.producer]
        if edge.producer not in self.taps:
            self.taps[edge.producer] = self._build(buf)
        reader = next(r for r in buf.readers if r.consumer == node.name)
        needed = {a + j for a in reader.offsets for j in range(self.lanes)}
        return {x: self.taps[edge.producer][buf.tap(reader, x)] for x in needed}

    def _build(self, buf: SharedBuffer) -> dict[Tap, Stream]:
        producer = self.live.graph.node(buf.producer)
        prefix = f"{self.unit}{producer.copy}.{producer.field}"
        skew = 1 if self.lanes > 1 else 0  # the lanes enter chains whose tops are up to one beat apart
        depth = LINK_DEPTH + skew + buf.delay  # SODA §3.3.2: the one delay the earliest reader needs
        taps: dict[Tap, Stream] = {}
        for chain in buf.chains:
            where: dict[str, ParamValue] = dict(
                field=producer.field, stage=producer.copy, chain=chain.residue
            )
            taps.update(self._chain(f"{prefix}.c{chain.residue}", chain, buf, where))
            top = taps[chain.taps[-1]].module
            self.wiring.feed(self.streams[buf.producer][chain.residue], Sink(top, depth=depth))
        return taps

    def _chain(
        self, prefix: str, chain: SharedChain, buf: SharedBuffer, where: dict[str, ParamValue]
    ) -> dict[Tap, Stream]:
        """Taps (one ``forward`` each) from the highest position down, FIFOs between distant taps."""
        dtype = self.program.field_dtype(str(where["field"]))
        taps = {}
        shared = {z for z, n in Counter(t.z for t in chain.taps).items() if n > 1}
        for t in chain.taps:
            readers = tuple(r.consumer for r in buf.readers if r.lag == t.lag)
            name = f"{prefix}.tap[{t.z}]" + (f"lag{t.lag}" if t.z in shared else "")
            p = params(
                **where, offset=t.x, position=t.z, lag=t.lag, readers=readers, lanes=self.lanes, dtype=dtype
            )
            taps[t] = Stream(self.wiring.add(Module(name, "forward", p)), "out", 1, dtype)
        for lo, hi, beats in reversed(chain.segments):
            src = Stream(taps[hi].module, "next", 1, dtype)
            if beats > 1:  # SODA §3.2: a FIFO of (hi − lo)/k elements, one of them in the lower tap
                fifo = Module(
                    f"{prefix}.fifo[{lo.z},{hi.z}]",
                    "fifo",
                    params(**where, depth=beats - 1, lo=lo.z, hi=hi.z, dtype=dtype),
                )
                self.wiring.link(src, Sink(self.wiring.add(fifo)))
                src = Stream(fifo.name, "", 1, dtype)
            self.wiring.link(src, Sink(taps[lo].module))
        return taps

    def reader_extra(self, name: str) -> Params:
        plan = self.plan
        placement = {f"tile_starts_axis{a.axis}": a.starts for a in plan.axes}
        points = plan.points_read if plan.tiled else None  # halos re-read; untiled: the field's own size
        return params(points=points, tile_shape=plan.stream_shape, tiles=plan.counts, **placement)

    def writer_extra(self, name: str) -> Params:
        plan = self.plan
        placement: dict[str, ParamValue] = {}
        for a in plan.axes:
            placement[f"tile_starts_axis{a.axis}"] = a.starts
            placement[f"owned_lo_axis{a.axis}"] = tuple(a.owned(t)[0] for t in range(a.count))
            placement[f"owned_hi_axis{a.axis}"] = tuple(a.owned(t)[1] for t in range(a.count))
        return params(tile_shape=plan.stream_shape, tiles=plan.counts, **placement)


def chain_storage(design: Design) -> Storage:
    """Elements a built SODA design stores: reuse (one per tap, plus the FIFOs' depths) and delay (what
    the channels into the chains hold beyond a plain link and the lanes' skew), over all k lanes."""
    k = dict(design.parameters)["k"]
    assert isinstance(k, int)
    kinds = {m.name: m.kind for m in design.modules}
    reuse = sum(
        1 if m.kind == "forward" else int(str(m.param("depth")))
        for m in design.modules
        if m.kind in ("forward", "fifo")
    )
    skew = 1 if k > 1 else 0
    entries = [
        c for c in design.channels if kinds[c.dst] == "forward" and kinds[c.src] not in ("forward", "fifo")
    ]
    return Storage(reuse, sum(c.depth - LINK_DEPTH - skew for c in entries))
