"""Target ``opencl`` for ``stencilflow`` designs: Intel FPGA OpenCL kernels joined by channels
(StencilFlow §VI-A: every module a kernel, every stream a channel).

Each module of the Design IR becomes one single-work-item kernel with the body ``kernel_cpp`` gives it,
in OpenCL C: readers and writers take their ``__global`` array (launched by the host); every other
kernel — a stencil unit's internal buffers (shift registers of W-wide beats) and its PE, delay buffers,
broadcasts — is ``autorun``. Channels are declared with ``__attribute__((depth(N))))`` from the design
(a delay buffer's storage added to its input channel, a PE's pipeline to its output channel: see
``pipeline_storage``); W-wide beats are structs of W elements; lower-dimensional inputs are replayed by
their readers.

The same ``kernel.cl`` compiles as C++ with ``opencl_emulation.h`` (``SM_EMULATION``): each kernel a
thread, each channel a bounded blocking FIFO; a deadlock is detected and reported (exit status 4).
"""

from __future__ import annotations

from stencilmap.codegen import binding, opencl_host
from stencilmap.codegen.ctypes_ import SUFFIX, concrete, storage
from stencilmap.codegen.expr import ExprEmitter
from stencilmap.codegen.helpers import helpers_text
from stencilmap.codegen.hls import declared, ports_of, support_file
from stencilmap.codegen.host_files import board_of
from stencilmap.codegen.kernel_cpp import ModuleEmitter, fifo_storage
from stencilmap.codegen.layout import Layout, layout
from stencilmap.codegen.opencl_pcm import PRELUDE
from stencilmap.codegen.registry import Generated, Port, Values
from stencilmap.codegen.writer import Writer
from stencilmap.design.ir import Channel, Design, Module
from stencilmap.errors import StencilmapError
from stencilmap.names import c_string, comment, identifier
from stencilmap.program.ir import Program


