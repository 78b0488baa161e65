"""Host program and build files of the generated OpenCL (Intel FPGA SDK for OpenCL / oneAPI FPGA).

The host reads ``<field>.bin`` inputs (raw little-endian C order, bool as one byte), loads the
``.aocx``, launches the kernel(s) as single work-items and writes the outputs.
"""

from __future__ import annotations

import re

from stencilmap.codegen.ctypes_ import bits
from stencilmap.codegen.host_files import Board
from stencilmap.codegen.registry import Port
from stencilmap.codegen.writer import Writer
from stencilmap.design.ir import Design
from stencilmap.names import comment, identifier
from stencilmap.program.ir import Program


def host(
    top: str,
    ports: tuple[Port, ...],
    kernels: list[str],
    aocx: str,
) -> str:
    """``host KERNEL.aocx DATA_DIR OUT_DIR``; ``kernels``: "kernel" for the one kernel ``top``, else the
    names of the memory kernels to launch (autorun kernels start by themselves). A design split over
    devices has SMI's host instead (``smi_host``)."""
    w = Writer()
    w.line(f"// OpenCL host of {top} for an Intel FPGA board (stencilmap).")
    w.line("// Usage: host KERNEL.aocx DATA_DIR OUT_DIR (raw little-endian <field>.bin files).")
    w.line("#define CL_TARGET_OPENCL_VERSION 120")
    w.line("#include <CL/cl.h>")
    w.line("#include <cstdio>")
    w.line("#include <fstream>")
    w.line("#include <string>")
    w.line("#include <vector>")
    w.line()
    w.line(
        '#define CHECK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS) { std::fprintf(stderr, "%s: %d\\n", #x, e_); return 1; } } while (0)'
    )
    w.line()
    with w.block("int main(int argc, char** argv)"):
        w.line(
            'if (argc != 4) { std::fprintf(stderr, "usage: %s KERNEL.aocx DATA_DIR OUT_DIR\\n", argv[0]); return 2; }'
        )
        w.line("const std::string in_dir = argv[2], out_dir = argv[3];")
        w.line("cl_platform_id platform; cl_device_id device; cl_int err;")
        w.line("CHECK(clGetPlatformIDs(1, &platform, nullptr));")
        w.line("CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr));")
        w.line("cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err); CHECK(err);")
        w.line("std::ifstream bin(argv[1], std::ios::binary);")
        w.line(
            "std::vector<unsigned char> image((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());"
        )
        w.line("const unsigned char* image_ptr = image.data(); size_t image_size = image.size();")
        w.line(
            "cl_program program = clCreateProgramWithBinary(ctx, 1, &device, &image_size, &image_ptr, nullptr, &err); CHECK(err);"
        )
        w.line('CHECK(clBuildProgram(program, 1, &device, "", nullptr, nullptr));')
        for p in ports:
            name = f"{p.direction}_{identifier(p.field)}"
            nbytes = p.elements * bits(p.dtype) // 8
            w.line(f"std::vector<char> h_{name}({nbytes});")
            if p.direction == "in":
                w.line(
                    f'{{ std::ifstream f(in_dir + "/{p.field}.bin", std::ios::binary); if (!f.read(h_{name}.data(), {nbytes})) {{ std::fprintf(stderr, "cannot read {p.field}.bin\\n"); return 1; }} }}'
                )
            flags = "CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR" if p.direction == "in" else "CL_MEM_WRITE_ONLY"
            ptr = f"h_{name}.data()" if p.direction == "in" else "nullptr"
            w.line(f"cl_mem d_{name} = clCreateBuffer(ctx, {flags}, {nbytes}, {ptr}, &err); CHECK(err);")
        w.line("std::vector<cl_command_queue> queues;")
        w.line("std::vector<cl_kernel> launched;")
        for k in kernels:
            kname = top if k == "kernel" else k
            w.line(f'{{ cl_kernel k = clCreateKernel(program, "{kname}", &err); CHECK(err);')
            with w.indent():
                args = ports if k == "kernel" else [p for p in ports if _serves(k, p)]
                for n, p in enumerate(args):
                    w.line(
                        f"CHECK(clSetKernelArg(k, {n}, sizeof(cl_mem), &d_{p.direction}_{identifier(p.field)}));"
                    )
                w.line("cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err); CHECK(err);")
                w.line("CHECK(clEnqueueTask(q, k, 0, nullptr, nullptr));")
                w.line("queues.push_back(q); launched.push_back(k); }")
        w.line("for (cl_command_queue q : queues) CHECK(clFinish(q));")
        for p in ports:
            if p.direction == "out":
                name = f"out_{identifier(p.field)}"
                nbytes = p.elements * bits(p.dtype) // 8
                w.line(
                    f"CHECK(clEnqueueReadBuffer(queues[0], d_{name}, CL_TRUE, 0, {nbytes}, h_{name}.data(), 0, nullptr, nullptr));"
                )
                w.line(
                    f'{{ std::ofstream f(out_dir + "/{p.field}.bin", std::ios::binary); f.write(h_{name}.data(), {nbytes}); }}'
                )
        w.line('std::printf("done\\n");')
        w.line("return 0;")
    return w.text()


