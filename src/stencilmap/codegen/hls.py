"""Target ``hls``: a Vitis HLS C++ dataflow kernel of a SODA, StencilFlow or PCM design (SODA §3.4, §4.1).

One function per module of the Design IR (``kernel_cpp``), joined by ``hls::stream`` channels declared
with the design's depths; a top function under ``#pragma HLS dataflow`` calls them in dataflow order.
The top function has C linkage (``extern "C"``, UG1393 "C/C++ Kernels"). Memory ports are ``m_axi``,
each its own bundle (inputs and outputs separate AXI masters), their words ``ap_uint<burst width>``
beats; ``connectivity.cfg`` connects each port to its bank for ``v++``. Writers assemble whole words and
write each once: no output port is read. ``hls.tcl``, the ``Makefile`` and ``connectivity.cfg`` carry the
``--device`` file's part, clock and memory (``host_files.Board``); ``api/`` holds the C binding
(``binding``). Tiles (SODA §4.2) are streamed by the readers and writers from the placement the design
records. FIFO segments and delay buffers are copy
loops whose storage is their input stream's depth (the design's channel depth plus the segment's).

The number of rows (the outermost, streamed axis) is the top function's last argument, ``long rows``
(``s_axilite``), as SODA's tiles take theirs (SODA §4.5: "T_{m-1} is determined by the input and is a
runtime parameter"); the inner axes are the generation's, since they size the reuse buffers. The
testbench, the XRT host and the C binding pass it (the grid's first size); ``SM_ROWS`` in ``kernel.h`` is
the generation's, the default and every loop's ``loop_tripcount`` hint. A design whose writer gathers the
field on chip (several tiles) takes at most ``SM_MAX_ROWS`` (the generation's) rows.
"""

from __future__ import annotations

from importlib import resources
from math import ceil, prod

from stencilmap.codegen import binding, host_files
from stencilmap.codegen.ctypes_ import bits
from stencilmap.codegen.expr import ExprEmitter
from stencilmap.codegen.helpers import helpers_text
from stencilmap.codegen.kernel_cpp import ModuleEmitter, fifo_storage, stream_type
from stencilmap.codegen.layout import Layout, layout
from stencilmap.codegen.registry import Generated, Port, Values, register
from stencilmap.codegen.writer import Writer
from stencilmap.design.common import DEFAULT_BURST_WIDTH
from stencilmap.design.ir import Design, Module
from stencilmap.errors import StencilmapError
from stencilmap.names import c_string, comment, identifier
from stencilmap.program.ir import Program

#: The paper section each architecture's structure follows.
SECTIONS = {
    "soda": "SODA §3.4 (forwarding modules, reuse chains) and §4.1 (dataflow kernel)",
    "stencilflow": "StencilFlow §IV (units, internal and delay buffers) and §VI-A",
    "pcm": "OpenCL FPGA platform §3 (PCMs of shift registers), as an HLS dataflow",
}


def support_file(name: str) -> str:
    """A header shipped in ``codegen/include`` (support code and the C-simulation stand-ins)."""
    return resources.files("stencilmap.codegen").joinpath("include", name).read_text(encoding="utf-8")


def burst_width(design: Design, program: Program) -> int:
    value = dict(design.parameters).get("burst_width") or program.hints.burst_width or DEFAULT_BURST_WIDTH
    burst = int(str(value))
    return burst


def ports_of(lay: Layout) -> tuple[Port, ...]:
    """Memory arguments: readers then writers, in design order."""
    out = []
    p = lay.program
    for kind, direction in (("reader", "in"), ("writer", "out")):
        for m in lay.design.modules:
            if m.kind != kind:
                continue
            field = str(m.param("field"))
            inp = p.input(field)
            axes = p.field_axes(field) if inp is not None else tuple(range(lay.rank))
            own = tuple(lay.shape[a] for a in axes)
            bank = m.param("bank", 0)
            per_row = prod(own[1:]) if axes[:1] == (0,) else 0  # spans the rows: its size follows them
            out.append(Port(field, direction, p.field_dtype(field), prod(own), int(str(bank)), per_row))  # type: ignore[arg-type]
    return tuple(out)


