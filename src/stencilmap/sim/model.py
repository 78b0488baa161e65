"""Lowering a Design IR (plus its program and input values) to the flat arrays the engine runs on.

Streams follow the token model of ``design.lanes`` / ``design.pipeline``: every stream visits the points
of one tile in C order, P elements per beat, padded to whole beats; readers and writers are given the
element order of their whole stream (tile after tile) up front.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil, prod
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.design.common import memory_bank, port_name
from stencilmap.design.ir import Channel, Design, Module
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program
from stencilmap.sim import memory as K
from stencilmap.sim.bytecode import POINT_TEMPS, compile_stencil, round_value

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
_RATE_ONE = 1 << 20  # a network link's rate in fixed point: beats per cycle times this
_LANE = re.compile(r"^(?:lane|tap|o)(-?\d+)$")


@dataclass
class SimModel:
    """The engine's arrays (mutable simulation state included) and how to read results back."""

    design: Design
    program: Program
    arrays: dict[str, Any]
    module_names: tuple[str, ...]
    channel_names: tuple[str, ...]
    outputs: dict[str, tuple[int, tuple[int, ...], str]]  # field -> (base in output buffer, shape, dtype)
    readers: dict[str, int]  # field -> module index
    writers: dict[str, int]
    points: int  # output points written (all outputs)


def _port_key(port: str) -> int:
    m = _LANE.match(port)
    return int(m.group(1)) if m else 0


def _stream_shape(design: Design, program: Program) -> tuple[int, ...]:
    for key, value in design.parameters:
        if key == "stream_shape" and isinstance(value, tuple):
            return tuple(int(v) for v in value)
    return tuple(int(n or 0) for n in program.shape)


def _tiles(m: Module, program: Program) -> list[tuple[tuple[int, int], ...]]:
    """Global [lo, hi) boxes of the tiles a reader/writer streams, in streaming order."""
    shape = tuple(int(n or 0) for n in program.shape)
    tile_shape = m.param("tile_shape")
    if not isinstance(tile_shape, tuple):
        return [tuple((0, n) for n in shape)]
    starts = [m.param(f"tile_starts_axis{a}", (0,)) for a in range(1, len(shape))]
    boxes: list[tuple[tuple[int, int], ...]] = []
    for index in np.ndindex(*(len(s) for s in starts if isinstance(s, tuple))):
        box = [(0, shape[0])]
        for a, t in enumerate(index, start=1):
            s = starts[a - 1]
            assert isinstance(s, tuple)
            box.append((int(s[t]), int(s[t]) + int(tile_shape[a])))
        boxes.append(tuple(box))
    return boxes


def _owned(m: Module, program: Program) -> list[tuple[tuple[int, int], ...]]:
    shape = tuple(int(n or 0) for n in program.shape)
    lo_hi = [(m.param(f"owned_lo_axis{a}"), m.param(f"owned_hi_axis{a}")) for a in range(1, len(shape))]
    if any(lo is None for lo, _ in lo_hi):
        return _tiles(m, program)
    counts = [len(lo) for lo, _ in lo_hi if isinstance(lo, tuple)]
    boxes = []
    for index in np.ndindex(*counts):
        box = [(0, shape[0])]
        for a, t in enumerate(index):
            lo, hi = lo_hi[a]
            assert isinstance(lo, tuple) and isinstance(hi, tuple)
            box.append((int(lo[t]), int(hi[t])))
        boxes.append(tuple(box))
    return boxes


def _padded(flat: npt.NDArray[Any], beat: int, fill: float) -> npt.NDArray[Any]:
    n = ceil(len(flat) / beat) * beat if len(flat) else beat
    out = np.full(n, fill, dtype=flat.dtype)
    out[: len(flat)] = flat
    return out


