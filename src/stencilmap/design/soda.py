"""The SODA microarchitecture (SODA §3): k PEs per stencil per stage, q chained stages, reuse chains.

Per stage (one ``iterate`` copy; stage s's output i feeds stage s + 1's input i) and per stencil, k PEs
(``stage{s}.{stencil}.pe{j}``) produce k consecutive outputs a cycle (the lane model of ``lanes``).
Each field a stencil reads gets a reuse buffer (SODA §3.2, Figure 2): the offsets the k PEs need,
{a + j}, split by remainder mod k into k reuse chains. Chain r takes lane r of the field's stream (the
element at relative address x goes to chain x mod k) and is built, as SODA §3.4 builds it from
forwarding modules (Figure 3), of:

* a ``forward`` tap per chain offset x (one element), ``{stage}.{stencil}.{field}.c{r}.tap[{x}]``: at
  PE firing n it holds the element at address n·k + x and sends it (port ``out``) to every PE port
  that needs it — PE lane j's port ``f@(a)`` is fed by the tap x = a_lin + j of chain x mod k — and
  (port ``next``) down the chain;
* between consecutive taps lo < hi of a chain, distance d = hi − lo: a direct channel when d = k (an FF
  in Figure 2), else a ``fifo`` ``…c{r}.fifo[{lo},{hi}]`` of depth d/k − 1 (the segment delays by d/k
  cycles: d/k − 1 in the FIFO plus the lower tap).

So chain r stores (hi − lo)/k + 1 elements and the buffer D_r + k − 1 (SODA §3.2), checked by the tests.
The program's inputs are read once (``read.{field}``, k lanes); stage q's outputs are written by
``write.{field}``; streams with several consumers go through broadcasts.

Tiling (SODA §4.2, ``tiling``): with a tile size (``BuildConfig.tile``, else the program's) below an
inner dimension the grid is streamed tile by tile, every stream and reuse buffer sized for the tile
(``stream_shape``). Readers record ``tile_shape``, ``tiles`` (count per inner axis) and per inner axis
a ``tile_starts_axis{a}`` (the first grid index of each tile, halos re-read: ``points`` counts them);
writers the same plus ``owned_lo_axis{a}`` / ``owned_hi_axis{a}``, the global [lo, hi) each tile writes.
"""

from __future__ import annotations

from stencilmap.analysis.dag import Edge, Node
from stencilmap.analysis.halos import program_halo
from stencilmap.analysis.reuse import ReuseChain, reuse_buffer
from stencilmap.analysis.windows import linear_offsets
from stencilmap.design.common import (
    DEFAULT_BURST_WIDTH,
    Params,
    Sink,
    Stream,
    concrete_shape,
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
    builder = _Soda(program, plan, k)
    return builder.build("soda", parameters, notes, config.device)


class _Soda(LaneBuilder):
    unit = "stage"

    def __init__(self, program: Program, plan: TilePlan, k: int) -> None:
        super().__init__(program, live_graph(program), k, plan.stream_shape)
        self.plan = plan

    def buffer(self, prefix: str, node: Node, edge: Edge, depth: int) -> dict[int, Stream]:
        st = node.stencil
        assert st is not None
        buf = reuse_buffer(linear_offsets(self.program, st, edge.field, self.stream_shape), self.lanes)
        taps: dict[int, Stream] = {}
        for chain in buf.chains:
            where: dict[str, ParamValue] = dict(
                field=edge.field, stencil=st.name, stage=node.copy, chain=chain.residue
            )
            taps.update(self._chain(f"{prefix}.c{chain.residue}", chain, where))
            top = taps[chain.offsets[-1]].module
            self.wiring.feed(self.streams[edge.producer][chain.residue], Sink(top, depth=depth))
        return taps

    def _chain(self, prefix: str, chain: ReuseChain, where: dict[str, ParamValue]) -> dict[int, Stream]:
        """Taps (one ``forward`` each) from the highest offset down, FIFOs between distant taps."""
        k, dtype = self.lanes, self.program.field_dtype(str(where["field"]))
        taps = {}
        for x in chain.offsets:
            mod = Module(f"{prefix}.tap[{x}]", "forward", params(**where, offset=x, lanes=k, dtype=dtype))
            taps[x] = Stream(self.wiring.add(mod), "out", 1, dtype)
        for seg in reversed(chain.segments):
            src = Stream(taps[seg.hi].module, "next", 1, dtype)
            if seg.depth > 1:  # SODA §3.2: a FIFO of (hi − lo)/k elements, one of them in the lower tap
                fifo = Module(
                    f"{prefix}.fifo[{seg.lo},{seg.hi}]",
                    "fifo",
                    params(**where, depth=seg.depth - 1, lo=seg.lo, hi=seg.hi, dtype=dtype),
                )
                self.wiring.link(src, Sink(self.wiring.add(fifo)))
                src = Stream(fifo.name, "", 1, dtype)
            self.wiring.link(src, Sink(taps[seg.lo].module))
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