def max_rows(lay: Layout) -> int:
    """The most rows the kernel takes: the generation's where a writer gathers its field on chip (its
    buffer is sized at generation), else 0 (no bound)."""
    mods = ModuleEmitter(lay, ExprEmitter(lay.program, {}, "cpp"), 0)
    gathers = any(m.kind == "writer" and not mods.in_order(m) for m in lay.design.modules)
    return lay.shape[0] if gathers else 0


def declared(program: Program) -> tuple[str, ...]:
    """The program's fields in declaration order: inputs, then outputs (the C binding's arguments)."""
    return tuple(i.name for i in program.inputs) + tuple(program.outputs)


def _check_burst(burst: int, ports: tuple[Port, ...]) -> None:
    for port in ports:
        b = bits(port.dtype)
        if burst % b or burst % 8:
            raise StencilmapError(
                f"burst width {burst} is not a whole number of {b}-bit elements of '{port.field}'"
            )


@register("hls", ("soda", "stencilflow", "pcm"))
def emit_hls(design: Design, program: Program, values: Values) -> Generated:
    lay = layout(design, program)
    burst = burst_width(design, program)
    ports = ports_of(lay)
    _check_burst(burst, ports)
    top = f"{identifier(program.name)}_kernel"
    if lay.stream_shape[:1] != lay.shape[:1]:
        raise StencilmapError(
            f"design {design.name} streams {lay.stream_shape} of {lay.shape}: tiles split the rows"
        )
    kernel = _kernel(lay, values, burst, top, ports)
    board = host_files.board_of(design.device)
    api = binding.api(program.name, ports, declared(program), lay.shape, rows=True, max_rows=max_rows(lay))
    files = {
        "kernel.cpp": kernel,
        "kernel.h": _header(lay, top, ports, burst),
        "stencilmap_hls.h": support_file("stencilmap_hls.h"),
        "csim_include/hls_stream.h": support_file("hls_stream.h"),
        "csim_include/ap_int.h": support_file("ap_int.h"),
        "csim_main.cpp": host_files.hls_testbench(top, ports, burst),
        "host.cpp": host_files.xrt_host(top, ports, burst, lay.shape[0], max_rows(lay)),
        "connectivity.cfg": host_files.connectivity(top, ports, board),
        "hls.tcl": host_files.hls_tcl(top, board),
        "Makefile": host_files.hls_makefile(top, board, api.name),
        "README.md": host_files.hls_readme(lay, top, ports, burst, board, api.name, max_rows(lay)),
        f"api/{api.name}.h": binding.header(api),
        f"api/{api.name}_xrt.cpp": binding.xrt(api, top, burst, ports),
        f"api/{api.name}_csim.cpp": binding.csim(api, top, burst, ports),
    }
    return Generated(
        "hls",
        tuple(sorted(files.items())),
        top,
        ports,
        "csim",
        sources=("kernel.cpp", "csim_main.cpp"),
        include_dirs=(".", "csim_include"),
        standins=("csim_include",),
    )


def _header(lay: Layout, top: str, ports: tuple[Port, ...], burst: int) -> str:
    w = Writer()
    w.line(
        f"// {top}: the top function of the {lay.design.arch} design of '{comment(lay.program.name)}' (stencilmap)."
    )
    w.line(f"// Structure: {SECTIONS[lay.design.arch]}.")
    guard = f"{top.upper()}_H"
    w.line(f"#ifndef {guard}")
    w.line(f"#define {guard}")
    w.line()
    w.line('#include "stencilmap_hls.h"')
    w.line()
    w.line(f"#define SM_BURST_BITS {burst}")
    host_files.sizing(w, ports, burst, lay.shape[0], max_rows(lay))
    for p in ports:
        words = ceil(p.elements * bits(p.dtype) / burst)
        w.line(
            f"#define SM_WORDS_{identifier(p.field).upper()} {words}L  // {p.elements} x {p.dtype} at SM_ROWS"
        )
    w.line()
    w.line("// C linkage, as Vitis requires of a kernel's top function (UG1393, C/C++ Kernels).")
    w.line(f'extern "C" void {top}({_args(ports, burst)});')
    w.line()
    w.line("#endif")
    return w.text()


