"""The module bodies of a design as C++ functions over ``hls::stream`` (SODA §3.4; StencilFlow §IV).

Each function handles one Design IR module for the whole run (every tile), one beat per iteration of a
loop pipelined at II = 1, so the sequence of values on every channel is the simulator's token model
(``layout``). Emitted by ``hls`` (the Vitis kernel) and reused by the OpenCL channel emulation.
"""

from __future__ import annotations

from math import ceil, prod

from stencilmap.codegen.boundary import inside, port_reads, preserve_box
from stencilmap.codegen.ctypes_ import Dialect, bits, ctype, literal
from stencilmap.codegen.expr import ExprEmitter
from stencilmap.codegen.layout import Layout
from stencilmap.codegen.writer import Writer
from stencilmap.design.ir import Channel, Module
from stencilmap.names import comment
from stencilmap.program.ir import Program


def stream_type(c: Channel) -> str:
    t = ctype(c.dtype)
    return f"sm_vec<{t}, {c.width}>" if c.width > 1 else t


def fifo_storage(m: Module, c: Channel) -> int:
    """Beats a FIFO segment or delay buffer holds (its storage lives in its input channel's depth)."""
    depth = int(str(m.param("depth", 1)))
    return ceil(depth / c.width) if m.kind == "delay" else depth


def _table(values: list[list[int]]) -> str:
    return "{" + ", ".join("{" + ", ".join(str(v) for v in row) + "}" for row in values) + "}"


def _strides(shape: tuple[int, ...]) -> list[int]:
    return [prod(shape[a + 1 :]) for a in range(len(shape))]


def coords(w: Writer, index: str, shape: tuple[int, ...], name: str = "c", rows: bool = False) -> None:
    """``const long c{a} = …;``: the C-order coordinates of linear ``index`` over ``shape``; with ``rows``
    (a runtime number of rows, ``index`` below it times the inner points) the first is a quotient alone."""
    for a, (n, s) in enumerate(zip(shape, _strides(shape), strict=True)):
        w.line(
            f"const long {name}{a} = {index} / {s}L;"
            if rows and a == 0
            else f"const long {name}{a} = ({index} / {s}L) % {n}L;"
        )


