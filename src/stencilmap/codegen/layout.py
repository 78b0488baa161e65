"""What every emitter reads off a Design IR: the token model, tile placement, port order, names.

The token model is the simulator's (``design.lanes``, ``design.pipeline``): every stream visits the
points of one tile of ``stream_shape`` in C order, ``lanes`` elements per beat (k lanes of width 1 for
SODA and the PCM, one W-wide channel for StencilFlow), padded to ``tokens = ⌈N / lanes⌉`` beats per tile;
a whole run streams ``tiles`` tiles. A module's channels are ordered as the simulator orders them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from math import ceil, prod

from stencilmap.design.ir import Channel, Design, Module
from stencilmap.errors import StencilmapError
from stencilmap.names import identifier
from stencilmap.program.ir import Program

_LANE = re.compile(r"^(?:lane|tap|o)(-?\d+)$")
#: Design parameter holding each microarchitecture's lanes (points per beat).
LANES = {"soda": "k", "pcm": "P_cell", "stencilflow": "W"}

Box = tuple[tuple[int, int], ...]


def port_key(port: str) -> int:
    m = _LANE.match(port)
    return int(m.group(1)) if m else 0


@dataclass(frozen=True, slots=True)
class Layout:
    """A design with its program: shapes, tiles, the modules in dataflow order and their names."""

    design: Design
    program: Program
    shape: tuple[int, ...]
    stream_shape: tuple[int, ...]
    lanes: int
    tiles: tuple[Box, ...]  # input boxes of every tile, streaming order

    @property
    def points(self) -> int:
        """N: points of one tile's stream."""
        return prod(self.stream_shape)

    @property
    def tokens(self) -> int:
        """Beats per tile on every stream."""
        return ceil(self.points / self.lanes)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def order(self) -> tuple[Module, ...]:
        """Modules in a topological order of the channels (design order among the ready ones)."""
        indeg = {m.name: 0 for m in self.design.modules}
        for c in self.design.channels:
            indeg[c.dst] += 1
        done: list[Module] = []
        ready = [m for m in self.design.modules if indeg[m.name] == 0]
        position = {m.name: i for i, m in enumerate(self.design.modules)}
        while ready:
            ready.sort(key=lambda m: position[m.name])
            m = ready.pop(0)
            done.append(m)
            for c in self.design.outputs_of(m.name):
                indeg[c.dst] -= 1
                if indeg[c.dst] == 0:
                    ready.append(self.design.module(c.dst))
        if len(done) != len(self.design.modules):
            raise StencilmapError(f"design {self.design.name} has a cycle of channels: no dataflow order")
        return tuple(done)

    def names(self) -> dict[str, str]:
        """A unique C identifier per module (stable: suffixes follow design order)."""
        out: dict[str, str] = {}
        used: set[str] = set()
        for m in self.design.modules:
            base = identifier(m.name)
            name, n = base, 1
            while name in used:
                n += 1
                name = f"{base}_{n}"
            used.add(name)
            out[m.name] = name
        return out

    def ins(self, m: Module) -> list[Channel]:
        """Input channels in the order the module pops them (PEs: the ``inputs`` port order)."""
        chans = list(self.design.inputs_of(m.name))
        if m.kind == "pe":
            ports = m.param("inputs", ())
            assert isinstance(ports, tuple)
            by_port = {c.dst_port: c for c in chans}
            return [by_port[str(p)] for p in ports]
        return sorted(chans, key=lambda c: port_key(c.dst_port))

    def outs(self, m: Module) -> list[Channel]:
        """Output channels in push order (a tap's ``next`` last)."""
        chans = sorted(self.design.outputs_of(m.name), key=lambda c: port_key(c.src_port))
        return [c for c in chans if c.src_port != "next"] + [c for c in chans if c.src_port == "next"]

    def tile_boxes(self, m: Module) -> tuple[Box, ...]:
        return _boxes(m, self.shape) or self.tiles

    def owned_boxes(self, m: Module) -> tuple[Box, ...]:
        """Global [lo, hi) per axis of the points each tile writes (``design.tiling``)."""
        lo_hi = [(m.param(f"owned_lo_axis{a}"), m.param(f"owned_hi_axis{a}")) for a in range(1, self.rank)]
        if any(not isinstance(lo, tuple) or not isinstance(hi, tuple) for lo, hi in lo_hi):
            return self.tile_boxes(m)
        boxes = []
        for index in product(*(range(len(lo)) for lo, _ in lo_hi)):  # type: ignore[arg-type]
            box = [(0, self.shape[0])]
            for a, t in enumerate(index):
                lo, hi = lo_hi[a]
                assert isinstance(lo, tuple) and isinstance(hi, tuple)
                box.append((int(lo[t]), int(hi[t])))
            boxes.append(tuple(box))
        return tuple(boxes)

    def window(self, m: Module) -> tuple[list[int], int]:
        """A window buffer's relative address per output channel (``outs`` order) and its size."""
        outs = self.outs(m)
        p = sum(c.width for c in self.ins(m))
        if m.kind == "shift_register":
            rel = [int(c.src_port[3:]) for c in outs]
        else:
            ports, taps = m.param("ports", ()), m.param("taps", ())
            assert isinstance(ports, tuple) and isinstance(taps, tuple)
            offsets = {str(pn): int(str(t)) for pn, t in zip(ports, taps, strict=True)}
            rel = [offsets[c.src_port] for c in outs]
        x_min = min(rel) if rel else 0
        x_hi = max(x + c.width for x, c in zip(rel, outs, strict=True)) if rel else p
        declared = m.param("size", 0)
        size = max(int(declared) if isinstance(declared, int) else 0, x_hi - x_min - 1 + p)
        return rel, size


def _boxes(m: Module, shape: tuple[int, ...]) -> tuple[Box, ...]:
    tile_shape = m.param("tile_shape")
    if not isinstance(tile_shape, tuple):
        return ()
    starts = [m.param(f"tile_starts_axis{a}", (0,)) for a in range(1, len(shape))]
    boxes = []
    for index in product(*(range(len(s)) for s in starts if isinstance(s, tuple))):
        box = [(0, shape[0])]
        for a, t in enumerate(index, start=1):
            s = starts[a - 1]
            assert isinstance(s, tuple)
            box.append((int(s[t]), int(s[t]) + int(tile_shape[a])))
        boxes.append(tuple(box))
    return tuple(boxes)


def layout(design: Design, program: Program) -> Layout:
    """The layout of ``design`` built from the shape-bound ``program``."""
    params = dict(design.parameters)
    shape = tuple(int(n or 0) for n in program.shape)
    stream = params.get("stream_shape", shape)
    stream_shape = tuple(int(n) for n in stream) if isinstance(stream, tuple) else shape
    lanes = params.get(LANES.get(design.arch, ""), 1)
    readers = [m for m in design.modules if m.kind == "reader"]
    tiles = (_boxes(readers[0], shape) if readers else ()) or (tuple((0, n) for n in shape),)
    return Layout(design, program, shape, stream_shape, int(lanes) if isinstance(lanes, int) else 1, tiles)
