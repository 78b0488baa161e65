"""The C binding of a generated accelerator (SODA §4.1: the host calls the accelerator as a function).

``<program>.h`` declares ``extern "C" int <program>(const float* u, float* v, long rows, long cols)``:
one pointer per field, the inputs (``const``) then the outputs, each in declaration order, raw C-order
arrays as NumPy holds them (bool as one byte), then the grid's size along every axis. It returns 0 on
success; nonzero, with a one-line message on stderr, when the sizes are not the grid the kernel was
generated for (the kernel is specialised to its shape) or a pointer is null. The HLS kernel takes the
number of rows (the first size) at run time (``Api.rows``: SODA §4.5): there only the inner sizes must be
the generation's, and the rows at least 1 (at most ``max_rows`` where the kernel gathers a field on chip). Implementations: over XRT
(``<program>_xrt.cpp``, Vitis), over the OpenCL host API (``<program>_opencl.cpp``, Intel), and over the
C-simulation kernel (``<program>_csim.cpp``: ``make lib-csim``, what the tests call through ctypes).

Names come from ``stencilmap.names.identifier``: a program's name is untrusted text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stencilmap.codegen.ctypes_ import bits, ctype, storage
from stencilmap.codegen.registry import Port
from stencilmap.codegen.writer import Writer
from stencilmap.names import identifier

#: Names the function may not take: C and C++ keywords, ``main``, and the generated files' own stems
#: (``<program>.h`` sits beside ``kernel.h``); such a program's function gets ``_api`` after its name.
_RESERVED_WORDS = """alignas alignof and asm auto bool break case catch char char16_t char32_t class const constexpr
    const_cast continue decltype default delete do double dynamic_cast else enum explicit export extern
    false float for friend goto if inline int long mutable namespace new noexcept not nullptr operator or
    private protected public register reinterpret_cast restrict return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor main kernel host csim_main
    stencilmap_hls emulate and_eq bitand bitor compl not_eq or_eq xor_eq hls ap_int ap_uint ap_fixed ap_ufixed"""
#: ... and every name the C library headers of the generated host code declare (``printf``, ``exit``,
#: ``size_t``, ``std``: an ``extern "C"`` function of that name conflicts with theirs), and the generated
#: code's own prefix (``sm_``, ``SM_``: its helpers and macros).
_LIBRARY = Path(__file__).with_name("c_library_names.txt")
_RESERVED = frozenset(_RESERVED_WORDS.split()) | frozenset(
    line for line in _LIBRARY.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")
)


def reserved(name: str) -> bool:
    """Whether a C binding may not take ``name`` (it then gets ``_api`` after it)."""
    return name in _RESERVED or name.lower().startswith("sm_")


#: The size arguments' names by rank (``n0`` … beyond three axes).
_SIZES = {1: ("n",), 2: ("rows", "cols"), 3: ("planes", "rows", "cols")}


@dataclass(frozen=True, slots=True)
class Api:
    """The function: its C name, its pointer arguments (inputs then outputs, in declaration order:
    ``api``) and the grid it serves."""

    name: str
    ports: tuple[Port, ...]
    shape: tuple[int, ...]
    rows: bool = False  # the first size is the kernel's runtime argument (HLS), not fixed
    max_rows: int = 0  # with ``rows``: the most rows it takes (0: no bound)

    @property
    def sizes(self) -> tuple[str, ...]:
        return _SIZES.get(len(self.shape), tuple(f"n{a}" for a in range(len(self.shape))))

    def argument(self, p: Port) -> str:
        return f"{p.direction}_{identifier(p.field)}"

    def signature(self) -> str:
        args = [
            f"{'const ' if p.direction == 'in' else ''}{element_type(p.dtype)}* {self.argument(p)}"
            for p in self.ports
        ]
        args += [f"long {s}" for s in self.sizes]
        return f"int {self.name}({', '.join(args)})"


def api(
    name: str,
    ports: tuple[Port, ...],
    declared: tuple[str, ...],
    shape: tuple[int, ...],
    rows: bool = False,
    max_rows: int = 0,
) -> Api:
    """The function ``identifier(name)`` over ``ports`` ordered inputs first, then by ``declared``."""
    rank = {f: n for n, f in enumerate(declared)}
    ordered = sorted(ports, key=lambda p: (p.direction != "in", rank.get(p.field, len(rank))))
    fn = identifier(name)
    return Api(f"{fn}_api" if reserved(fn) else fn, tuple(ordered), shape, rows, max_rows)


def elements_expr(p: Port, rows: str = "rows") -> str:
    """The port's elements for ``rows`` rows, as C text."""
    return f"{rows} * {p.per_row}L" if p.per_row else f"{p.elements}L"