class ChannelEmitter(ModuleEmitter):
    """``kernel_cpp``'s module bodies over Intel channels (globals ``ch_{n}``) in OpenCL C."""

    dialect = "opencl"

    def __init__(self, lay: Layout, exprs: ExprEmitter) -> None:
        super().__init__(lay, exprs, burst=0, pragmas=False)
        self.chan = {c.name: f"ch_{n}" for n, c in enumerate(lay.design.channels)}
        self.current: Module | None = None
        self.vectors: set[tuple[str, int]] = set()

    def emit(self, w: Writer, m: Module) -> None:
        self.current = m
        if m.kind == "network":
            self.smi_endpoint(w, m)
        else:
            super().emit(w, m)

    def smi_endpoint(self, w: Writer, m: Module) -> None:
        """One end of a cut stream (StencilFlow §VI-B): ``opencl_smi`` gives the device's ``network``
        module an ``smi_role`` (send: it pops the stream; receive: it pushes it), its ``smi_port`` and
        the ``smi_peer`` rank. SMI moves scalars: a W-wide beat goes as W elements, in order."""
        role, port, peer = str(m.param("smi_role")), m.param("smi_port"), m.param("smi_peer")
        send = role == "send"
        c = (self.lay.ins(m) if send else self.lay.outs(m))[0]
        count = len(self.lay.tiles) * self.lay.tokens * c.width
        w.line(f"// {comment(m.name)}: SMI {role} {'to' if send else 'from'} device {peer}, port {port}")
        opened = "SMI_Open_send_channel" if send else "SMI_Open_receive_channel"
        with w.block(f"__kernel SM_SINGLE_WORK_ITEM void {self.names[m.name]}(SMI_Comm comm)"):
            w.line(f"SMI_Channel chan = {opened}({count}, {smi_type(c.dtype)}, {peer}, {port}, comm);")
            with w.block(f"for (long n = 0; n < {self.total()}; ++n)"):
                w.line(f"{self.stype(c)} x;")
                if send:
                    w.line(f"x = {self.rd(0)};")
                elems = ["x"] if c.width == 1 else [f"x.v[{e}]" for e in range(c.width)]
                for x in elems:
                    w.line(f"{'SMI_Push' if send else 'SMI_Pop'}(&chan, &{x});")
                if not send:
                    w.line(self.wr(0, "x") + ";")
        w.line()

    def unroll(self, w: Writer) -> None:
        w.line("SM_UNROLL")  # ``#pragma unroll`` under aoc (``PRELUDE``)

    def stype(self, c: Channel) -> str:
        if c.width == 1:
            return self.ct(c.dtype)
        self.vectors.add((concrete(c.dtype), c.width))
        return f"sm_vec_{SUFFIX[concrete(c.dtype)]}_{c.width}"

    def rd(self, n: int) -> str:
        assert self.current is not None
        return f"read_channel_intel({self.chan[self.lay.ins(self.current)[n].name]})"

    def wr(self, n: int, value: str) -> str:
        assert self.current is not None
        return f"write_channel_intel({self.chan[self.lay.outs(self.current)[n].name]}, {value})"

    def load(self, dtype: str, addr: str) -> str:
        return f"(mem[{addr}] != 0)" if dtype == "bool" else f"mem[{addr}]"

    def store(self, dtype: str, addr: str, value: str) -> str:
        return f"mem[{addr}] = {'(uchar)' if dtype == 'bool' else ''}{value}"

    def table(self, name: str, rows: list[list[int]]) -> str:
        body = "{" + ", ".join("{" + ", ".join(str(v) for v in r) + "}" for r in rows) + "}"
        return f"const long {name}[{len(rows)}][{len(rows[0])}] = {body};"

    def window(self, w: Writer, m: Module) -> None:
        """An internal buffer as a shift register (the Intel FPGA idiom): every step it shifts by P and
        takes P new elements at the top, so each output reads fixed cells: at step s (firing n = s −
        lead) element n·P + x + e sits in cell SIZE − (lead + 1)·P + x + e."""
        ins, outs = self.lay.ins(m), self.lay.outs(m)
        p, rel, lead, size = self.window_geometry(m)
        v = self.lay.tokens
        dtype = ins[0].dtype
        T, zero = self.ct(dtype), self.lit(0, dtype)
        with w.block(self.signature(m, None)):
            w.line(f"{T} sr[{size}];  // {size} cells ({m.kind} size {m.param('size')})")
            w.line("SM_UNROLL")
            w.line(f"for (int i = 0; i < {size}; ++i) sr[i] = {zero};")
            with (
                w.block(f"for (int t = 0; t < {len(self.lay.tiles)}; ++t)"),
                w.block(f"for (long step = 0; step < {v + lead}L; ++step)"),
            ):
                w.line("SM_UNROLL")
                w.line(f"for (int i = 0; i < {size - p}; ++i) sr[i] = sr[i + {p}];")
                with w.block(f"if (step < {v}L)"):
                    self._pop_beat(w, ins, "beat", T)
                    w.line("SM_UNROLL")
                    w.line(f"for (int e = 0; e < {p}; ++e) sr[{size - p} + e] = beat[e];")
                w.line(f"const long n = step - {lead}L;  // the firing of this step")
                w.line("if (n < 0) continue;")
                for o, (x, c) in enumerate(zip(rel, outs, strict=True)):
                    w.line(f"{self.stype(c)} o{o};")
                    w.line("SM_UNROLL")
                    with w.block(f"for (int e = 0; e < {c.width}; ++e)"):
                        w.line(f"const long a = n * {p}L + ({x}) + e;")
                        cell = f"sr[{size - (lead + 1) * p + x} + e]"
                        w.line(
                            f"o{o}{'.v[e]' if c.width > 1 else ''} = (a >= 0 && a < {v * p}L) ? {cell} : {zero};"
                        )
                    w.line(self.wr(o, f"o{o}") + ";")

    def signature(self, m: Module, mem: str | None) -> str:
        name = self.names[m.name]
        if m.kind in ("reader", "writer"):
            field = str(m.param("field"))
            dtype = self.program.field_dtype(field)
            t = "uchar" if dtype == "bool" else self.ct(dtype)
            const = "const " if m.kind == "reader" else ""
            return f"__kernel SM_SINGLE_WORK_ITEM void {name}(__global {const}{t}* restrict mem)"
        return f"__kernel SM_AUTORUN void {name}(void)"


#: SMI's scalar types (``SMI_Datatype``) of the program's dtypes; SMI has no 64-bit integers.
SMI_TYPES = {
    "bool": "SMI_CHAR",
    "int8": "SMI_CHAR",
    "uint8": "SMI_CHAR",
    "int16": "SMI_SHORT",
    "uint16": "SMI_SHORT",
    "int32": "SMI_INT",
    "uint32": "SMI_INT",
    "float32": "SMI_FLOAT",
    "float64": "SMI_DOUBLE",
}


def smi_type(dtype: str) -> str:
    """The ``SMI_Datatype`` a stream of ``dtype`` travels as (same size: SMI copies the bits)."""
    c = concrete(dtype)
    if c not in SMI_TYPES:
        raise StencilmapError(f"a {c} stream cannot cross devices: SMI has no {c} type")
    return SMI_TYPES[c]


