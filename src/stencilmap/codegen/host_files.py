"""Host programs and build files of the generated code (HLS: XRT host, C-simulation testbench,
``v++`` connectivity, Makefile, README).

Data files are raw little-endian C-order arrays, ``<field>.bin`` in a data folder (bool as one byte),
exactly what ``numpy.ndarray.tofile`` writes; the host packs them into burst-wide words unchanged. The
testbench and the XRT host take the number of rows as an optional last argument (default ``SM_ROWS``, the
generation's): the kernel's runtime argument (``hls``), the files holding that many rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.codegen.binding import bytes_expr, words_expr
from stencilmap.codegen.layout import Layout
from stencilmap.codegen.registry import Port
from stencilmap.codegen.writer import Writer
from stencilmap.names import comment, identifier


@dataclass(frozen=True, slots=True)
class Board:
    """What the scripts take from the device file (``--device``): its part (Vitis ``set_part``), its
    ``aoc -board=`` name (Intel), its kernel clock and its memory (bank count, DDR or HBM)."""

    name: str
    part: str
    board: str
    clock_mhz: float
    banks: int
    memory: str  # the memory's name in v++ connectivity: DDR or HBM

    @property
    def period_ns(self) -> str:
        return f"{1000.0 / self.clock_mhz:.3f}"


def board_of(device: str | None) -> Board | None:
    """The device file's facts the scripts carry; None without ``--device`` (the scripts then ask)."""
    if device is None:
        return None
    from stencilmap.device.catalog import load_device

    dev = load_device(device)
    if dev.kind != "fpga":
        return None
    memory = "HBM" if dev.memory_kind == "hbm" else "DDR"
    return Board(dev.name, dev.part or "", dev.board or "", dev.clock_mhz, dev.dram_banks, memory)


def sizing(w: Writer, ports: tuple[Port, ...], burst: int, rows: int, max_rows: int) -> None:
    """``SM_ROWS`` (the generation's rows), ``SM_MAX_ROWS`` and each port's burst words for a number of
    rows (``sm_words_<port>``), for ``kernel.h`` and the XRT host (which does without the HLS headers)."""
    w.line(f"#define SM_ROWS {rows}L  // the rows generated for: the default, the trip counts' hint")
    w.line(f"#define SM_MAX_ROWS {max_rows}L  // the most rows the kernel takes (0: no bound)")
    w.line()
    w.line("// Burst words of each port for a number of rows (a field without the rows' axis: a constant).")
    for p in ports:
        w.line(f"static inline long sm_words_{p.direction}_{identifier(p.field)}(long rows) {{")
        w.line("  (void)rows;" if not p.per_row else f"  // rows x {p.per_row} x {p.dtype}")
        w.line(f"  return {words_expr(p, burst)};")
        w.line("}")
    w.line()