def makefile(
    top: str, kernel: str, emulation: str | None = None, board: Board | None = None, api: str | None = None
) -> str:
    """``aoc`` targets: ``hw`` (alias ``aocx``) and ``report`` for ``BOARD`` (the device file's
    ``aoc -board=`` name), ``emulator`` (``aoc -march=emulator``); ``emulate`` runs the design here: the
    g++ channel emulation when there is one, else the host on Intel's emulator; ``lib``: the C binding."""
    name = board.board if board is not None else ""
    if emulation is not None:
        emu = f"""
# Channel emulation with g++ only: every kernel a thread, every channel a bounded queue of its depth.
emulate: {emulation}
\t$(CXX) -std=c++17 -O1 -ffp-contract=off -pthread -I. {emulation} -o emulate
\tmkdir -p $(OUT) && ./emulate $(DATA) $(OUT)
"""
    else:
        emu = f"""
# Intel's emulator: the kernel on the host CPU, run by the host program.
emulate: emulator host
\tmkdir -p $(OUT) && CL_CONTEXT_EMULATOR_DEVICE_INTELFPGA=1 ./host {top}_emu.aocx $(DATA) $(OUT)
"""
    lib = (
        f"""
lib: api/{api}_opencl.cpp api/{api}.h
\t$(CXX) -std=c++17 -O2 -shared -fPIC api/{api}_opencl.cpp -o lib{api}.so $$(aocl compile-config) $$(aocl link-config)
"""
        if api is not None
        else ""
    )
    where = f"device {board.name}: aoc -board={name}" if board is not None else "no --device: give BOARD="
    return f"""\
# Build {top} (stencilmap). aocx targets need the Intel FPGA SDK for OpenCL (aoc, aocl); {where}.
#   make hw [BOARD=<board>]            full compilation for the board ({top}.aocx; alias: aocx)
#   make report [BOARD=<board>]        aoc -rtl -report: the early area and loop report, no bitstream
#   make emulator                      aoc -march=emulator ({top}_emu.aocx, runs on the host CPU)
#   make emulate DATA=data OUT=out     run the design here{" (g++ channel emulation)" if emulation else " (on the emulator)"}
#   make host; ./host {top}.aocx data out
CXX ?= g++
BOARD ?= {name}
DATA ?= data
OUT ?= out

.PHONY: hw aocx report emulator emulate host clean{" lib" if api else ""}

hw aocx: {top}.aocx

{top}.aocx: {kernel}
\taoc -board=$(BOARD) -I. {kernel} -o $@

report: {kernel}
\taoc -rtl -report -board=$(BOARD) -I. {kernel} -o {top}_report.aocr

emulator: {kernel}
\taoc -march=emulator -I. {kernel} -o {top}_emu.aocx

host: host.cpp
\t$(CXX) -std=c++17 -O2 host.cpp -o host $$(aocl compile-config) $$(aocl link-config)
{emu}{lib}
clean:
\trm -rf host emulate {top}.aocx {top}_emu.aocx {top}_report.aocr {top} {top}_emu {top}_report{f" lib{api}.so" if api else ""}
"""


def readme(
    design: Design, program: Program, top: str, ports: tuple[Port, ...], pcm_header: str | None = None
) -> str:
    params = ", ".join(f"{k}={v}" for k, v in design.parameters)
    edit = (
        f"\nD (PCMs) and P_CELL (cells per cycle) are `#define`s in `{pcm_header}`: edit them to resize the\n"
        "kernel; every shift-register size and lag follows.\n"
        if pcm_header
        else ""
    )
    return f"""\
# {top}: Intel FPGA OpenCL of `{comment(program.name)}` ({design.arch} design)

Generated by stencilmap from the Design IR the simulator validated ({params}).
{edit}
Data: one raw little-endian C-order file `<field>.bin` per input (`numpy.ndarray.tofile`); inputs:
{", ".join(p.field for p in ports if p.direction == "in")}; outputs: {", ".join(p.field for p in ports if p.direction == "out")}.

Build on a board (needs the Intel FPGA SDK for OpenCL; `BOARD` defaults to the device file's
`aoc -board=` name when code was generated with `--device`):

    make hw BOARD=<your board>
    make host
    ./host {top}.aocx data out

`make report` runs `aoc -rtl -report` (loops, area); `make emulator` builds for Intel's CPU emulator
instead of a board. Every loop but the main pipeline loop is unrolled (`SM_UNROLL`, `#pragma unroll`
under `aoc`).
"""


def _serves(kernel: str, p: Port) -> bool:
    """Whether memory kernel ``kernel`` (``read_<field>`` / ``write_<field>``, on a partitioned design's
    device ``_d<N>`` after it) takes port ``p``."""
    base = re.sub(r"_d[0-9]+$", "", kernel)
    return (
        kernel.endswith(identifier(p.field))
        or base == f"{'read' if p.direction == 'in' else 'write'}_{identifier(p.field)}"
    )