def _args(ports: tuple[Port, ...], burst: int) -> str:
    mem = [
        f"{'const ' if p.direction == 'in' else ''}ap_uint<{burst}>* {p.direction}_{identifier(p.field)}"
        for p in ports
    ]
    return ", ".join([*mem, "long rows"])


def _kernel(lay: Layout, values: Values, burst: int, top: str, ports: tuple[Port, ...]) -> str:
    params = {p.name: values[p.name] for p in lay.program.params}
    exprs = ExprEmitter(lay.program, params, "cpp")
    mods = ModuleEmitter(lay, exprs, burst, rows=True)
    order = lay.order()
    body = Writer()
    for m in order:
        mods.emit(body, m)
    stencils = mods.stencil_definitions()  # after the modules: they register the functions they call
    w = Writer()
    d = lay.design
    w.line(f"// {top}: Vitis HLS C++ of the {d.arch} design '{comment(d.name)}', generated by stencilmap.")
    w.line(f"// Structure: {SECTIONS[d.arch]}: one function per module, hls::stream")
    w.line("// channels with the design's depths, the top function a dataflow region.")
    w.line(f"// Design parameters: {', '.join(f'{k}={v}' for k, v in d.parameters)}")
    w.line()
    w.line("#include <cmath>")
    w.line("#include <cstdint>")
    w.line()
    w.line('#include "kernel.h"')
    w.line()
    w.line("// ---- arithmetic with the project's defined semantics (wrap-around, x / 0 = 0, ...)")
    w.line()
    w.lines_of(helpers_text(exprs.helpers, "cpp"))
    w.line()
    inner = prod(lay.stream_shape[1:])
    w.line("// ---- the stream of one tile: rows x the inner points, in beats of the design's lanes")
    w.line("// (SODA §4.5: the rows, T_{m-1}, are a runtime parameter; the inner sizes the generation's)")
    w.line()
    w.line(f"static inline long sm_points(long rows) {{ return rows * {inner}L; }}")
    w.line(
        f"static inline long sm_tokens(long rows) {{ return (rows * {inner}L + {lay.lanes - 1}L) / {lay.lanes}L; }}"
    )
    w.line()
    w.line("// ---- stencil expressions, one per stencil and port list (SODA §3.3: the PE body)")
    w.line()
    w.lines_of(stencils)
    w.line()
    w.line("// ---- modules, in dataflow order")
    w.line()
    for text in body.lines:
        w.line(text)
    _top(w, lay, top, ports, burst, order, mods)
    return w.text()


def _top(
    w: Writer,
    lay: Layout,
    top: str,
    ports: tuple[Port, ...],
    burst: int,
    order: tuple[Module, ...],
    mods: ModuleEmitter,
) -> None:
    d = lay.design
    chan_id = {c.name: f"c{n}" for n, c in enumerate(d.channels)}
    with w.block(f'extern "C" void {top}({_args(ports, burst)})'):
        for p in ports:
            arg = f"{p.direction}_{identifier(p.field)}"
            words = f"SM_WORDS_{identifier(p.field).upper()}"
            w.pragma(
                f"HLS interface m_axi port={arg} offset=slave bundle={host_files.bundle(p)} depth={words}"
            )
            w.pragma(f"HLS interface s_axilite port={arg}")
        w.pragma("HLS interface s_axilite port=rows")
        w.pragma("HLS interface s_axilite port=return")
        w.pragma("HLS dataflow")
        w.line()
        for c in d.channels:
            depth = c.depth
            dst = d.module(c.dst)
            extra = fifo_storage(dst, c) if dst.kind in ("fifo", "delay") else 0
            w.line(f'hls::stream<{stream_type(c)}> {chan_id[c.name]}("{c_string(c.name)}");')
            note = f"  // + {extra} beats of {dst.kind} {comment(dst.name)}" if extra else ""
            w.pragma(f"HLS stream variable={chan_id[c.name]} depth={depth + extra}{note}")
        w.line()
        for m in order:
            args = [chan_id[c.name] for c in lay.ins(m)] + [chan_id[c.name] for c in lay.outs(m)]
            if m.kind == "reader":
                args.insert(0, f"in_{identifier(str(m.param('field')))}")
            elif m.kind == "writer":
                args.append(f"out_{identifier(str(m.param('field')))}")
            args.append("rows")
            w.line(f"{mods.names[m.name]}({', '.join(args)});")