def hls_testbench(top: str, ports: tuple[Port, ...], burst: int) -> str:
    """``csim_main DATA_DIR OUT_DIR``: read every input, run the top function once, write the outputs."""
    w = Writer()
    w.line(f"// C-simulation testbench of {top} (stencilmap): g++ only, no vendor tools.")
    w.line("// Usage: csim DATA_DIR OUT_DIR [ROWS] (raw little-endian <field>.bin files in and out; ROWS:")
    w.line("// the grid's rows, the kernel's runtime argument, default SM_ROWS).")
    w.line("#include <cstdio>")
    w.line("#include <cstdlib>")
    w.line("#include <string>")
    w.line("#include <vector>")
    w.line()
    w.line('#include "kernel.h"')
    w.line()
    w.line(f"typedef ap_uint<{burst}> word_t;")
    w.line()
    with w.block("static bool load(const std::string& path, std::vector<word_t>& words, long bytes)"):
        w.line('FILE* f = std::fopen(path.c_str(), "rb");')
        w.line('if (!f) { std::fprintf(stderr, "cannot read %s\\n", path.c_str()); return false; }')
        w.line("std::vector<unsigned char> raw(bytes);")
        w.line("const long got = (long)std::fread(raw.data(), 1, raw.size(), f);")
        w.line("std::fclose(f);")
        w.line(
            'if (got != bytes) { std::fprintf(stderr, "%s: %ld bytes, expected %ld\\n", path.c_str(), got, bytes); return false; }'
        )
        with w.block("for (long i = 0; i < bytes; ++i)"):
            w.line(
                f"words[i / {burst // 8}].range((int)(i % {burst // 8}) * 8 + 7, (int)(i % {burst // 8}) * 8) = (uint64_t)raw[i];"
            )
        w.line("return true;")
    w.line()
    with w.block("static bool save(const std::string& path, const std::vector<word_t>& words, long bytes)"):
        w.line("std::vector<unsigned char> raw(bytes);")
        with w.block("for (long i = 0; i < bytes; ++i)"):
            w.line(f"word_t word = words[i / {burst // 8}];")
            w.line(
                f"raw[i] = (unsigned char)word.range((int)(i % {burst // 8}) * 8 + 7, (int)(i % {burst // 8}) * 8).to_uint64();"
            )
        w.line('FILE* f = std::fopen(path.c_str(), "wb");')
        w.line("if (!f) return false;")
        w.line("const bool ok = std::fwrite(raw.data(), 1, raw.size(), f) == raw.size();")
        w.line("std::fclose(f);")
        w.line("return ok;")
    w.line()
    with w.block("int main(int argc, char** argv)"):
        w.line(
            'if (argc != 3 && argc != 4) { std::fprintf(stderr, "usage: %s DATA_DIR OUT_DIR [ROWS]\\n", argv[0]); return 2; }'
        )
        w.line("const std::string in_dir = argv[1], out_dir = argv[2];")
        _rows_argument(w, "argv[3]", "argc == 4")
        for p in ports:
            name = f"{p.direction}_{identifier(p.field)}"
            w.line(f"std::vector<word_t> {name}(sm_words_{name}(rows));")
            if p.direction == "in":
                w.line(f'if (!load(in_dir + "/{p.field}.bin", {name}, {bytes_expr(p)})) return 1;')
        call = [f"{p.direction}_{identifier(p.field)}.data()" for p in ports] + ["rows"]
        w.line(f"{top}({', '.join(call)});")
        for p in ports:
            if p.direction == "out":
                w.line(
                    f'if (!save(out_dir + "/{p.field}.bin", out_{identifier(p.field)}, {bytes_expr(p)})) return 1;'
                )
        w.line("return 0;")
    return w.text()


def _rows_argument(w: Writer, arg: str, given: str) -> None:
    """``const long rows``: the argument if given (1 to SM_MAX_ROWS), else SM_ROWS; a bad one is one
    line on stderr and status 2."""
    w.line(f"const long rows = {given} ? std::atol({arg}) : SM_ROWS;")
    with w.block("if (rows < 1 || (SM_MAX_ROWS > 0 && rows > SM_MAX_ROWS))"):
        w.line(
            'std::fprintf(stderr, "ROWS must be from 1 to %ld\\n", SM_MAX_ROWS > 0 ? SM_MAX_ROWS : 2147483647L);'
        )
        w.line("return 2;")


