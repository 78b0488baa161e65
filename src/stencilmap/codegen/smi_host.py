"""The host of a design split over devices, in the form SMI's own examples take (StencilFlow §VI-B).

One MPI program for all devices (SMI's MPMD model: rank d runs device d's program): it includes the
``smi_generated_host.c`` that SMI's code generator writes from the programs' metadata (``codegen-host``:
one ``SmiInit_<program>(rank, ranks_count, routing_dir, context, program, buffers)`` per program, over
hlslib's OpenCL wrappers, which loads the routing tables and starts SMI's CKS/CKR kernels), and on
rank d loads ``<program d>.aocx``, calls ``SmiInit_<program d>`` for its ``SMI_Comm``, makes its memory
buffers, launches its readers, writers and SMI endpoint kernels (the rest are autorun) and writes the
outputs it holds. Inputs are raw little-endian ``<field>.bin`` files, read by every rank that uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.codegen.ctypes_ import bits
from stencilmap.codegen.registry import Port
from stencilmap.codegen.writer import Writer
from stencilmap.names import c_string, comment, identifier


@dataclass(frozen=True, slots=True)
class RankKernels:
    """What the host launches on one rank: its SMI program, its memory kernels with the port each takes,
    and its SMI endpoint kernels (each takes the rank's ``SMI_Comm``)."""

    program: str
    memory: tuple[tuple[str, Port], ...]
    smi: tuple[str, ...]


def host(top: str, ranks: tuple[RankKernels, ...]) -> str:
    """``mpirun -np N <top>_host DATA_DIR OUT_DIR [emulator]``: rank d runs ``ranks[d]``."""
    w = Writer()
    w.line(f"// Host of {top} over {len(ranks)} devices (stencilmap; StencilFlow §VI-B): one MPI rank per")
    w.line("// device, rank d running program <top>_rank<d>; the streams between devices are SMI channels.")
    w.line("// Built by SMI's flow (CMakeLists.txt or Makefile): SMI's code generator writes")
    w.line("// smi_generated_host.c (SmiInit_<program>) and the routing tables in smi-routes/.")
    w.line(f"// Usage: mpirun -np {len(ranks)} ./{top}_host DATA_DIR OUT_DIR [emulator]")
    w.line("#include <hlslib/intel/OpenCL.h>")
    w.line("#include <cstdio>")
    w.line("#include <fstream>")
    w.line("#include <future>")
    w.line("#include <string>")
    w.line("#include <utility>")
    w.line("#include <vector>")
    w.line(
        '#include "smi_generated_host.c"  // SMI: SmiInit_<program>, SMI_Comm, LoadRoutingTable, CHECK_MPI'
    )
    w.line()
    w.line('#define ROUTING_DIR "smi-routes/"')
    w.line("#if !defined(SM_DEVICES_PER_NODE)")
    w.line("#define SM_DEVICES_PER_NODE 1  // topology.json puts one FPGA on each node")
    w.line("#endif")
    w.line()
    w.line("using SmRoutingBuffers = std::vector<hlslib::ocl::Buffer<char, hlslib::ocl::Access::read>>;")
    w.line()
    with w.block("static bool sm_read(const std::string& path, std::vector<char>& data)"):
        w.line("std::ifstream f(path, std::ios::binary);")
        w.line("return static_cast<bool>(f.read(data.data(), static_cast<std::streamsize>(data.size())));")
    w.line()
    with w.block("static bool sm_write(const std::string& path, const std::vector<char>& data)"):
        w.line("std::ofstream f(path, std::ios::binary);")
        w.line("return static_cast<bool>(f.write(data.data(), static_cast<std::streamsize>(data.size())));")
    w.line()
    for d, rank in enumerate(ranks):
        _rank_function(w, d, rank)
    _main(w, top, ranks)
    return w.text()


def _rank_function(w: Writer, d: int, rank: RankKernels) -> None:
    name = identifier(rank.program)
    w.line(f"// Rank {d}: program {comment(rank.program)}.")
    signature = (
        f"static int sm_rank{d}(int ranks, const std::string& in_dir, const std::string& out_dir,"
        " hlslib::ocl::Context& context, hlslib::ocl::Program& program, SmRoutingBuffers& routing)"
    )
    with w.block(signature):
        w.line(f"const SMI_Comm comm = SmiInit_{name}({d}, ranks, ROUTING_DIR, context, program, routing);")
        directions = {p.direction for _, p in rank.memory}
        unused = [
            *([] if rank.smi else ["comm"]),
            *([] if "in" in directions else ["in_dir"]),
            *([] if "out" in directions else ["out_dir"]),
        ]
        if unused:
            w.line(" ".join(f"(void){name};" for name in unused))
        seen: set[tuple[str, str]] = set()
        for _, p in rank.memory:
            if (p.field, p.direction) in seen:
                continue
            seen.add((p.field, p.direction))
            buf, nbytes = _buffer(p), p.elements * bits(p.dtype) // 8
            access = "read" if p.direction == "in" else "write"
            w.line(f"std::vector<char> h_{buf}({nbytes});")
            if p.direction == "in":
                with w.block(f'if (!sm_read(in_dir + "/{c_string(p.field)}.bin", h_{buf}))'):
                    w.line(f'std::fprintf(stderr, "rank {d}: cannot read {c_string(p.field)}.bin\\n");')
                    w.line("return 1;")
                w.line(
                    f"auto d_{buf} = context.MakeBuffer<char, hlslib::ocl::Access::{access}>"
                    f"(h_{buf}.cbegin(), h_{buf}.cend());"
                )
            else:
                w.line(f"auto d_{buf} = context.MakeBuffer<char, hlslib::ocl::Access::{access}>({nbytes});")
        w.line("std::vector<hlslib::ocl::Kernel> kernels;")
        w.line(f"kernels.reserve({len(rank.memory) + len(rank.smi)});")
        for kernel, p in rank.memory:
            w.line(f'kernels.emplace_back(program.MakeKernel("{c_string(kernel)}", d_{_buffer(p)}));')
        for kernel in rank.smi:
            w.line(f'kernels.emplace_back(program.MakeKernel("{c_string(kernel)}", comm));')
        w.line("std::vector<std::future<std::pair<double, double>>> runs;")
        w.line("for (auto& k : kernels) runs.emplace_back(k.ExecuteTaskAsync());")
        w.line("for (auto& r : runs) r.wait();")
        for _, p in rank.memory:
            if p.direction != "out":
                continue
            buf = _buffer(p)
            w.line(f"d_{buf}.CopyToHost(h_{buf}.begin());")
            with w.block(f'if (!sm_write(out_dir + "/{c_string(p.field)}.bin", h_{buf}))'):
                w.line(f'std::fprintf(stderr, "rank {d}: cannot write {c_string(p.field)}.bin\\n");')
                w.line("return 1;")
        w.line("return 0;")
    w.line()


def _main(w: Writer, top: str, ranks: tuple[RankKernels, ...]) -> None:
    n = len(ranks)
    with w.block("int main(int argc, char** argv)"):
        w.line("CHECK_MPI(MPI_Init(&argc, &argv));")
        w.line("int rank = 0, ranks = 0;")
        w.line("CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));")
        w.line("CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &ranks));")
        with w.block(f"if ((argc != 3 && argc != 4) || ranks != {n})"):
            w.line(
                f'if (rank == 0) std::fprintf(stderr, "usage: mpirun -np {n} %s DATA_DIR OUT_DIR [emulator]\\n",'
                " argv[0]);"
            )
            w.line("MPI_Finalize();")
            w.line("return 2;")
        w.line('const bool emulator = argc == 4 && std::string(argv[3]) == "emulator";')
        w.line(f"static const char* const programs[{n}] = {{")
        with w.indent():
            for rank in ranks:
                w.line(f'"{c_string(rank.program)}",')
        w.line("};")
        w.line("const std::string name = programs[rank];")
        w.line("// SMI's layout: <program>/<program>.aocx, emulator_<rank>/<program>.aocx")
        w.line(
            'const std::string path = emulator ? "emulator_" + std::to_string(rank) + "/" + name + ".aocx"'
            ' : name + "/" + name + ".aocx";'
        )
        w.line("hlslib::ocl::Context context(emulator ? 0 : rank % SM_DEVICES_PER_NODE);")
        w.line("auto program = context.MakeProgram(path);")
        w.line("SmRoutingBuffers routing;")
        w.line("int status = 1;")
        with w.block("switch (rank)"):
            for d in range(n):
                w.line(
                    f"case {d}: status = sm_rank{d}(ranks, argv[1], argv[2], context, program, routing); break;"
                )
        w.line("CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));")
        w.line(f'if (rank == 0 && status == 0) std::printf("done: {c_string(top)}\\n");')
        w.line("MPI_Finalize();")
        w.line("return status;")


def _buffer(p: Port) -> str:
    return f"{p.direction}_{identifier(p.field)}"