class _Builder:
    def __init__(
        self,
        design: Design,
        program: Program,
        values: Mapping[str, npt.NDArray[Any]],
        bytes_per_cycle_per_bank: float | None,
    ) -> None:
        self.design, self.program, self.values = design, program, values
        self.bw = bytes_per_cycle_per_bank
        self.shape = tuple(int(n or 0) for n in program.shape)
        self.stream_shape = _stream_shape(design, program)
        self.mods = design.modules
        self.index = {m.name: i for i, m in enumerate(self.mods)}
        self.chans = design.channels
        self.cindex = {c.name: i for i, c in enumerate(self.chans)}
        n = len(self.mods)
        self.kind = np.zeros(n, np.int64)
        self.ip = np.zeros((n, 8), np.int64)
        self.pe_ex = np.zeros((n, 8), np.int64)
        self.pe_pres = np.zeros((n, 8), np.int64)  # border preserve: on, centre port, box lo[3], hi[3]
        self.pe_in = np.zeros((n, 6), np.int64)  # interior where every port is in bounds: lo[3], hi[3]
        self.pe_at = np.zeros((n, 4), np.int64)  # PEs' first firing: index in the tile 0, point of the lane
        self._out_x: dict[int, list[int]] = {}  # window buffers: relative address of each output
        self._pe_ins: dict[int, list[int]] = {}  # PEs: input channels in port order
        self.fp = np.zeros((n, 2), np.float64)
        self.mem_base = np.zeros(n, np.int64)
        self.mem_size = 0
        self.pipe_size = 0
        self.streams: list[npt.NDArray[np.float64]] = []
        self.stream_len = 0
        self.dests: list[npt.NDArray[np.int64]] = []
        self.dest_len = 0
        self.outputs: dict[str, tuple[int, tuple[int, ...], str]] = {}
        self.out_len = 0
        self.code: list[npt.NDArray[np.int64]] = []
        self.code_len = 0
        self.consts: list[npt.NDArray[np.float64]] = []
        self.const_len = 0
        self.pinfo: list[list[int]] = []
        self.pval: list[float] = []
        self.banks: set[int] = set()
        self.max_ports = 1
        self.max_width = 1
        self.max_code = 1
        self.max_temps = 1
        self.readers: dict[str, int] = {}
        self.writers: dict[str, int] = {}

    def ins(self, m: Module) -> list[Channel]:
        return sorted(self.design.inputs_of(m.name), key=lambda c: _port_key(c.dst_port))

    def outs(self, m: Module) -> list[Channel]:
        return sorted(self.design.outputs_of(m.name), key=lambda c: _port_key(c.src_port))

    def alloc(self, i: int, size: int) -> None:
        self.mem_base[i] = self.mem_size
        self.mem_size += max(1, size)

    def build(self) -> SimModel:
        handlers = {
            "reader": self.reader,
            "writer": self.writer,
            "broadcast": self.bcast,
            "fifo": self.fifo,
            "delay": self.fifo,
            "forward": self.tap,
            "internal_buffer": self.window,
            "shift_register": self.window,
            "pe": self.pe,
            "network": self.network,
        }
        for i, m in enumerate(self.mods):
            handlers[m.kind](i, m)
        return self.finish()

    # ---------------------------------------------------------------------------------- memory ports

    def _bank(self, m: Module) -> int:
        if self.bw is None:
            return -1
        bank = memory_bank(m)
        self.banks.add(bank)
        return bank

    def reader(self, i: int, m: Module) -> None:
        name = str(m.param("field"))
        inp = self.program.input(name)
        assert inp is not None
        arr = np.asarray(self.values[name], dtype=np.float64)
        full = [1] * len(self.shape)
        for a, n in zip(inp.axes, arr.shape, strict=True):
            full[a] = n
        grid = np.broadcast_to(arr.reshape(full), self.shape)
        beat = sum(c.width for c in self.outs(m))
        parts = []
        for box in _tiles(m, self.program):
            tile = grid[tuple(slice(lo, hi) for lo, hi in box)]
            parts.append(_padded(np.ascontiguousarray(tile).ravel(), beat, 0.0))
        stream = np.concatenate(parts)
        self.kind[i] = K.K_READER
        self.ip[i, :4] = (self.stream_len, len(stream), beat, self._bank(m))
        points = int(m.param("points", arr.size) or arr.size)  # type: ignore[arg-type]
        self.fp[i, 0] = np.dtype(inp.dtype).itemsize * points / max(1, len(stream))
        self.streams.append(stream)
        self.stream_len += len(stream)
        self.readers[name] = i

    def writer(self, i: int, m: Module) -> None:
        name = str(m.param("field"))
        dtype = self.program.field_dtype(name)
        base = self.out_len
        self.outputs[name] = (base, self.shape, dtype)
        self.out_len += prod(self.shape)
        flat_index = np.arange(prod(self.shape), dtype=np.int64).reshape(self.shape) + base
        beat = sum(c.width for c in self.ins(m))
        parts = []
        for box, own in zip(_tiles(m, self.program), _owned(m, self.program), strict=True):
            idx = flat_index[tuple(slice(lo, hi) for lo, hi in box)].copy()
            keep = np.zeros(idx.shape, bool)
            keep[tuple(slice(olo - lo, ohi - lo) for (lo, _), (olo, ohi) in zip(box, own, strict=True))] = (
                True
            )
            idx[~keep] = -1
            parts.append(_padded(idx.ravel(), beat, -1))
        dest = np.concatenate(parts)
        self.kind[i] = K.K_WRITER
        self.ip[i, :4] = (self.dest_len, len(dest), beat, self._bank(m))
        self.fp[i, 0] = np.dtype(dtype).itemsize
        self.dests.append(dest)
        self.dest_len += len(dest)
        self.writers[name] = i

    # ------------------------------------------------------------------------------------------ plumbing

    def bcast(self, i: int, m: Module) -> None:
        self.kind[i] = K.K_BCAST

    def fifo(self, i: int, m: Module) -> None:
        width = self.ins(m)[0].width
        depth = int(m.param("depth", 1) or 1)  # type: ignore[arg-type]
        beats = max(1, ceil(depth / width)) if m.kind == "delay" else max(1, depth)
        self.kind[i] = K.K_FIFO
        self.ip[i, :2] = (beats, width)
        self.alloc(i, beats * width)

    def network(self, i: int, m: Module) -> None:
        """A link between devices: ``latency`` cycles, ``rate`` beats a cycle, ``depth`` beats in flight."""
        width = self.ins(m)[0].width
        depth = max(1, int(m.param("depth", 1) or 1))  # type: ignore[arg-type]
        rate = float(m.param("rate", 1.0) or 1.0)  # type: ignore[arg-type]
        self.kind[i] = K.K_NET
        self.ip[i, :6] = (depth, width, max(1, m.latency), round(rate * _RATE_ONE), _RATE_ONE, self.pipe_size)
        self.pipe_size += depth
        self.alloc(i, depth * width)

    def _tokens_per_tile(self, lanes: int) -> int:
        return ceil(prod(self.stream_shape) / lanes)

    def _tiles_total(self) -> int:
        for key, value in self.design.parameters:
            if key == "tiles_total" and isinstance(value, int):
                return value
        return 1

    def tap(self, i: int, m: Module) -> None:
        x = int(m.param("offset", 0) or 0)  # type: ignore[arg-type]
        k = int(m.param("lanes", 1) or 1)  # type: ignore[arg-type]
        r = x % k
        outs = {c.src_port: self.cindex[c.name] for c in self.design.outputs_of(m.name)}
        self.kind[i] = K.K_TAP
        self.ip[i, :5] = (
            (x - r) // k,
            self._tokens_per_tile(k),
            -1,
            outs.get("next", -1),
            self._tiles_total(),
        )

    def window(self, i: int, m: Module) -> None:
        ins, outs = self.ins(m), self.design.outputs_of(m.name)
        p = sum(c.width for c in ins)
        if m.kind == "shift_register":  # output port ``tap{x}`` carries relative address x
            rel = [int(c.src_port[3:]) for c in outs]
        else:  # internal buffer: output port ``f@(a)`` carries the linear offset listed in ``taps``
            ports, taps = m.param("ports", ()), m.param("taps", ())
            assert isinstance(ports, tuple) and isinstance(taps, tuple)
            offsets = {str(pn): int(str(t)) for pn, t in zip(ports, taps, strict=True)}
            rel = [offsets[c.src_port] for c in outs]
        widths = [c.width for c in outs]
        x_min = min(rel) if rel else 0
        x_hi = max(x + w for x, w in zip(rel, widths, strict=True)) if rel else p
        size = max(int(m.param("size", 0) or 0), x_hi - x_min - 1 + p)  # type: ignore[arg-type]
        v = self._tokens_per_tile(p)
        self.kind[i] = K.K_WINDOW
        self.ip[i, :8] = (p, v, size, x_min, x_hi, v * p, size, self._tiles_total())
        self.alloc(i, size)
        self._out_x[i] = rel

    # ------------------------------------------------------------------------------------------------ PE

    def pe(self, i: int, m: Module) -> None:
        st = self.program.stencil(str(m.param("stencil")))
        assert st is not None
        ports = m.param("inputs", ())
        assert isinstance(ports, tuple)
        ports = tuple(str(p) for p in ports)
        by_port = {c.dst_port: c for c in self.design.inputs_of(m.name)}
        w = max((by_port[p].width for p in ports), default=int(m.param("width", 1) or 1))  # type: ignore[arg-type]
        lanes = int(m.param("lanes", 0) or 0) or w  # type: ignore[arg-type]
        lane = int(m.param("lane", 0) or 0)  # type: ignore[arg-type]
        bc = compile_stencil(self.program, st, ports, dict(self.values))
        lat = max(1, m.latency)
        self.kind[i] = K.K_PE
        self.ip[i] = (
            self.code_len,
            self.code_len + len(bc.code),
            self.const_len,
            len(self.pinfo),
            len(ports),
            lat,
            lane,
            w,
        )
        s = (1,) * (3 - len(self.stream_shape)) + self.stream_shape
        s1, s2 = max(1, s[1]), max(1, s[2])
        self.pe_at[i] = (0, lane // (s2 * s1), (lane // s2) % s1, lane % s2)
        self.pe_ex[i] = (
            lanes,
            self._tokens_per_tile(lanes),
            prod(self.stream_shape),
            s[0],
            s[1],
            s[2],
            self._tiles_total(),
            self.pipe_size,
        )
        self.pipe_size += lat
        self.alloc(i, lat * w)
        self.code.append(bc.code)
        self.code_len += len(bc.code)
        self.consts.append(bc.consts)
        self.const_len += len(bc.consts)
        self.max_code = max(self.max_code, len(bc.code))
        self.max_temps = max(self.max_temps, bc.n_temps)
        self.max_ports = max(self.max_ports, len(ports))
        self.max_width = max(self.max_width, w)
        centre = {p: n for n, p in enumerate(ports)}
        rank = len(self.shape)
        for p in ports:
            field_name, _, off_text = p.partition("@")
            offset = tuple(int(t) for t in off_text.strip("()").split(",") if t)
            full = [0] * 3
            for a, o in zip(self.program.field_axes(field_name), offset, strict=True):
                full[3 - rank + a] = o
            b = st.boundary_of(field_name)
            kind = {"constant": 0, "copy": 1, "shrink": 2}[b.kind]
            zero = port_name(field_name, (0,) * len(offset))
            if kind == 1 and zero not in centre:
                raise StencilmapError(
                    f"PE '{m.name}' has a copy boundary on '{field_name}' but no centre port"
                )
            self.pinfo.append([*full, kind, centre.get(zero, 0), 0])
            self.pval.append(round_value(b.value, self.program.field_dtype(field_name)))
        offsets = np.array([row[:3] for row in self.pinfo[len(self.pinfo) - len(ports) :]] or [[0, 0, 0]])
        self.pe_in[i] = (*np.maximum(0, -offsets.min(axis=0)), *np.maximum(0, offsets.max(axis=0)))
        self._preserve(i, m, st.name, ports)
        # ports are popped in the order of the ``inputs`` parameter
        self._pe_ins[i] = [self.cindex[by_port[p].name] for p in ports]

    # ----------------------------------------------------------------------------------------------- all

    def _preserve(self, i: int, m: Module, stencil: str, ports: tuple[str, ...]) -> None:
        """``border: preserve``: the PE of output i keeps the value of input i where its pass's window
        leaves the grid (outside the box shrunk by the pass's accumulated halo)."""
        p = self.program
        paired_name = next((inp for inp, out in p.feeds() if out == stencil), None)
        if p.border != "preserve" or paired_name is None:
            return
        from stencilmap.analysis.halos import defined_halo

        halo = defined_halo(p, stencil)
        if halo is None:
            raise StencilmapError(
                "simulating border: preserve is not supported where a constant or copy boundary reads, away "
                "from the point, a field not defined everywhere (the kept region is not a box)"
            )
        paired = p.input(paired_name)
        assert paired is not None  # verify: a feedback pair names an input
        centre = port_name(paired.name, (0,) * len(paired.axes))
        if centre not in ports:  # the design taps the centre of a kept input it reads (``access_sets``)
            raise StencilmapError(
                f"border: preserve needs output '{stencil}' to read input '{paired.name}' "
                "(the simulator keeps that input's values at the border)"
            )
        rank = len(self.shape)
        lo = [0, 0, 0]
        hi = [0, 0, 0]
        for a in range(rank):
            lo[3 - rank + a] = halo.low[a]
            hi[3 - rank + a] = halo.high[a]
        self.pe_pres[i] = (1, ports.index(centre), *lo, *hi)

    def _groups(self) -> tuple[I64, I64, I64]:
        """PE lanes of one stencil copy (same stage and stencil) fire together; the first is the leader."""
        n = len(self.mods)
        members: dict[tuple[object, object], list[int]] = {}
        for i, m in enumerate(self.mods):
            if m.kind == "pe":
                members.setdefault((m.param("stage"), m.param("stencil")), []).append(i)
        group = np.full(n, -1, np.int64)
        ptr = np.zeros(n + 1, np.int64)
        flat: list[int] = []
        leaders = {lanes[0]: lanes for lanes in members.values()}
        for i in range(n):
            if i in leaders:
                flat.extend(leaders[i])
            ptr[i + 1] = len(flat)
        for lanes in members.values():
            group[lanes] = lanes[0]
        return group, ptr, np.array(flat or [0], np.int64)

    def finish(self) -> SimModel:
        n_mod, n_ch = len(self.mods), len(self.chans)
        in_ptr, out_ptr = np.zeros(n_mod + 1, np.int64), np.zeros(n_mod + 1, np.int64)
        in_ch: list[int] = []
        out_ch: list[int] = []
        out_x: list[int] = []
        for i, m in enumerate(self.mods):
            ins = self._pe_ins.get(i) or [self.cindex[c.name] for c in self.ins(m)]
            in_ch.extend(ins)
            in_ptr[i + 1] = len(in_ch)
            outs = self.outs(m)
            if m.kind == "forward":  # a tap's ``next`` is separate; every other channel carries ``out``
                outs = [c for c in outs if c.src_port != "next"]
            out_ch.extend(self.cindex[c.name] for c in outs)
            if m.kind in ("internal_buffer", "shift_register"):
                by_name = dict(
                    zip((c.name for c in self.design.outputs_of(m.name)), self._out_x[i], strict=True)
                )
                out_x.extend(by_name[c.name] for c in outs)
            else:
                out_x.extend(0 for _ in outs)
            out_ptr[i + 1] = len(out_ch)
        group, grp_ptr, grp = self._groups()
        cap = np.array([c.depth for c in self.chans], np.int64)
        width = np.array([c.width for c in self.chans], np.int64)
        base = np.zeros(n_ch, np.int64)
        if n_ch:
            base[1:] = np.cumsum(cap * width)[:-1]
        banks = max(self.banks) + 1 if self.banks else 1
        rate = np.full(banks, float(self.bw) if self.bw is not None else np.inf, np.float64)
        max_beat = max(
            [
                1.0,
                *(
                    self.fp[i, 0] * self.ip[i, 2]
                    for i in range(n_mod)
                    if self.kind[i] in (K.K_READER, K.K_WRITER)
                ),
            ]
        )
        credit_cap = np.maximum(rate, max_beat) * 2 if self.bw is not None else np.full(banks, np.inf)
        scratch_len = max(64, (self.max_ports + 1) * self.max_width * 2, *(c.width for c in self.chans), 1)
        scratch_len = max(
            scratch_len,
            max(
                (int(self.ip[i, 2]) for i in range(n_mod) if self.kind[i] in (K.K_READER, K.K_WRITER)),
                default=1,
            )
            + 1,
        )
        arrays: dict[str, Any] = dict(
            kind=self.kind,
            ip=self.ip,
            pe_ex=self.pe_ex,
            pe_pres=self.pe_pres,
            pe_in=self.pe_in,
            pe_at=self.pe_at,
            st=np.zeros((n_mod, 4), np.int64),
            fp=self.fp,
            in_ptr=in_ptr,
            in_ch=np.array(in_ch, np.int64),
            out_ptr=out_ptr,
            out_ch=np.array(out_ch, np.int64),
            out_x=np.array(out_x, np.int64),
            cap=cap,
            width=width,
            count=np.zeros(n_ch, np.int64),
            head=np.zeros(n_ch, np.int64),
            base=base,
            push_at=np.full(n_ch, -1, np.int64),
            pop_at=np.full(n_ch, -1, np.int64),
            peak=np.zeros(n_ch, np.int64),
            store=np.zeros(int((cap * width).sum()) + 1, np.float64),
            mem=np.zeros(self.mem_size + 1, np.float64),
            mem_base=self.mem_base,
            pipe_t=np.zeros(self.pipe_size + 1, np.int64),
            streams=np.concatenate(self.streams) if self.streams else np.zeros(1),
            dest=np.concatenate(self.dests) if self.dests else np.zeros(1, np.int64),
            output=np.zeros(self.out_len + 1, np.float64),
            credit=rate.copy() if self.bw is not None else np.full(banks, np.inf),
            rate=rate,
            credit_cap=credit_cap,
            moved=np.zeros(n_mod, np.float64),
            code=np.concatenate(self.code) if self.code else np.zeros((1, 3), np.int64),
            consts=np.concatenate(self.consts) if self.consts else np.zeros(1),
            pinfo=np.array(self.pinfo, np.int64).reshape(-1, 6) if self.pinfo else np.zeros((1, 6), np.int64),
            pval=np.array(self.pval or [0.0], np.float64),
            busy=np.zeros(n_mod, np.int64),
            starved=np.zeros(n_mod, np.int64),
            blocked=np.zeros(n_mod, np.int64),
            group=group,
            grp_ptr=grp_ptr,
            grp=grp,
            fire_state=np.zeros(n_mod, np.int64),
            scratch=np.zeros(scratch_len, np.float64),
            stack=np.zeros(self.max_code + 8, np.float64),
            temps=np.zeros(max(self.max_temps + 1, POINT_TEMPS), np.float64),
        )
        return SimModel(
            self.design,
            self.program,
            arrays,
            tuple(m.name for m in self.mods),
            tuple(c.name for c in self.chans),
            self.outputs,
            self.readers,
            self.writers,
            self.out_len,
        )


def lower(
    design: Design,
    program: Program,
    values: Mapping[str, npt.NDArray[Any]],
    bytes_per_cycle_per_bank: float | None = None,
) -> SimModel:
    """The engine model of a design built from ``program`` (shape-bound), fed with input ``values``."""
    b = _Builder(design, program, values, bytes_per_cycle_per_bank)
    return b.build()
