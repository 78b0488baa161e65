"""Build files of a design split over devices, following SMI's own flow (StencilFlow §VI-B).

SMI (spcl/SMI) builds an application in four steps, which its ``smi_target`` CMake function chains:
``codegen/main.py codegen-device`` runs SMI's source rewriter over each program's kernel file (it
specialises every ``SMI_Open_*_channel`` / ``SMI_Push`` / ``SMI_Pop`` to its port and type), writes the
program's ``smi_generated_device.cl`` (SMI's CKS/CKR kernels, the port's channels) and its metadata
``<program>.json``; ``route`` writes every rank's routing tables and a hostfile from the topology;
``codegen-host`` writes ``smi_generated_host.c``; then ``aoc`` compiles each program with its generated
device file, and the host is compiled against SMI's headers and hlslib.

``CMakeLists.txt`` is that flow in the shape of SMI's ``examples/CMakeLists.txt`` (one ``smi_target``
call; it is configured inside an SMI checkout, whose top level defines ``smi_target``). ``Makefile`` runs
the same commands with make, from any folder, given ``SMI=<checkout>``.
"""

from __future__ import annotations

#: SMI's defaults (``smi_target``'s optional arguments; ``codegen-device``'s options).
CONSECUTIVE_READS = 8
MAX_RANKS = 8


def max_ranks(devices: int) -> int:
    """SMI's ``--max-ranks`` (the size of its routing structures): its default 8, or more devices."""
    return max(MAX_RANKS, devices)


def cmake(top: str, programs: tuple[str, ...]) -> str:
    n = len(programs)
    kernels = ";".join(f"${{CMAKE_CURRENT_SOURCE_DIR}}/kernels/{p}.cl" for p in programs)
    text = f"""\
# {top} over {n} devices (stencilmap): an SMI application in the shape of SMI's examples/CMakeLists.txt.
# Configure it inside a checkout of SMI (https://github.com/spcl/SMI): copy this folder to
# SMI/examples/{top} and add `add_subdirectory({top})` to SMI/examples/CMakeLists.txt. SMI's top-level
# CMakeLists.txt defines smi_target and finds the Intel FPGA SDK for OpenCL, MPI and hlslib.
# Targets (smi_target's), in the build folder's examples/:
#   make {top}_host                          the MPI host ({top}/{top}_host)
#   make {top}_<program>_aoc_report          aoc -rtl -report of one program
#   make {top}_<program>_aoc_build           one program's bitstream ({top}/<program>/<program>.aocx)
#   make {top}_emulator_ranks                every rank's emulation build ({top}/emulator_<rank>/<program>.aocx)
# Programs: {", ".join(programs)} (device d runs {top}_rank<d>).
# Run: cd {top} && mpirun -np {n} ./{top}_host DATA_DIR OUT_DIR [emulator]
if(NOT COMMAND smi_target)
  message(FATAL_ERROR "{top}: configure this folder inside SMI's source tree (smi_target is SMI's)")
endif()

smi_target({top}
           "${{CMAKE_CURRENT_SOURCE_DIR}}/topology.json"
           "${{CMAKE_CURRENT_SOURCE_DIR}}/host.cpp"
           "{kernels}"
           {n} {CONSECUTIVE_READS} {max_ranks(n)} ON)

# smi_target's {top}_emulator builds rank 0 from the first program and every other rank from the
# second; {top}_emulator_ranks builds rank d from program d.
set(SM_WORKDIR ${{CMAKE_CURRENT_BINARY_DIR}}/{top})
add_custom_target({top}_emulator_ranks)
"""
    for d, p in enumerate(programs):
        text += f"""\
file(MAKE_DIRECTORY ${{SM_WORKDIR}}/emulator_{d})
add_custom_target({top}_emulator_rank{d}
    COMMAND ${{IntelFPGAOpenCL_AOC}} -I${{CMAKE_SOURCE_DIR}}/include -I${{CMAKE_SOURCE_DIR}}/hlslib/include
            -fp-relaxed -no-interleaving=default -board=${{SMI_TARGET_BOARD}}
            ${{SM_WORKDIR}}/{p}/smi_generated_device.cl ${{SM_WORKDIR}}/{p}/{p}.cl
            -march=emulator -DSMI_EMULATION_RANK={d} -emulator-channel-depth-model=strict -o {p}.aocx
    WORKING_DIRECTORY ${{SM_WORKDIR}}/emulator_{d})
add_dependencies({top}_emulator_rank{d} {top}_{programs[-1]}_routing)
add_dependencies({top}_emulator_ranks {top}_emulator_rank{d})
"""
    return text