def xrt_host(top: str, ports: tuple[Port, ...], burst: int, rows: int, max_rows: int) -> str:
    """A host for real boards (XRT native API): load the xclbin, move the data, run, read back."""
    w = Writer()
    w.line(f"// Host program of {top} for a Xilinx board (XRT native API), generated by stencilmap.")
    w.line("// Usage: host KERNEL.xclbin DATA_DIR OUT_DIR [ROWS] (raw little-endian <field>.bin files; ROWS:")
    w.line("// the grid's rows, the kernel's runtime argument, default SM_ROWS).")
    w.line("#include <cstdio>")
    w.line("#include <cstdlib>")
    w.line("#include <fstream>")
    w.line("#include <string>")
    w.line("#include <vector>")
    w.line()
    w.line("#include <xrt/xrt_bo.h>")
    w.line("#include <xrt/xrt_device.h>")
    w.line("#include <xrt/xrt_kernel.h>")
    w.line()
    sizing(w, ports, burst, rows, max_rows)
    with w.block("int main(int argc, char** argv)"):
        w.line(
            'if (argc != 4 && argc != 5) { std::fprintf(stderr, "usage: %s KERNEL.xclbin DATA_DIR OUT_DIR [ROWS]\\n", argv[0]); return 2; }'
        )
        w.line("const std::string in_dir = argv[2], out_dir = argv[3];")
        _rows_argument(w, "argv[4]", "argc == 5")
        w.line("xrt::device device(0);")
        w.line("const auto uuid = device.load_xclbin(argv[1]);")
        w.line(f'xrt::kernel kernel(device, uuid, "{top}");')
        for n, p in enumerate(ports):
            name = f"bo_{p.direction}_{identifier(p.field)}"
            size = f"sm_words_{p.direction}_{identifier(p.field)}(rows) * {burst // 8}L"
            w.line(f"xrt::bo {name}(device, {size}, kernel.group_id({n}));")
            if p.direction == "in":
                nbytes = bytes_expr(p)
                with w.block(""):
                    w.line(f'std::ifstream f(in_dir + "/{p.field}.bin", std::ios::binary);')
                    w.line(f"std::vector<char> bytes({size}, 0);")
                    w.line(
                        f'if (!f.read(bytes.data(), {nbytes})) {{ std::fprintf(stderr, "cannot read {p.field}.bin\\n"); return 1; }}'
                    )
                    w.line(f"{name}.write(bytes.data());")
                    w.line(f"{name}.sync(XCL_BO_SYNC_BO_TO_DEVICE);")
        call = [f"bo_{p.direction}_{identifier(p.field)}" for p in ports] + ["rows"]
        w.line(f"auto run = kernel({', '.join(call)});  // the rows: its scalar argument")
        w.line("run.wait();")
        for p in ports:
            if p.direction != "out":
                continue
            name = f"bo_out_{identifier(p.field)}"
            nbytes = bytes_expr(p)
            with w.block(""):
                w.line(f"{name}.sync(XCL_BO_SYNC_BO_FROM_DEVICE);")
                w.line(f"std::vector<char> bytes(sm_words_out_{identifier(p.field)}(rows) * {burst // 8}L);")
                w.line(f"{name}.read(bytes.data());")
                w.line(f'std::ofstream f(out_dir + "/{p.field}.bin", std::ios::binary);')
                w.line(f"f.write(bytes.data(), {nbytes});")
        w.line('std::printf("done\\n");')
        w.line("return 0;")
    return w.text()


def connectivity(top: str, ports: tuple[Port, ...], board: Board | None) -> str:
    """``v++ --config``: every port its own m_axi bundle, connected to the bank the program gives it (on a
    multi-bank board inputs and outputs are separate masters; HBM boards name pseudo-channels)."""
    memory = board.memory if board is not None else "DDR"
    w = Writer()
    where = f" of {board.name}" if board is not None else ""
    w.line(f"# v++ connectivity of {top} (stencilmap): each port's m_axi bundle to its bank{where}.")
    w.line("[connectivity]")
    w.line(f"nk={top}:1:{top}_1")
    for p in ports:
        w.line(f"sp={top}_1.{p.direction}_{identifier(p.field)}:{memory}[{p.bank}]")
    return w.text()


def hls_tcl(top: str, board: Board | None) -> str:
    """``vitis_hls -f hls.tcl``: the step (``csim``, ``csynth``, ``cosim``) from ``$STEP``; the part and
    clock of the device file (``--device``), else ``$PART`` and 300 MHz."""
    w = Writer()
    w.line(f"# vitis_hls -f hls.tcl: C simulation, synthesis and co-simulation of {top} (stencilmap).")
    w.line("# STEP=csim|csynth|cosim (default csynth), DATA and OUT: folders of the C-simulation testbench.")
    w.line(f"open_project -reset {top}_hls")
    w.line(f"set_top {top}")
    w.line("add_files kernel.cpp -cflags {-I.}")
    w.line("add_files -tb csim_main.cpp -cflags {-I.}")
    w.line("open_solution -reset solution -flow_target vitis")
    if board is not None:
        w.line(f"# device {board.name}: part and kernel clock ({board.clock_mhz:g} MHz) from its device file")
        w.line(f"set_part {{{board.part}}}")
        w.line(f"create_clock -period {board.period_ns} -name default")
    else:
        w.line("# no --device was given: the part comes from $PART, the clock is 300 MHz")
        w.line(
            'if {![info exists ::env(PART)] || $::env(PART) eq ""} { error "set PART (or generate with --device)" }'
        )
        w.line("set_part $::env(PART)")
        w.line("create_clock -period 3.333 -name default")
    w.line('set step [expr {[info exists ::env(STEP)] ? $::env(STEP) : "csynth"}]')
    w.line(
        'set argv_tb "[expr {[info exists ::env(DATA)] ? $::env(DATA) : "data"}] [expr {[info exists ::env(OUT)] ? $::env(OUT) : "out"}]"'
    )
    with w.block('if {$step eq "csim"}'):
        w.line("csim_design -argv $argv_tb")
    with w.block('if {$step eq "csynth" || $step eq "cosim"}'):
        w.line("csynth_design")
    with w.block('if {$step eq "cosim"}'):
        w.line("cosim_design -argv $argv_tb")
    w.line("exit")
    return w.text()


