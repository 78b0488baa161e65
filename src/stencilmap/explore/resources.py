"""Resources of a builder's candidates: R(q) = R(1) + (q − 1)·ΔR, from two built designs per lanes value.

SODA eq. 5 (R_AUX + k·q·R_CP + q·R_FW(k, T)) and OpenCL eq. 10 (R = d(P_cell·R_PE + R_shift) + R_base) are
affine in the number of chained stages, and so is the module sum of every builder's design (every stage
is the same modules; ``tests/explore`` checks q = 3 and 5 against built designs). So per lanes value two
designs, one and two stages, give every q.

The tile enters only through SODA's reuse chains (SODA §4.3: R_FW(k, T)): the FIFO of every chain segment
((hi − lo)/k − 1 elements, ``analysis.reuse``), the channels that feed each chain (a link plus the
analysis delay of the edge), and — when a narrow tile makes window offsets of different rows meet —
the number of taps and their fanout (one buffer per producer, ``analysis.sharing``). ``soda_chain_cost`` sums exactly those modules and channels, so a tiled
candidate costs R(untiled) − chains(untiled) + chains(tile) without being built.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.sharing import shared_buffers
from stencilmap.analysis.timing import pipeline_timing
from stencilmap.arch import arch as arch_of
from stencilmap.design.common import LINK_DEPTH, live_graph, with_iterate
from stencilmap.design.ir import Design
from stencilmap.device.catalog import Cost, Device
from stencilmap.model.resources import design_resources, forwarding_cost, storage_cost
from stencilmap.point import DesignPoint
from stencilmap.program.ir import Program

Array = npt.NDArray[Any]


def build_candidate(
    arch: str, program: Program, lanes: int, q: int, tile: tuple[int, ...] | None, device: str | None = None
) -> Design:
    """The design of one candidate (``tile`` None: untiled), built from the one-pass ``program``."""
    chained = with_iterate(program, q)
    a = arch_of(arch)
    if a.lanes_option == "vector":
        return a.build(chained, DesignPoint(vector=lanes, iterate=q, device=device))
    shape = tuple(int(n or 0) for n in program.shape)
    sizes = (tile if tile is not None else shape[1:]) if a.tiled else None
    return a.build(chained, DesignPoint(unroll=lanes, iterate=q, tile=sizes, device=device))


@dataclass
class ResourceTable:
    """R(1) and ΔR of every (lanes, tile) candidate of one builder, built on first use and kept."""

    arch: str
    program: Program  # one pass, shape-bound
    device: Device
    q_max: int
    names: tuple[str, ...] = ()
    _untiled: dict[int, tuple[Array, Array]] = field(default_factory=dict)
    _chains: dict[tuple[int, tuple[int, ...], int], Array] = field(default_factory=dict)
    builds: int = 0
    device_ref: str | None = None  # as the user named the device (PATH.json): the builders' latencies

    def __post_init__(self) -> None:
        self.names = tuple(name for name, _ in self.device.resources)

    @property
    def available(self) -> Array:
        return np.array([n for _, n in self.device.resources], dtype=np.float64)

    @property
    def limits(self) -> Array:
        model = self.device.resource_model
        assert model is not None
        return np.array([model.limit(n) for n in self.names])

    def affine(self, lanes: int, tile: tuple[int, ...]) -> tuple[Array, Array]:
        """(R(1), ΔR) of the candidate with ``lanes`` and SODA ``tile`` (its untiled sizes: untiled)."""
        one, delta = self._reference(lanes)
        shape = tuple(int(n or 0) for n in self.program.shape)
        if not arch_of(self.arch).tiled or tile == shape[1:]:
            return one, delta
        c1 = self._chain(lanes, tile, 1) - self._chain(lanes, shape[1:], 1)
        if self.q_max == 1:
            return one + c1, delta
        c2 = self._chain(lanes, tile, 2) - self._chain(lanes, shape[1:], 2)
        return one + c1, delta + (c2 - c1)

    def _reference(self, lanes: int) -> tuple[Array, Array]:
        if lanes not in self._untiled:
            one = self._built(lanes, 1)
            delta = self._built(lanes, 2) - one if self.q_max > 1 else np.zeros_like(one)
            self._untiled[lanes] = (one, delta)
        return self._untiled[lanes]

    def _built(self, lanes: int, q: int) -> Array:
        ref = self.device_ref if self.device_ref is not None else self.device.name
        design = build_candidate(self.arch, program=self.program, lanes=lanes, q=q, tile=None, device=ref)
        self.builds += 1
        used = design_resources(design, with_iterate(self.program, q), self.device).used
        return self._vector(used)

    def _chain(self, lanes: int, tile: tuple[int, ...], q: int) -> Array:
        key = (lanes, tile, q)
        if key not in self._chains:
            shape = tuple(int(n or 0) for n in self.program.shape)
            stream = (shape[0], *(min(t, n) for t, n in zip(tile, shape[1:], strict=True)))
            chained = with_iterate(self.program, q)
            self._chains[key] = self._vector(soda_chain_cost(chained, stream, lanes, self.device))
        return self._chains[key]

    def _vector(self, cost: Cost) -> Array:
        return np.array([cost[n] for n in self.names], dtype=np.float64)


def soda_chain_cost(program: Program, stream_shape: tuple[int, ...], k: int, device: Device) -> Cost:
    """The tile-dependent part of a SODA design (``design.soda``): per producer, its one reuse buffer
    (``analysis.sharing``) — the k chains' feed channels, taps (with their fanout to PEs), segment FIFOs
    and links."""
    live = live_graph(program)
    timing = pipeline_timing(program, stream_shape, k, device.operator_latencies(), graph=live.graph)
    skew = 1 if k > 1 else 0  # as the builder: the lanes enter chains whose tops are a beat apart
    acc: dict[str, float] = {}

    def add(cost: Cost, times: int = 1) -> None:
        for name, n in cost.amounts:
            acc[name] = acc.get(name, 0.0) + n * times

    for buf in shared_buffers(program, live.graph, timing, stream_shape).values():
        dtype = program.field_dtype(live.graph.node(buf.producer).field)
        bits = 8 * itemsize(dtype)
        link = storage_cost(bits, LINK_DEPTH, device)
        add(storage_cost(bits, LINK_DEPTH + skew + buf.delay, device), len(buf.chains))
        feeds = Counter(buf.tap(r, a + j) for r in buf.readers for a in r.offsets for j in range(k))
        for chain in buf.chains:
            for tap in chain.taps:
                fanout = feeds[tap] + (tap != chain.taps[0])  # every tap but the lowest: ``next``
                add(forwarding_cost("forward", fanout, dtype, 0, 1, device))
                add(link, feeds[tap])
            for _, _, beats in chain.segments:
                if beats > 1:
                    add(forwarding_cost("fifo", 1, dtype, beats - 1, 1, device))
                    add(link, 2)
                else:
                    add(link)
    return Cost.of(acc)