def emit_channels(design: Design, program: Program, values: Values) -> Generated:
    lay = layout(design, program)
    top = f"{identifier(program.name)}_stencilflow"
    ports = ports_of(lay)
    text, mods = channel_kernel(lay, values, top)
    api = binding.api(program.name, ports, declared(program), lay.shape)
    memory_kernels = [
        (mods.names[m.name], tuple(p for p in ports if p.field == str(m.param("field")) and _direction(m, p)))
        for m in lay.order()
        if m.kind in ("reader", "writer")
    ]
    files = {
        "kernel.cl": text,
        "opencl_emulation.h": support_file("opencl_emulation.h"),
        "emulate.cpp": _emulation_main(lay, mods, ports),
        "host.cpp": opencl_host.host(
            top,
            ports,
            [mods.names[m.name] for m in lay.order() if m.kind in ("reader", "writer")],
            f"{top}.aocx",
        ),
        "Makefile": opencl_host.makefile(
            top, "kernel.cl", emulation="emulate.cpp", board=board_of(design.device), api=api.name
        ),
        "README.md": opencl_host.readme(design, program, top, ports),
        f"api/{api.name}.h": binding.header(api),
        f"api/{api.name}_opencl.cpp": binding.opencl(api, top, memory_kernels),
    }
    return Generated(
        "opencl",
        tuple(sorted(files.items())),
        top,
        ports,
        "csim",
        sources=("emulate.cpp",),
        include_dirs=(".",),
        flags=EMULATION_FLAGS,
    )


def _direction(m: Module, p: Port) -> bool:
    return p.direction == ("in" if m.kind == "reader" else "out")


#: g++ flags of the channel emulation (-O1: the shift registers move memory every step).
EMULATION_FLAGS = ("-std=c++17", "-O1", "-pthread")


def channel_kernel(lay: Layout, values: Values, top: str) -> tuple[str, ChannelEmitter]:
    """The ``kernel.cl`` of ``lay``'s design (one device's modules; its ``network`` modules become SMI
    endpoints) and the emitter that wrote it (its kernel names and types)."""
    design, program = lay.design, lay.program
    exprs = ExprEmitter(program, {p.name: values[p.name] for p in program.params}, "opencl")
    mods = ChannelEmitter(lay, exprs)
    body = Writer()
    for m in lay.order():
        mods.emit(body, m)
    stencils = mods.stencil_definitions()
    w = Writer()
    w.line(f"// {top}: Intel FPGA OpenCL of the StencilFlow design '{comment(design.name)}' (stencilmap).")
    w.line("// Structure: StencilFlow §IV/§VI-A — one kernel per module (readers, writers, broadcasts, delay")
    w.line("// buffers, each stencil unit's internal buffers and PE), channels with the design's depths")
    w.line(
        "// (a delay buffer's storage in its input channel, a PE's in-flight beats in its output channel)."
    )
    if design.count("network"):
        w.line("// Streams to and from other devices: SMI send/receive kernels (StencilFlow §VI-B).")
    w.line(f"// Design parameters: {', '.join(f'{k}={v}' for k, v in design.parameters)}")
    w.lines_of(PRELUDE)
    if design.count("network"):
        w.line("#if !defined(SM_EMULATION)")
        w.line("#include <smi.h>  // the Streaming Message Interface (SMI_Comm, SMI_Push, SMI_Pop)")
        w.line("#endif")
    w.line()
    for dtype, width in sorted(mods.vectors):
        w.line(f"typedef struct {{ {mods.ct(dtype)} v[{width}]; }} sm_vec_{SUFFIX[dtype]}_{width};")
    w.line()
    _channels(w, lay, mods)
    w.line()
    w.lines_of(helpers_text(exprs.helpers, "opencl"))
    w.line()
    w.lines_of(stencils)
    w.line()
    for text in body.lines:
        w.line(text)
    return w.text(), mods