def words_expr(p: Port, burst: int, rows: str = "rows") -> str:
    """The port's burst words for ``rows`` rows, as C text."""
    return f"({elements_expr(p, rows)} * {bits(p.dtype)}L + {burst - 1}L) / {burst}L"


def bytes_expr(p: Port, rows: str = "rows") -> str:
    """The port's bytes (as the caller holds it) for ``rows`` rows, as C text."""
    return f"{elements_expr(p, rows)} * {bits(p.dtype) // 8}L"


def element_type(dtype: str) -> str:
    """The C type of one array element as the caller holds it (NumPy's storage; bool as one byte)."""
    return ctype(storage(dtype))


def _bytes(p: Port) -> int:
    return p.elements * bits(p.dtype) // 8


def header(api: Api) -> str:
    w = Writer()
    guard = f"STENCILMAP_API_{api.name.upper()}_H"
    w.line(f"/* {api.name}: the generated accelerator as a C function (stencilmap; SODA §4.1).")
    fields = ", ".join(f"{api.argument(p)} ({p.elements} x {p.dtype})" for p in api.ports)
    w.line(f" * Arrays, C order: {fields}.")
    if api.rows:
        inner = "".join(f" x {n}" for n in api.shape[1:])
        bound = f" (at most {api.max_rows})" if api.max_rows else ""
        w.line(
            f" * Grid: {api.sizes[0]}{inner}, any {api.sizes[0]} >= 1{bound} (generated at {api.shape[0]}): the arrays"
        )
        w.line(" * spanning the first axis hold that many; other sizes return nonzero with a message.")
    else:
        w.line(
            f" * Grid: {' x '.join(str(n) for n in api.shape)}; other sizes return nonzero with a message."
        )
    w.line(" * Returns 0 on success. */")
    w.line(f"#ifndef {guard}")
    w.line(f"#define {guard}")
    w.line()
    w.line("#include <stdint.h>")
    w.line()
    w.line("#ifdef __cplusplus")
    w.line('extern "C" {')
    w.line("#endif")
    w.line()
    w.line(f"{api.signature()};")
    w.line()
    w.line("#ifdef __cplusplus")
    w.line("}")
    w.line("#endif")
    w.line()
    w.line("#endif")
    return w.text()


def _checks(w: Writer, api: Api) -> None:
    """The sizes must be the kernel's grid (with ``rows``: its inner sizes, and rows in range), the
    pointers non-null: else a message and status 1."""
    fmt = " x ".join("%ld" for _ in api.sizes)
    if api.rows:
        first = api.sizes[0]
        wrong = [f"{first} < 1L"] + ([f"{first} > {api.max_rows}L"] if api.max_rows else [])
        wrong += [f"{s} != {n}L" for s, n in zip(api.sizes[1:], api.shape[1:], strict=True)]
        want = " || ".join(wrong)
        bound = f"1 to {api.max_rows}" if api.max_rows else "at least 1"
        grid = " x ".join([f"{first} ({bound})", *(str(n) for n in api.shape[1:])])
    else:
        want = " || ".join(f"{s} != {n}L" for s, n in zip(api.sizes, api.shape, strict=True))
        grid = " x ".join(str(n) for n in api.shape)
    with w.block(f"if ({want})"):
        w.line(
            f'std::fprintf(stderr, "{api.name}: grid {fmt}, but this kernel was generated for {grid}\\n", {", ".join(api.sizes)});'
        )
        w.line("return 1;")
    nulls = " || ".join(f"!{api.argument(p)}" for p in api.ports)
    with w.block(f"if ({nulls})"):
        w.line(f'std::fprintf(stderr, "{api.name}: a null array pointer\\n");')
        w.line("return 1;")