def makefile(top: str, programs: tuple[str, ...]) -> str:
    n = len(programs)
    metadata = " ".join(f"{p}.json" for p in programs)
    codegen = "\n".join(
        f"\tcd $(BUILD) && $(CODEGEN) codegen-device --include '$(SMI_INCLUDE)' "
        f"--consecutive-read-limit {CONSECUTIVE_READS} --max-ranks {max_ranks(n)} --p2p-rendezvous ON "
        f"$(CURDIR)/topology.json $(abspath $(REWRITER)) $(CURDIR)/kernels {p} {p}/smi_generated_device.cl {p}.json {p}.cl"
        for p in programs
    )
    emulator = "\n".join(
        f"\tmkdir -p $(BUILD)/emulator_{d} && cd $(BUILD)/emulator_{d} && $(AOC) $(AOCFLAGS) -march=emulator "
        f"-DSMI_EMULATION_RANK={d} -emulator-channel-depth-model=strict "
        f"../{p}/smi_generated_device.cl ../{p}/{p}.cl -o {p}.aocx"
        for d, p in enumerate(programs)
    )
    aocx = "\n".join(
        f"\tcd $(BUILD)/{p} && $(AOC) $(AOCFLAGS) -board=$(BOARD) smi_generated_device.cl {p}.cl -o {p}.aocx"
        for p in programs
    )
    report = "\n".join(
        f"\tcd $(BUILD)/{p} && $(AOC) $(AOCFLAGS) -board=$(BOARD) -rtl -report smi_generated_device.cl {p}.cl"
        for p in programs
    )
    return f"""\
# Build {top} over {n} devices (stencilmap) with SMI's flow: the steps of SMI's smi_target, as make targets
# (CMakeLists.txt is the same flow inside an SMI checkout). Device d runs program {top}_rank<d>.
#   make smi SMI=<SMI checkout>           SMI's code generator (codegen-device per program: its source
#                                          rewriter, smi_generated_device.cl, <program>.json; route:
#                                          $(BUILD)/smi-routes; codegen-host: smi_generated_host.c)
#   make host SMI=<SMI checkout>          the MPI host $(BUILD)/{top}_host (needs mpicxx and aocl)
#   make emulator SMI=<SMI checkout>      aoc -march=emulator for every rank ($(BUILD)/emulator_<d>/)
#   make aocx SMI=<SMI checkout> BOARD=b  every program's bitstream ($(BUILD)/<program>/<program>.aocx)
#   make emulate                          all devices in one g++ channel emulation (an SMI stand-in)
# Run: cd $(BUILD) && mpirun -np {n} ./{top}_host DATA_DIR OUT_DIR [emulator]
# SMI's code generator needs click, jinja2, bitstring and networkx < 3.5 (SMI/codegen/requirements.txt;
# its `route` indexes the dict that networkx 2's all-pairs shortest_path returned, an iterator since 3.5),
# and SMI's clang source rewriter built (SMI's CMake target `rewriter`).
SMI ?=
REWRITER ?= $(SMI)/build/source-rewriter/rewriter
HLSLIB ?= $(SMI)/hlslib/include
PYTHON ?= python3
MPICXX ?= mpicxx
CXX ?= g++
AOC ?= aoc
BOARD ?= p520_max_sg280l
BUILD ?= build
DATA ?= data
OUT ?= out
HOST_CXXFLAGS ?= $$(aocl compile-config)
HOST_LDFLAGS ?= $$(aocl link-config)
SMI_INCLUDE = $(abspath $(SMI))/include
CODEGEN = $(PYTHON) $(abspath $(SMI))/codegen/main.py
AOCFLAGS = -I$(SMI_INCLUDE) -I$(abspath $(HLSLIB)) -fp-relaxed -no-interleaving=default
PROGRAMS = {" ".join(programs)}

.PHONY: smi host host-compile emulator aocx report emulate clean need-smi

need-smi:
\t@test -n "$(SMI)" || {{ echo "set SMI=<path of an SMI checkout (github.com/spcl/SMI)>"; exit 1; }}

smi: need-smi
\tmkdir -p $(BUILD)
{codegen}
\tcd $(BUILD) && $(CODEGEN) route $(CURDIR)/topology.json smi-routes {metadata}
\tcd $(BUILD) && $(CODEGEN) codegen-host smi_generated_host.c {metadata}

host-compile: need-smi
\t$(MPICXX) -std=c++14 -O2 -DHLSLIB_INTEL -I$(SMI_INCLUDE) -I$(HLSLIB) -I$(BUILD) $(HOST_CXXFLAGS) -c host.cpp -o $(BUILD)/host.o

host: host-compile
\t$(MPICXX) $(BUILD)/host.o -o $(BUILD)/{top}_host $(HOST_LDFLAGS) -pthread

emulator: need-smi
{emulator}

aocx: need-smi
{aocx}

report: need-smi
{report}

emulate: emulate.cpp
\t$(CXX) -std=c++17 -O1 -ffp-contract=off -pthread -I. emulate.cpp -o emulate
\tmkdir -p $(OUT) && ./emulate $(DATA) $(OUT)

clean:
\trm -rf $(BUILD) emulate
"""