class ModuleEmitter:
    """Emits ``void name(args) { … }`` for one module; ``args`` are its channels (and a memory port).

    With ``rows`` (HLS) every function also takes ``const long rows``, the number of rows of the grid (the
    outermost, streamed axis: SODA §4.5, "T_{m-1} is determined by the input and is a runtime
    parameter"); the inner axes stay the generation's (they size the reuse buffers) and every trip count
    that depended on the rows is an expression of the argument (``sm_points``, ``sm_tokens``: ``hls``),
    each such loop carrying the generation's count as its ``loop_tripcount`` hint. Without it the rows
    are the generation's constant (the OpenCL kernels)."""

    def __init__(
        self, lay: Layout, exprs: ExprEmitter, burst: int, pragmas: bool = True, rows: bool = False
    ) -> None:
        self.lay, self.exprs, self.burst, self.pragmas, self.rows = lay, exprs, burst, pragmas, rows
        self.stencil_functions: dict[tuple[str, tuple[str, ...]], str] = {}
        self.names = lay.names()

    @property
    def program(self) -> Program:
        return self.lay.program

    # ---- the dialect: HLS C++ here; ``opencl_channels`` overrides these for Intel OpenCL channels

    dialect: Dialect = "cpp"

    def ct(self, dtype: str) -> str:
        return ctype(dtype, self.dialect)

    def lit(self, value: float | int | bool, dtype: str) -> str:
        return literal(value, dtype, self.dialect)

    def stype(self, c: Channel) -> str:
        return stream_type(c)

    def rd(self, n: int) -> str:
        """Reading the module's input channel ``n``."""
        return f"in{n}.read()"

    def wr(self, n: int, value: str) -> str:
        """Writing ``value`` to the module's output channel ``n``."""
        return f"out{n}.write({value})"

    def load(self, dtype: str, addr: str) -> str:
        return f"sm_load<{self.ct(dtype)}, {bits(dtype)}, {self.burst}>(mem, {addr})"

    def store(self, dtype: str, addr: str, value: str) -> str:
        """An element store (OpenCL: ``opencl_channels``); HLS writers write whole words (``word_writer``)."""
        raise NotImplementedError("HLS writers assemble whole words: word_writer")

    def table(self, name: str, rows: list[list[int]]) -> str:
        return f"static const long {name}[{len(rows)}][{len(rows[0])}] = {_table(rows)};"

    def pragma(self, w: Writer, text: str) -> None:
        if self.pragmas:
            w.pragma(f"HLS {text}")

    def unroll(self, w: Writer) -> None:
        """Before a loop over lanes or cells: unrolled. HLS unrolls every loop inside a pipelined one
        itself (UG1399, ``pipeline``), so the C++ says nothing here; Intel's compiler needs the pragma
        (``opencl_channels``: ``SM_UNROLL``, ``#pragma unroll`` under ``aoc``)."""

    def signature(self, m: Module, mem: str | None) -> str:
        args = [f"hls::stream<{stream_type(c)}>& in{n}" for n, c in enumerate(self.lay.ins(m))]
        args += [f"hls::stream<{stream_type(c)}>& out{n}" for n, c in enumerate(self.lay.outs(m))]
        if mem is not None:
            args.insert(0 if m.kind == "reader" else len(args), mem)
        if self.rows:
            args.append("const long rows")
        return f"static void {self.names[m.name]}({', '.join(args)})"

    # ---- the rows: the generation's constant, or the runtime argument (``rows``)

    def tokens(self, scale: int = 1, extra: int = 0) -> str:
        """Beats per tile (times ``scale``, plus ``extra``) as C text."""
        if not self.rows:
            return f"{self.lay.tokens * scale + extra}L"
        text = "sm_tokens(rows)" + (f" * {scale}L" if scale != 1 else "")
        return text + (f" + {extra}L" if extra else "")

    def points(self) -> str:
        """N, the points of one tile's stream, as C text."""
        return "sm_points(rows)" if self.rows else f"{self.lay.points}L"

    def sizes(self) -> tuple[str, ...]:
        """The stream's size along every axis as C text (the first ``rows`` at run time)."""
        shape = tuple(f"{n}L" for n in self.lay.stream_shape)
        return ("rows", *shape[1:]) if self.rows else shape

    def tripcount(self, w: Writer, count: int) -> None:
        """In a loop whose count is an expression of ``rows``: the generation's count as the hint."""
        if self.rows:
            self.pragma(w, f"loop_tripcount min=1 max={count} avg={count}")

    def emit(self, w: Writer, m: Module) -> None:
        w.line(f"// {comment(m.name)}: {m.kind}{self._about(m)}")
        handler = {
            "reader": self.reader,
            "writer": self.writer,
            "broadcast": self.broadcast,
            "fifo": self.copy,
            "delay": self.copy,
            "forward": self.tap,
            "internal_buffer": self.window,
            "shift_register": self.window,
            "pe": self.pe,
        }[m.kind]
        handler(w, m)
        w.line()

    def _about(self, m: Module) -> str:
        keys = ("field", "stencil", "stage", "lane", "offset", "depth", "size", "bank", "fanout")
        shown = [f"{k}={m.param(k)}" for k in keys if m.param(k) is not None]
        return f" ({', '.join(shown)})" if shown else ""

    def total(self) -> str:
        return self.tokens(len(self.lay.tiles))

    # -------------------------------------------------------------------------------- memory ports

    def mem_type(self) -> str:
        return f"ap_uint<{self.burst}>"

    def _beat_layout(self, chans: list[Channel]) -> list[tuple[int, int, int]]:
        """(channel index, first beat element, width) per channel."""
        out, at = [], 0
        for n, c in enumerate(chans):
            out.append((n, at, c.width))
            at += c.width
        return out

    def _field_address(self, field: str) -> str:
        axes = self.program.field_axes(field)
        own = tuple(self.lay.shape[a] for a in axes)
        terms = [f"g{a} * {s}L" for a, s in zip(axes, _strides(own), strict=True)]
        return " + ".join(terms) if terms else "0L"

    def reader(self, w: Writer, m: Module) -> None:
        field = str(m.param("field"))
        dtype = self.program.field_dtype(field)
        T, outs = self.ct(dtype), self.lay.outs(m)
        beat = sum(c.width for c in outs)
        boxes = self.lay.tile_boxes(m)
        mem = f"const {self.mem_type()}* mem"
        with w.block(self.signature(m, mem)):
            w.line(self.table("start", [[lo for lo, _ in b] for b in boxes]))
            with (
                w.block(f"tiles: for (int t = 0; t < {len(boxes)}; ++t)"),
                w.block(f"beats: for (long n = 0; n < {self.tokens()}; ++n)"),
            ):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, self.lay.tokens)
                w.line(f"{T} beat[{beat}];")
                self.unroll(w)
                with w.block(f"for (int e = 0; e < {beat}; ++e)"):
                    self.pragma(w, "unroll")
                    w.line(f"const long i = n * {beat}L + e;")
                    w.line(f"beat[e] = {self.lit(0, dtype)};")
                    with w.block(f"if (i < {self.points()})"):
                        coords(w, "i", self.lay.stream_shape, rows=self.rows)
                        for a in range(self.lay.rank):
                            w.line(f"const long g{a} = c{a} + start[t][{a}];")
                        w.line(f"beat[e] = {self.load(dtype, self._field_address(field))};")
                self._push_beat(w, outs, "beat")

    def _push_beat(self, w: Writer, outs: list[Channel], beat: str) -> None:
        for n, first, width in self._beat_layout(outs):
            if width == 1:
                w.line(self.wr(n, f"{beat}[{first}]") + ";")
            else:
                w.line(f"{self.stype(outs[n])} v{n};")
                self.unroll(w)
                w.line(f"for (int e = 0; e < {width}; ++e) v{n}.v[e] = {beat}[{first} + e];")
                w.line(self.wr(n, f"v{n}") + ";")

    def _pop_beat(self, w: Writer, ins: list[Channel], beat: str, T: str) -> None:
        total = sum(c.width for c in ins)
        w.line(f"{T} {beat}[{total}];")
        for n, first, width in self._beat_layout(ins):
            if width == 1:
                w.line(f"{beat}[{first}] = {self.rd(n)};")
            else:
                w.line(f"const {self.stype(ins[n])} v{n} = {self.rd(n)};")
                self.unroll(w)
                w.line(f"for (int e = 0; e < {width}; ++e) {beat}[{first} + e] = v{n}.v[e];")

    def writer(self, w: Writer, m: Module) -> None:
        """A writer: HLS assembles whole ``ap_uint<B>`` words and writes each word of the port once (the
        output ``m_axi`` port is never read, ``word_writer``); OpenCL stores element by element."""
        if self.burst:
            self.word_writer(w, m)
        else:
            self.element_writer(w, m)

    def _owned_points(self, w: Writer, m: Module, beat: int) -> None:
        """Inside the lane loop: ``continue`` past padding and points another tile owns; ``g{a}``."""
        w.line(f"const long i = n * {beat}L + e;")
        w.line(f"if (i >= {self.points()}) continue;  // padding of the last beat")
        coords(w, "i", self.lay.stream_shape, rows=self.rows)
        inside = []
        for a in range(self.lay.rank):
            w.line(f"const long g{a} = c{a} + start[t][{a}];")
            hi = "rows" if self.rows and a == 0 else f"own_hi[t][{a}]"  # tiles split the inner axes only
            inside.append(f"g{a} >= own_lo[t][{a}] && g{a} < {hi}")
        w.line(f"if (!({' && '.join(inside)})) continue;  // another tile owns this point")

    def element_writer(self, w: Writer, m: Module) -> None:
        field = str(m.param("field"))
        dtype = self.program.field_dtype(field)
        T, ins = self.ct(dtype), self.lay.ins(m)
        beat = sum(c.width for c in ins)
        boxes, owned = self.lay.tile_boxes(m), self.lay.owned_boxes(m)
        mem = f"{self.mem_type()}* mem"
        with w.block(self.signature(m, mem)):
            w.line(self.table("start", [[lo for lo, _ in b] for b in boxes]))
            w.line(self.table("own_lo", [[lo for lo, _ in b] for b in owned]))
            w.line(self.table("own_hi", [[hi for _, hi in b] for b in owned]))
            with (
                w.block(f"tiles: for (int t = 0; t < {len(boxes)}; ++t)"),
                w.block(f"beats: for (long n = 0; n < {self.tokens()}; ++n)"),
            ):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, self.lay.tokens)
                self._pop_beat(w, ins, "beat", T)
                self.unroll(w)
                with w.block(f"for (int e = 0; e < {beat}; ++e)"):
                    self.pragma(w, "unroll")
                    self._owned_points(w, m, beat)
                    w.line(self.store(dtype, self._field_address(field), "beat[e]") + ";")

    def in_order(self, m: Module) -> bool:
        """Whether the writer's stream visits every point of the field once, in address order (one
        tile, the whole grid): then words fill one after the other."""
        boxes, owned = self.lay.tile_boxes(m), self.lay.owned_boxes(m)
        whole = tuple((0, n) for n in self.lay.shape)
        return boxes == (whole,) and owned == (whole,) and self.lay.stream_shape == self.lay.shape

    def word_writer(self, w: Writer, m: Module) -> None:
        """Words assembled in registers, each written once: in address order, a word goes out when its
        last element (or the field's last) arrives; with several tiles, whose points interleave in a
        word, the words gather in an on-chip buffer of the field written out after the last tile."""
        field = str(m.param("field"))
        dtype = self.program.field_dtype(field)
        T, ins, b = self.ct(dtype), self.lay.ins(m), bits(dtype)
        beat = sum(c.width for c in ins)
        per = self.burst // b
        elements = prod(self.lay.shape)
        words = ceil(elements / per)
        word = f"{self.mem_type()}"
        put = f"sm_put<{T}, {b}, {self.burst}>"
        inner = prod(self.lay.shape[1:])
        count = f"(rows * {inner}L + {per - 1}L) / {per}L" if self.rows else f"{words}L"  # words written
        with w.block(self.signature(m, f"{self.mem_type()}* mem")):
            if self.in_order(m):
                last = f"{self.points()} - 1L" if self.rows else f"{elements - 1}L"
                w.line(f"{word} word = 0;  // the word being filled: {per} elements of {b} bits")
                with w.block(f"beats: for (long n = 0; n < {self.tokens()}; ++n)"):
                    self.pragma(w, "pipeline II=1")
                    self.tripcount(w, self.lay.tokens)
                    self._pop_beat(w, ins, "beat", T)
                    self.unroll(w)
                    with w.block(f"for (int e = 0; e < {beat}; ++e)"):
                        self.pragma(w, "unroll")
                        w.line(f"const long i = n * {beat}L + e;")
                        w.line(
                            f"if (i >= {self.points() if self.rows else f'{elements}L'}) continue;  // padding of the last beat"
                        )
                        w.line(f"{put}(word, i % {per}L, beat[e]);")
                        with w.block(f"if (i % {per}L == {per - 1}L || i == {last})"):
                            w.line(f"mem[i / {per}L] = word;  // complete: written once, never read")
                            w.line("word = 0;")
                return
            boxes, owned = self.lay.tile_boxes(m), self.lay.owned_boxes(m)
            w.line(self.table("start", [[lo for lo, _ in bx] for bx in boxes]))
            w.line(self.table("own_lo", [[lo for lo, _ in bx] for bx in owned]))
            w.line(self.table("own_hi", [[hi for _, hi in bx] for bx in owned]))
            bound = f" (at most {self.lay.shape[0]} rows)" if self.rows else ""
            w.line(
                f"static {word} words[{words}];  // the field on chip{bound}: tiles share words at their edges"
            )
            with w.block(f"clear: for (long k = 0; k < {count}; ++k)"):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, words)
                w.line("words[k] = 0;")
            with (
                w.block(f"tiles: for (int t = 0; t < {len(boxes)}; ++t)"),
                w.block(f"beats: for (long n = 0; n < {self.tokens()}; ++n)"),
            ):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, self.lay.tokens)
                self._pop_beat(w, ins, "beat", T)
                self.unroll(w)
                with w.block(f"for (int e = 0; e < {beat}; ++e)"):
                    self.pragma(w, "unroll")
                    self._owned_points(w, m, beat)
                    w.line(f"const long a = {self._field_address(field)};")
                    w.line(f"{put}(words[a / {per}L], a % {per}L, beat[e]);")
            with w.block(f"flush: for (long k = 0; k < {count}; ++k)"):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, words)
                w.line("mem[k] = words[k];  // each word written once, never read")

    # ------------------------------------------------------------------------------------ plumbing

    def broadcast(self, w: Writer, m: Module) -> None:
        c = self.lay.ins(m)[0]
        with w.block(self.signature(m, None)), w.block(f"beats: for (long n = 0; n < {self.total()}; ++n)"):
            self.pragma(w, "pipeline II=1")
            self.tripcount(w, len(self.lay.tiles) * self.lay.tokens)
            w.line(f"const {self.stype(c)} x = {self.rd(0)};")
            for n in range(len(self.lay.outs(m))):
                w.line(self.wr(n, "x") + ";")

    def copy(self, w: Writer, m: Module) -> None:
        """A FIFO segment / delay buffer: its storage is its input stream's depth (see ``hls``)."""
        with w.block(self.signature(m, None)), w.block(f"beats: for (long n = 0; n < {self.total()}; ++n)"):
            self.pragma(w, "pipeline II=1")
            self.tripcount(w, len(self.lay.tiles) * self.lay.tokens)
            w.line(self.wr(0, self.rd(0)) + ";")

    def tap(self, w: Writer, m: Module) -> None:
        """SODA §3.4 forwarder: lane element n + s goes to the PEs at firing n; all go down the chain."""
        x, k = int(str(m.param("offset", 0))), int(str(m.param("lanes", 1)))
        s, v = (x - x % k) // k, self.lay.tokens
        dtype = self.lay.ins(m)[0].dtype
        T, zero = self.ct(dtype), self.lit(0, dtype)
        outs = self.lay.outs(m)
        has_next = any(c.src_port == "next" for c in outs)
        to_pes = range(len(outs) - 1 if has_next else len(outs))
        forward = f" {self.wr(len(outs) - 1, 'x')};" if has_next else ""
        with w.block(self.signature(m, None)):
            per_tile = "sm_tokens(rows)" if self.rows else str(v)
            w.line(f"// at firing n the PEs take lane element n + ({s}) of {per_tile} per tile")
            with (
                w.block(f"tiles: for (int t = 0; t < {len(self.lay.tiles)}; ++t)"),
                w.block(f"steps: for (long step = 0; step < {self.tokens(extra=abs(s))}; ++step)"),
            ):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, v + abs(s))
                if s >= 0:
                    w.line(f"{T} x = {zero};")
                    w.line(f"if (step < {self.tokens()}) {{ x = {self.rd(0)};{forward} }}")
                    w.line(f"const {T} y = step < {self.tokens()} ? x : {zero};")
                    w.line(f"if (step >= {s}L) {{ {' '.join(self.wr(o, 'y') + ';' for o in to_pes)} }}")
                else:
                    w.line(f"const long want = step + ({s});  // lane element for firing `step`")
                    w.line(f"{T} x = {zero};")
                    w.line(f"if (want >= 0) {{ x = {self.rd(0)};{forward} }}")
                    w.line(f"const {T} y = want >= 0 ? x : {zero};")
                    w.line(
                        f"if (step < {self.tokens()}) {{ {' '.join(self.wr(o, 'y') + ';' for o in to_pes)} }}"
                    )

    def window_geometry(self, m: Module) -> tuple[int, list[int], int, int]:
        """A window buffer's P (elements per beat), relative address per output, lead (beats read
        before the first firing: firing n needs elements up to n·P + x_hi − 1) and cells held."""
        outs = self.lay.outs(m)
        p = sum(c.width for c in self.lay.ins(m))
        rel, size = self.lay.window(m)
        x_min = min(rel) if rel else 0
        x_hi = max(x + c.width for x, c in zip(rel, outs, strict=True)) if rel else p
        lead = max(0, ceil(x_hi / p) - 1)
        return p, rel, lead, max(size, (lead + 1) * p - x_min)

    def window(self, w: Writer, m: Module) -> None:
        """A window buffer: output o carries, at firing n, elements n·P + x_o + [0, w_o) (StencilFlow
        §IV-A internal buffer; OpenCL-platform shift register), here a ring buffer."""
        ins, outs = self.lay.ins(m), self.lay.outs(m)
        p, rel, lead, ring = self.window_geometry(m)
        v = self.lay.tokens
        dtype = ins[0].dtype
        T, zero = self.ct(dtype), self.lit(0, dtype)
        with w.block(self.signature(m, None)):
            w.line(f"{T} ring[{ring}];  // {ring} elements ({m.kind} size {m.param('size')})")
            self.pragma(w, "dependence variable=ring inter false")
            with (
                w.block(f"tiles: for (int t = 0; t < {len(self.lay.tiles)}; ++t)"),
                w.block(f"steps: for (long step = 0; step < {self.tokens(extra=lead)}; ++step)"),
            ):
                self.pragma(w, "pipeline II=1")
                self.tripcount(w, v + lead)
                with w.block(f"if (step < {self.tokens()})"):
                    self._pop_beat(w, ins, "beat", T)
                    w.line(f"for (int e = 0; e < {p}; ++e) ring[(step * {p}L + e) % {ring}L] = beat[e];")
                w.line(f"const long n = step - {lead}L;  // the firing of this step")
                w.line("if (n < 0) continue;")
                for o, (x, c) in enumerate(zip(rel, outs, strict=True)):
                    w.line(f"{self.stype(c)} o{o};")
                    with w.block(f"for (int e = 0; e < {c.width}; ++e)"):
                        w.line(f"const long a = n * {p}L + ({x}) + e;")
                        value = f"(a >= 0 && a < {self.tokens(p)}) ? ring[a % {ring}L] : {zero}"
                        w.line(f"o{o}{'.v[e]' if c.width > 1 else ''} = {value};")
                    w.line(self.wr(o, f"o{o}") + ";")

    # ------------------------------------------------------------------------------------------ PE

    def stencil_function(self, stencil: str, ports: tuple[str, ...]) -> str:
        key = (stencil, ports)
        if key not in self.stencil_functions:
            self.stencil_functions[key] = f"compute_{stencil}_{len(self.stencil_functions)}"
        return self.stencil_functions[key]

    def stencil_definitions(self) -> str:
        out = []
        for (stencil, ports), fname in sorted(self.stencil_functions.items(), key=lambda kv: kv[1]):
            st = self.program.stencil(stencil)
            assert st is not None
            out.append(self.exprs.stencil_function(st, ports, fname))
        return "\n".join(out)

    def pe(self, w: Writer, m: Module) -> None:
        """A stencil lane (SODA §3.3 PE): the point's reads, its boundary values, its expression."""
        st = self.program.stencil(str(m.param("stencil")))
        assert st is not None
        ports = tuple(str(p) for p in m.param("inputs", ()))  # type: ignore[union-attr]
        ins = self.lay.ins(m)
        width = max((c.width for c in ins), default=int(str(m.param("width", 1))))
        lanes = int(str(m.param("lanes", 0) or width))
        lane = int(str(m.param("lane", 0)))
        fname = self.stencil_function(st.name, ports)
        out = self.lay.outs(m)[0]
        T = self.ct(st.dtype)
        shape = self.lay.stream_shape
        with (
            w.block(self.signature(m, None)),
            w.block(f"tiles: for (int t = 0; t < {len(self.lay.tiles)}; ++t)"),
            w.block(f"firings: for (long n = 0; n < {self.tokens()}; ++n)"),
        ):
            self.pragma(w, "pipeline II=1")
            self.tripcount(w, self.lay.tokens)
            for j, c in enumerate(ins):
                w.line(f"const {self.stype(c)} p{j} = {self.rd(j)};")
            w.line(f"{self.stype(out)} r;")
            self.unroll(w)
            with w.block(f"for (int e = 0; e < {width}; ++e)"):
                self.pragma(w, "unroll")
                w.line(f"const long addr = n * {lanes}L + {lane} + e;")
                w.line(f"{T} value = {self.lit(0, st.dtype)};  // padding")
                with w.block(f"if (addr < {self.points()})"):
                    coords(w, "addr", shape, rows=self.rows)
                    args = self._port_values(w, m, ins, ports, width)
                    args += self.exprs.guard_values(st, self.sizes())  # fusion guards
                    w.line(f"value = {fname}({', '.join(args)});")
                    self._preserve(w, m, ports, width, shape)
                w.line(f"r{'.v[e]' if out.width > 1 else ''} = value;")
            w.line(self.wr(0, "r") + ";")

    def _element(self, j: int, c: Channel) -> str:
        return f"p{j}.v[e]" if c.width > 1 else f"p{j}"

    def _port_values(
        self, w: Writer, m: Module, ins: list[Channel], ports: tuple[str, ...], width: int
    ) -> list[str]:
        """One local per port: the streamed value inside the tile, else the boundary's (``boundary``)."""
        st = self.program.stencil(str(m.param("stencil")))
        assert st is not None
        shape = self.sizes()
        args = []
        for j, read in enumerate(port_reads(self.program, st, ports)):
            if read.kind == "constant":
                other = self.lit(read.value, read.dtype)
            elif read.kind == "copy":
                k = ports.index(read.centre)
                other = self._element(k, ins[k])
            else:
                other = f"{self.lit(0, read.dtype)}  /* shrink: undefined, not compared */"
            value = self._element(j, ins[j])
            cond = inside(read, shape)
            w.line(
                f"const {self.ct(read.dtype)} a{j} = {value if cond == '1' else f'({cond}) ? {value} : {other}'};"
            )
            args.append(f"a{j}")
        return args

    def _preserve(
        self, w: Writer, m: Module, ports: tuple[str, ...], width: int, shape: tuple[int, ...]
    ) -> None:
        """``border: preserve``: outside the pass's valid box the output keeps the paired input."""
        kept = preserve_box(self.program, str(m.param("stencil")), ports)
        if kept is None:
            return
        centre, low, high = kept
        ends = [f"{shape[a] - high[a]}" for a in range(len(shape))]
        if self.rows:
            ends[0] = f"rows - {high[0]}L" if high[0] else "rows"
        box = " && ".join(f"c{a} >= {low[a]} && c{a} < {ends[a]}" for a in range(len(shape)))
        k = ports.index(centre)
        w.line(f"if (!({box})) value = {self._element(k, self.lay.ins(m)[k])};  // border: preserve")