def csim(api: Api, top: str, burst: int, kernel: tuple[Port, ...]) -> str:
    """The function over the C-simulation kernel: pack into burst words, call the top function, unpack."""
    w = Writer()
    w.line(f"// {api.name} over the C simulation of {top} (stencilmap): `make lib-csim`, g++ only.")
    w.line("#include <cstdio>")
    w.line("#include <vector>")
    w.line()
    w.line('#include "kernel.h"')
    w.line(f'#include "{api.name}.h"')
    w.line()
    w.line("namespace stencilmap_binding {  // apart from the function's own (untrusted) name")
    w.line()
    w.line(f"typedef ap_uint<{burst}> sm_word_t;")
    w.line()
    with w.block("static void sm_pack(const void* data, long bytes, std::vector<sm_word_t>& words)"):
        w.line("const unsigned char* raw = static_cast<const unsigned char*>(data);")
        with w.block("for (long i = 0; i < bytes; ++i)"):
            b = burst // 8
            w.line(f"words[i / {b}].range((int)(i % {b}) * 8 + 7, (int)(i % {b}) * 8) = (uint64_t)raw[i];")
    w.line()
    with w.block("static void sm_unpack(const std::vector<sm_word_t>& words, long bytes, void* data)"):
        w.line("unsigned char* raw = static_cast<unsigned char*>(data);")
        with w.block("for (long i = 0; i < bytes; ++i)"):
            b = burst // 8
            w.line(f"sm_word_t word = words[i / {b}];")
            w.line(
                f"raw[i] = (unsigned char)word.range((int)(i % {b}) * 8 + 7, (int)(i % {b}) * 8).to_uint64();"
            )
    w.line()
    w.line("}  // namespace stencilmap_binding")
    w.line()
    with w.block(f'extern "C" {api.signature()}'):
        w.line("using namespace stencilmap_binding;")
        _checks(w, api)
        rows = api.sizes[0]
        for p in api.ports:
            w.line(f"std::vector<sm_word_t> w_{api.argument(p)}({words_expr(p, burst, rows)});")
            if p.direction == "in":
                w.line(f"sm_pack({api.argument(p)}, {bytes_expr(p, rows)}, w_{api.argument(p)});")
        call = [f"w_{api.argument(p)}.data()" for p in kernel] + [rows]
        w.line(f"{top}({', '.join(call)});  // its argument order")
        for p in api.ports:
            if p.direction == "out":
                w.line(f"sm_unpack(w_{api.argument(p)}, {bytes_expr(p, rows)}, {api.argument(p)});")
        w.line("return 0;")
    return w.text()


def xrt(api: Api, top: str, burst: int, kernel: tuple[Port, ...]) -> str:
    """The function over XRT's native API: the xclbin from ``$STENCILMAP_XCLBIN`` (else ``<top>.hw.xclbin``)."""
    w = Writer()
    w.line(f"// {api.name} over XRT (Vitis) for the kernel {top} (stencilmap): `make lib XILINX_XRT=...`.")
    w.line(f"// The xclbin: $STENCILMAP_XCLBIN, else {top}.hw.xclbin in the working folder.")
    w.line("#include <cstdio>")
    w.line("#include <cstdlib>")
    w.line("#include <cstring>")
    w.line("#include <exception>")
    w.line("#include <vector>")
    w.line()
    w.line("#include <xrt/xrt_bo.h>")
    w.line("#include <xrt/xrt_device.h>")
    w.line("#include <xrt/xrt_kernel.h>")
    w.line()
    w.line(f'#include "{api.name}.h"')
    w.line()
    with w.block(f'extern "C" {api.signature()}'):
        _checks(w, api)
        with w.block("try"):
            w.line('const char* path = std::getenv("STENCILMAP_XCLBIN");')
            w.line("xrt::device device(0);")
            w.line(f'const auto uuid = device.load_xclbin(path ? path : "{top}.hw.xclbin");')
            w.line(f'xrt::kernel kernel(device, uuid, "{top}");')
            rows = api.sizes[0]
            for n, p in enumerate(kernel):  # group_id: the kernel's argument index
                size = f"({words_expr(p, burst, rows)}) * {burst // 8}L"
                name = f"bo_{api.argument(p)}"
                w.line(f"xrt::bo {name}(device, {size}, kernel.group_id({n}));")
                if p.direction == "in":
                    with w.block(""):
                        w.line(f"std::vector<char> bytes({size}, 0);")
                        w.line(f"std::memcpy(bytes.data(), {api.argument(p)}, {bytes_expr(p, rows)});")
                        w.line(f"{name}.write(bytes.data());")
                        w.line(f"{name}.sync(XCL_BO_SYNC_BO_TO_DEVICE);")
            call = [f"bo_{api.argument(p)}" for p in kernel] + [rows]
            w.line(f"auto run = kernel({', '.join(call)});  // the rows: its scalar argument")
            w.line("run.wait();")
            for p in api.ports:
                if p.direction == "out":
                    size = f"({words_expr(p, burst, rows)}) * {burst // 8}L"
                    name = f"bo_{api.argument(p)}"
                    with w.block(""):
                        w.line(f"{name}.sync(XCL_BO_SYNC_BO_FROM_DEVICE);")
                        w.line(f"std::vector<char> bytes({size});")
                        w.line(f"{name}.read(bytes.data());")
                        w.line(f"std::memcpy({api.argument(p)}, bytes.data(), {bytes_expr(p, rows)});")
        with w.block("catch (const std::exception& e)", tail="}"):
            w.line(f'std::fprintf(stderr, "{api.name}: %s\\n", e.what());')
            w.line("return 2;")
        w.line("return 0;")
    return w.text()