def _channels(w: Writer, lay: Layout, mods: ChannelEmitter) -> None:
    d = lay.design
    decls = []
    for c in d.channels:
        dst = d.module(c.dst)
        extra = pipeline_storage(d.module(c.src))
        depth = c.depth + extra + (fifo_storage(dst, c) if dst.kind in ("fifo", "delay") else 0)
        note = f" (+ {extra} beats in flight in {comment(c.src)})" if extra else ""
        decls.append((c, mods.chan[c.name], mods.stype(c), depth, note))
    w.line("#if defined(SM_EMULATION)")
    for c, name, t, depth, _ in decls:
        w.line(f'static sm_channel<{t}> {name}("{c_string(c.name)}", {depth});')
    w.line("#else")
    w.line("#pragma OPENCL EXTENSION cl_intel_channels : enable")
    for c, name, t, depth, note in decls:
        w.line(f"channel {t} {name} __attribute__((depth({depth})));  // {comment(c.name)}{note}")
    w.line("#endif")


def pipeline_storage(m: Module) -> int:
    """Beats a PE's output channel holds beyond the design's depth: its latency. The design's timing
    (``analysis.timing``: t_v = s_v + λ_v) and the simulator count a PE of latency λ as holding λ beats in
    flight (StencilFlow §IV-B: the delay buffers absorb the critical paths, whose data the pipelines
    hold), and a stream that a consumer takes late (a far read on another path) waits there. A kernel's
    loop does not guarantee that storage: the aoc pipeline's depth is the compiler's, not the design's λ,
    and a blocked channel write stalls it with its bubbles; the emulation's kernel holds one beat. So
    the channel declares it (the emulation deadlocked on difffuzz seed 31 cases 19, 23, 25 and 27, e.g.
    s0 = in0 ** in1 (λ 30), s1 = in1[j+2] - s0 on a 1x12 grid: s1 fires once its buffer took all of in1,
    and s0's results of those 12 points wait in s0's pipeline, where the design gives them no channel)."""
    return max(0, m.latency) if m.kind == "pe" else 0


def _emulation_main(lay: Layout, mods: ChannelEmitter, ports: tuple[Port, ...]) -> str:
    w = Writer()
    w.line("// Emulation of the channel kernels with g++ (stencilmap): every kernel a thread.")
    w.line("// Usage: emulate DATA_DIR OUT_DIR (raw little-endian <field>.bin files in and out).")
    w.line("#define SM_EMULATION")
    w.line('#include "opencl_emulation.h"')
    w.line('#include "kernel.cl"')
    w.line()
    with w.block("int main(int argc, char** argv)"):
        emulation_inputs(w, ports, mods)
        w.line("sm_run_kernels({")
        with w.indent():
            for m in lay.order():
                w.line(f'{{"{c_string(m.name)}", [&]() {{ {mods.names[m.name]}({kernel_argument(m)}); }}}},')
        w.line("});")
        emulation_outputs(w, ports, mods)
    return w.text()


def kernel_argument(m: Module, comm: str = "") -> str:
    """What the emulation passes a kernel: a reader's / writer's host array, an SMI endpoint's ``comm``."""
    if m.kind in ("reader", "writer"):
        return f"{'in' if m.kind == 'reader' else 'out'}_{identifier(str(m.param('field')))}.data()"
    return comm if m.kind == "network" else ""


def emulation_inputs(w: Writer, ports: tuple[Port, ...], mods: ChannelEmitter) -> None:
    """The emulation's usage check, and a host array per port (inputs read from DATA_DIR)."""
    w.line('if (argc != 3) { std::fprintf(stderr, "usage: %s DATA_DIR OUT_DIR\\n", argv[0]); return 2; }')
    w.line("const std::string in_dir = argv[1], out_dir = argv[2];")
    for p in ports:
        t = mods.ct(storage(p.dtype))
        name = f"{p.direction}_{identifier(p.field)}"
        w.line(f"std::vector<{t}> {name}({p.elements});")
        if p.direction == "in":
            with w.block(""):
                w.line(f'FILE* f = std::fopen((in_dir + "/{p.field}.bin").c_str(), "rb");')
                w.line(
                    f"if (!f || std::fread({name}.data(), sizeof({t}), {p.elements}, f) != {p.elements}) return 1;"
                )
                w.line("std::fclose(f);")


def emulation_outputs(w: Writer, ports: tuple[Port, ...], mods: ChannelEmitter) -> None:
    """The emulation's outputs written to OUT_DIR, and its exit."""
    for p in ports:
        if p.direction == "out":
            t = mods.ct(storage(p.dtype))
            with w.block(""):
                w.line(f'FILE* f = std::fopen((out_dir + "/{p.field}.bin").c_str(), "wb");')
                w.line(
                    f"if (!f || std::fwrite(out_{identifier(p.field)}.data(), sizeof({t}), {p.elements}, f) != {p.elements}) return 1;"
                )
                w.line("std::fclose(f);")
    w.line("return 0;")