def hls_makefile(top: str, board: Board | None, api: str) -> str:
    part = board.part if board is not None else ""
    freq = f"{board.clock_mhz:g}" if board is not None else "300"
    rules = f"""\
# Build {top} (stencilmap). `make csim` and `make lib-csim` need only g++; the others the Xilinx tools.
#   make csim DATA=data OUT=out [ROWS=n]   C simulation (executable {top}_csim) with the bundled stand-ins
#   make csim HLS_INCLUDE=$$XILINX_HLS/include   ... with the vendor's hls_stream.h / ap_int.h
#   make lib-csim                      lib{api}_csim.so: the C binding (api/{api}.h) over the C simulation
#   make csynth | cosim                vitis_hls: synthesis, C/RTL co-simulation (part {part or "$(PART)"})
#   make sw_emu | hw_emu | hw PLATFORM=<platform>   v++: {top}.<target>.xclbin at {freq} MHz
#   make host XILINX_XRT=/opt/xilinx/xrt; ./host {top}.hw.xclbin data out [rows]
# ROWS: the grid's rows, the kernel's runtime argument (default: those it was generated for, SM_ROWS).
#   make lib XILINX_XRT=/opt/xilinx/xrt   lib{api}.so: the C binding over XRT (XCLBIN= at run time)
CXX ?= g++
HLS_INCLUDE ?= csim_include
DATA ?= data
OUT ?= out
ROWS ?=
PLATFORM ?=
PART ?= {part}
KERNEL_FREQ ?= {freq}
OPT ?= -O1
CSIM_FLAGS = -std=c++14 $(OPT) -ffp-contract=off -fno-fast-math -Wno-unknown-pragmas -I. -I$(HLS_INCLUDE)
VPP_FLAGS = --platform $(PLATFORM) --kernel_frequency $(KERNEL_FREQ) -I.

.PHONY: csim csynth cosim sw_emu hw_emu hw host lib lib-csim clean

csim: {top}_csim
\tmkdir -p $(OUT) && ./{top}_csim $(DATA) $(OUT) $(ROWS)

kernel_csim.o: kernel.cpp kernel.h stencilmap_hls.h
\t$(CXX) $(CSIM_FLAGS) -fPIC -c kernel.cpp -o $@

{top}_csim: kernel_csim.o csim_main.cpp
\t$(CXX) $(CSIM_FLAGS) kernel_csim.o csim_main.cpp -o $@

lib-csim: lib{api}_csim.so

lib{api}_csim.so: kernel_csim.o api/{api}_csim.cpp api/{api}.h
\t$(CXX) $(CSIM_FLAGS) -shared -fPIC kernel_csim.o api/{api}_csim.cpp -o $@

csynth cosim:
\tSTEP=$@ PART='$(PART)' DATA='$(abspath $(DATA))' OUT='$(abspath $(OUT))' vitis_hls -f hls.tcl

{top}.%.xo: kernel.cpp kernel.h stencilmap_hls.h
\tv++ -c -t $* $(VPP_FLAGS) -k {top} -o $@ kernel.cpp

{top}.%.xclbin: {top}.%.xo connectivity.cfg
\tv++ -l -t $* $(VPP_FLAGS) --config connectivity.cfg -o $@ $<

sw_emu hw_emu: %: {top}.%.xclbin host
\temconfigutil --platform $(PLATFORM)
\tmkdir -p $(OUT) && XCL_EMULATION_MODE=$@ ./host {top}.$@.xclbin $(DATA) $(OUT) $(ROWS)

hw: {top}.hw.xclbin

host: host.cpp
\t$(CXX) -std=c++17 -O2 -I$(XILINX_XRT)/include host.cpp -o host -L$(XILINX_XRT)/lib -lxrt_coreutil -pthread

lib: api/{api}_xrt.cpp api/{api}.h
\t$(CXX) -std=c++17 -O2 -shared -fPIC -I$(XILINX_XRT)/include api/{api}_xrt.cpp -o lib{api}.so -L$(XILINX_XRT)/lib -lxrt_coreutil -pthread

clean:
\trm -rf {top}_csim kernel_csim.o lib{api}_csim.so lib{api}.so host *.xo *.xclbin {top}_hls _x .Xil *.log emconfig.json
"""
    return rules