def opencl(api: Api, top: str, kernels: list[tuple[str, tuple[Port, ...]]]) -> str:
    """The function over the OpenCL host API (Intel FPGA SDK): the ``.aocx`` from ``$STENCILMAP_AOCX``
    (else ``<top>.aocx``); ``kernels``: each kernel the host launches with the ports it takes."""
    w = Writer()
    w.line(f"// {api.name} over the OpenCL host API (Intel FPGA) for {top} (stencilmap).")
    w.line(f"// The bitstream: $STENCILMAP_AOCX, else {top}.aocx in the working folder.")
    w.line("#define CL_TARGET_OPENCL_VERSION 120")
    w.line("#include <CL/cl.h>")
    w.line("#include <cstdio>")
    w.line("#include <cstdlib>")
    w.line("#include <fstream>")
    w.line("#include <iterator>")
    w.line("#include <vector>")
    w.line()
    w.line(f'#include "{api.name}.h"')
    w.line()
    w.line(
        f'#define SM_CHECK(x) do {{ cl_int e_ = (x); if (e_ != CL_SUCCESS) {{ std::fprintf(stderr, "{api.name}: %s: %d\\n", #x, e_); return 2; }} }} while (0)'
    )
    w.line()
    with w.block(f'extern "C" {api.signature()}'):
        _checks(w, api)
        w.line('const char* path = std::getenv("STENCILMAP_AOCX");')
        w.line(f'std::ifstream bin(path ? path : "{top}.aocx", std::ios::binary);')
        w.line(
            f'if (!bin) {{ std::fprintf(stderr, "{api.name}: cannot read the bitstream file\\n"); return 2; }}'
        )
        w.line(
            "std::vector<unsigned char> image((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());"
        )
        w.line("cl_platform_id platform; cl_device_id device; cl_int err;")
        w.line("SM_CHECK(clGetPlatformIDs(1, &platform, nullptr));")
        w.line("SM_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr));")
        w.line(
            "cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err); SM_CHECK(err);"
        )
        w.line("const unsigned char* image_ptr = image.data(); size_t image_size = image.size();")
        w.line(
            "cl_program program = clCreateProgramWithBinary(ctx, 1, &device, &image_size, &image_ptr, nullptr, &err); SM_CHECK(err);"
        )
        w.line('SM_CHECK(clBuildProgram(program, 1, &device, "", nullptr, nullptr));')
        for p in api.ports:
            flags = "CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR" if p.direction == "in" else "CL_MEM_WRITE_ONLY"
            ptr = f"(void*){api.argument(p)}" if p.direction == "in" else "nullptr"
            w.line(
                f"cl_mem d_{api.argument(p)} = clCreateBuffer(ctx, {flags}, {_bytes(p)}, {ptr}, &err); SM_CHECK(err);"
            )
        w.line("std::vector<cl_command_queue> queues;")
        for kname, args in kernels:
            with w.block(""):
                w.line(f'cl_kernel k = clCreateKernel(program, "{kname}", &err); SM_CHECK(err);')
                for n, p in enumerate(args):
                    w.line(f"SM_CHECK(clSetKernelArg(k, {n}, sizeof(cl_mem), &d_{api.argument(p)}));")
                w.line("cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err); SM_CHECK(err);")
                w.line("SM_CHECK(clEnqueueTask(q, k, 0, nullptr, nullptr));")
                w.line("queues.push_back(q);")
        w.line("for (cl_command_queue q : queues) SM_CHECK(clFinish(q));")
        for p in api.ports:
            if p.direction == "out":
                w.line(
                    f"SM_CHECK(clEnqueueReadBuffer(queues[0], d_{api.argument(p)}, CL_TRUE, 0, {_bytes(p)}, {api.argument(p)}, 0, nullptr, nullptr));"
                )
        w.line("return 0;")
    return w.text()
