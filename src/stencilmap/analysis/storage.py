"""On-chip storage of a SODA design's streams, three ways: reuse buffers and delay lines, in elements.

* ``per_reader_storage``: one reuse buffer per (reader, field), D_r + k − 1 each (SODA §3.2), plus the
  delay line of every DAG edge (``delays``, StencilFlow §IV-B) — what the SODA builder built before it
  shared buffers per producer;
* ``shared_storage``: one buffer per producer (``sharing``), its readers placed by the latency-aware
  schedule: the chains (taps and FIFOs) and the delay in front of them;
* ``soda_method_storage``: the SODA paper's method as sodac applies it: one buffer per producer over the
  union of its readers' windows, shifted by production offsets chosen by the same integer program but in
  stream offsets only (every PE latency 0, as the paper's §3 and sodac's schedule model it), D_r + k − 1
  over that union; the PE latencies then need delay FIFOs, counted at their minimum: the storage the
  latency-aware schedule needs beyond those buffers (0 for a kernel whose readers all run in step).
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.dag import PassGraph
from stencilmap.analysis.delays import delay_buffers
from stencilmap.analysis.sharing import SharedBuffer, shared_buffers
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.analysis.windows import linear_offsets, reuse_distance
from stencilmap.program.ir import Program


@dataclass(frozen=True, slots=True)
class Storage:
    """Elements held in reuse buffers and in delay lines."""

    reuse: int
    delay: int

    @property
    def total(self) -> int:
        return self.reuse + self.delay


def per_reader_storage(program: Program, graph: PassGraph, shape: tuple[int, ...], k: int) -> Storage:
    """One buffer per (reader, field) plus a delay line per edge (the former SODA builder)."""
    delays = delay_buffers(pipeline_timing(program, shape, k))
    reuse = delay = 0
    for e in graph.edges:
        stencil = graph.node(e.consumer).stencil
        assert stencil is not None
        reuse += reuse_distance(linear_offsets(program, stencil, e.field, shape)) + k - 1  # SODA §3.2
        delay += delays.get(e.key, 0)
    return Storage(reuse, delay)


def shared_storage(program: Program, graph: PassGraph, shape: tuple[int, ...], k: int) -> Storage:
    """One buffer per producer, readers placed by the latency-aware schedule (what the builder builds)."""
    return _storage(_buffers(program, graph, shape, k, latency_free=False))


def soda_method_storage(program: Program, graph: PassGraph, shape: tuple[int, ...], k: int) -> Storage:
    """The paper's method: buffers over the union scheduled in stream offsets, delay FIFOs for latencies."""
    reuse = _storage(_buffers(program, graph, shape, k, latency_free=True)).reuse
    return Storage(reuse, max(0, shared_storage(program, graph, shape, k).total - reuse))


def _buffers(
    program: Program, graph: PassGraph, shape: tuple[int, ...], k: int, latency_free: bool
) -> dict[str, SharedBuffer]:
    timing = pipeline_timing(program, shape, k, graph=graph)
    return shared_buffers(program, graph, timing, shape, latency_free=latency_free)


def _storage(buffers: dict[str, SharedBuffer]) -> Storage:
    return Storage(sum(b.size for b in buffers.values()), sum(b.k * b.delay for b in buffers.values()))