def hls_readme(
    lay: Layout, top: str, ports: tuple[Port, ...], burst: int, board: Board | None, api: str, max_rows: int
) -> str:
    d = lay.design
    params = ", ".join(f"{k}={v}" for k, v in d.parameters)
    kinds = ", ".join(f"{n} {k}" for k, n in d.kinds().items())
    memory = board.memory if board is not None else "DDR"
    banks = ", ".join(
        f"`{p.direction}_{identifier(p.field)}` (bundle `{bundle(p)}`) → {memory}[{p.bank}]" for p in ports
    )
    inner = " × ".join(str(n) for n in lay.shape[1:]) or "none: the grid is the rows"
    bound = (
        f", and takes at most {max_rows} (`SM_MAX_ROWS`: its writer gathers the field on chip)"
        if max_rows
        else ""
    )
    target = (
        f"device `{board.name}`: part `{board.part}`, {board.clock_mhz:g} MHz"
        if board is not None
        else "no device was named (`--device`): give `PART=` to `make csynth`"
    )
    return f"""\
# {top}: Vitis HLS kernel of `{comment(lay.program.name)}` ({d.arch} design)

Generated by stencilmap from the Design IR the simulator validated ({params}): {kinds}.
Scripts carry the {target}.

Files: `kernel.cpp` (one function per module, `hls::stream` channels, top function under
`#pragma HLS dataflow`, C linkage), `kernel.h`, `stencilmap_hls.h` (beats and packing), `csim_main.cpp`
(C-simulation testbench), `host.cpp` (XRT host), `connectivity.cfg` (`v++` bank mapping), `hls.tcl`,
`Makefile`, and the C binding `api/{api}.h` (over XRT: `api/{api}_xrt.cpp`; over the C simulation:
`api/{api}_csim.cpp`; in `api/` so that no program name shadows a system header). Memory ports are
{burst}-bit `m_axi` words, each its own bundle: {banks}. Writers
assemble whole words and write each once: no output port is read.

Data: one raw little-endian C-order file `<field>.bin` per input (`numpy.ndarray.tofile`).

Rows: the kernel takes the number of rows (the first axis) at run time, its last argument `rows`
(SODA §4.5); the other sizes are fixed ({inner}). It was generated for {lay.shape[0]} rows (`SM_ROWS`, the
default){bound}. Give another count as the hosts' last argument (`make csim ROWS=n`,
`./host X.xclbin data out n`) or as the binding's first size, with data files of that many rows.

Build on a board (needs Vitis and XRT):

    make hw PLATFORM=<your platform>          # or sw_emu / hw_emu (they also run the host)
    make host XILINX_XRT=/opt/xilinx/xrt
    ./host {top}.hw.xclbin data out

`make csynth` / `make cosim` run `vitis_hls -f hls.tcl` (part and clock from the device file).

C simulation here (g++ only): `make csim DATA=data OUT=out` (add `HLS_INCLUDE=$XILINX_HLS/include` to
use the vendor headers instead of the bundled stand-ins in `csim_include/`); `make lib-csim` builds
`lib{api}_csim.so`, the function of `{api}.h` over the C simulation.
"""


def bundle(p: Port) -> str:
    """The port's own ``m_axi`` bundle: inputs and outputs are separate AXI masters, each connected to
    the bank the program gives it (``connectivity``)."""
    return f"gmem_{p.direction}_{identifier(p.field)}"
