"""Target ``opencl`` for a StencilFlow design split over devices (StencilFlow §VI-B): one folder per device.

``design.partition`` gives every module a ``device``; a stream cut between devices goes through a
``network`` module. Here each device gets its own design (``device_design``): its modules, and every
network module it sends or receives becomes an SMI endpoint — on the source device a kernel that pops
the stream and ``SMI_Push``-es its elements, on the destination one that ``SMI_Pop``-s them into the
stream (the same ``opencl_channels`` emitter writes both). Ports number the cut streams in design order,
so both ends of stream k use port k. ``deviceN/`` holds that device's ``kernel.cl``, host and Makefile.

``--verify`` runs every device's kernels together in one channel emulation (``emulate.cpp``): each
``kernel.cl`` included in a namespace of its own, SMI replaced by ``smi_emulation.h``, where a port is a
bounded FIFO of the network module's depth (W elements a beat). That stand-in is not the SMI library.
"""

from __future__ import annotations

from stencilmap.codegen import opencl_host
from stencilmap.codegen.hls import ports_of, support_file
from stencilmap.codegen.layout import Layout, layout
from stencilmap.codegen.opencl_channels import (
    EMULATION_FLAGS,
    ChannelEmitter,
    channel_kernel,
    emulation_inputs,
    emulation_outputs,
    kernel_argument,
    smi_type,
)
from stencilmap.codegen.registry import Generated, Port, Values
from stencilmap.codegen.writer import Writer
from stencilmap.design.ir import Design, Module
from stencilmap.design.partition import module_devices as design_module_devices
from stencilmap.names import c_string, comment, identifier
from stencilmap.program.ir import Program


def module_devices(design: Design) -> dict[str, int]:
    """The device of every module but the network modules (which join two): ``design.partition``'s
    assignment (a broadcast after a network module is on the receiving device)."""
    on = design_module_devices(design)
    return {m.name: on[m.name] for m in design.modules if m.kind != "network"}


def devices_of(design: Design) -> int:
    """How many devices ``design`` spans (1 for a design without network modules)."""
    on = module_devices(design)
    nets = [m for m in design.modules if m.kind == "network"]
    return 1 + max([*on.values(), *(_int(m.param("dst_device")) for m in nets)], default=0)


def smi_ports(design: Design) -> dict[str, int]:
    """The SMI port of every cut stream (network module), numbered in design order."""
    return {m.name: n for n, m in enumerate(m for m in design.modules if m.kind == "network")}


def device_design(design: Design, device: int) -> Design:
    """What ``device`` holds of ``design``: its modules, and the network modules it sends (an endpoint
    with the stream's input channel) or receives (one with its output channel) as SMI endpoints."""
    on, ports = module_devices(design), smi_ports(design)
    modules: list[Module] = []
    role: dict[str, str] = {}
    for m in design.modules:
        if m.kind != "network":
            if on[m.name] == device:
                modules.append(m)
            continue
        src, dst = _int(m.param("src_device")), _int(m.param("dst_device"))
        if device in (src, dst):
            role[m.name] = "send" if device == src else "receive"
            extra = (
                ("smi_peer", dst if device == src else src),
                ("smi_port", ports[m.name]),
                ("smi_role", role[m.name]),
            )
            modules.append(Module(m.name, m.kind, tuple(sorted(m.params + extra)), m.latency))
    keep = {m.name for m in modules}
    channels = tuple(
        c
        for c in design.channels
        if c.src in keep and c.dst in keep and role.get(c.src) != "send" and role.get(c.dst) != "receive"
    )
    return Design(
        f"{design.name}.d{device}",
        design.arch,
        tuple(modules),
        channels,
        design.parameters,
        design.device,
        design.clock_mhz,
    )


def emit_partitioned(design: Design, program: Program, values: Values) -> Generated:
    """Every device's folder, the top-level README / Makefile, and the joint emulation."""
    top = f"{identifier(program.name)}_stencilflow"
    n = devices_of(design)
    files: dict[str, str] = {}
    devices: list[tuple[Layout, ChannelEmitter, tuple[Port, ...]]] = []
    for d in range(n):
        lay = layout(device_design(design, d), program)
        ports = ports_of(lay)
        text, mods = channel_kernel(lay, values, f"{top}_d{d}")
        devices.append((lay, mods, ports))
        files.update(_device_files(d, lay, mods, ports, top, text))
    ports = _joint_ports(tuple(p for _, _, ps in devices for p in ps))
    files.update(
        {
            "opencl_emulation.h": support_file("opencl_emulation.h"),
            "smi_emulation.h": support_file("smi_emulation.h"),
            "emulate.cpp": _emulation_main(design, devices, ports),
            "Makefile": _makefile(top, n),
            "README.md": _readme(design, program, top, n, ports),
        }
    )
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


def _device_files(
    d: int, lay: Layout, mods: ChannelEmitter, ports: tuple[Port, ...], top: str, text: str
) -> dict[str, str]:
    name = f"{top}_d{d}"
    memory = [mods.names[m.name] for m in lay.order() if m.kind in ("reader", "writer")]
    smi = [mods.names[m.name] for m in lay.order() if m.kind == "network"]
    return {
        f"device{d}/kernel.cl": text,
        f"device{d}/host.cpp": opencl_host.host(name, ports, memory, f"{name}.aocx", smi_kernels=smi, rank=d),
        f"device{d}/Makefile": opencl_host.makefile(name, "kernel.cl"),
        f"device{d}/README.md": opencl_host.readme(lay.design, lay.program, name, ports),
    }


def _joint_ports(ports: tuple[Port, ...]) -> tuple[Port, ...]:
    """The host arrays of the whole design: each input once (every device reads its own copy), then the
    outputs."""
    out: list[Port] = []
    for direction in ("in", "out"):
        seen: set[str] = set()
        for p in ports:
            if p.direction == direction and p.field not in seen:
                seen.add(p.field)
                out.append(p)
    return tuple(out)


def _emulation_main(
    design: Design, devices: list[tuple[Layout, ChannelEmitter, tuple[Port, ...]]], ports: tuple[Port, ...]
) -> str:
    w = Writer()
    w.line(
        f"// Emulation of the {len(devices)} devices' channel kernels with g++ (stencilmap): every kernel a"
    )
    w.line("// thread, every SMI port a bounded FIFO (smi_emulation.h, a stand-in for SMI).")
    w.line("// Usage: emulate DATA_DIR OUT_DIR (raw little-endian <field>.bin files in and out).")
    w.line("#define SM_EMULATION")
    w.line('#include "opencl_emulation.h"')
    w.line('#include "smi_emulation.h"')
    for d in range(len(devices)):
        w.line(f"namespace sm_device{d} {{")
        w.line(f'#include "device{d}/kernel.cl"')
        w.line(f"}}  // namespace sm_device{d}")
    w.line()
    mods0 = devices[0][1]
    with w.block("int main(int argc, char** argv)"):
        emulation_inputs(w, ports, mods0)
        _connect(w, design, devices[0][0])
        for d in range(len(devices)):
            w.line(f"const SMI_Comm comm{d} = {{{d}, {len(devices)}}};")
        w.line("sm_run_kernels({")
        with w.indent():
            for d, (lay, mods, _) in enumerate(devices):
                for m in lay.order():
                    call = f"sm_device{d}::{mods.names[m.name]}({kernel_argument(m, f'comm{d}')})"
                    w.line(f'{{"d{d}:{c_string(m.name)}", [&]() {{ {call}; }}}},')
        w.line("});")
        emulation_outputs(w, ports, mods0)
    return w.text()


def _connect(w: Writer, design: Design, lay: Layout) -> None:
    """The emulation's SMI ports: one per cut stream, a FIFO of the network module's depth (beats of W
    elements), carrying every beat of every tile."""
    for name, port in smi_ports(design).items():
        net, c = design.module(name), design.inputs_of(name)[0]
        count = len(lay.tiles) * lay.tokens * c.width
        depth = _int(net.param("depth")) * c.width
        src, dst = _int(net.param("src_device")), _int(net.param("dst_device"))
        w.line(f'sm_smi_connect({port}, {src}, {dst}, {smi_type(c.dtype)}, {count}L, "{name}", {depth});')


def _makefile(top: str, n: int) -> str:
    dirs = " ".join(f"device{d}" for d in range(n))
    return f"""\
# Build {top} over {n} devices (stencilmap): one bitstream and host per device folder.
#   make aocx BOARD=<board>            aoc in every device folder (needs the Intel FPGA SDK and SMI)
#   make host                          every device's host program
#   make emulate                       all devices in one g++ channel emulation (SMI stand-in)
CXX ?= g++
BOARD ?=
DATA ?= data
OUT ?= out
DEVICES = {dirs}

.PHONY: aocx host emulate clean

aocx host:
\tfor d in $(DEVICES); do $(MAKE) -C $$d $@ BOARD=$(BOARD) || exit 1; done

emulate: emulate.cpp
\t$(CXX) -std=c++17 -O1 -ffp-contract=off -pthread -I. emulate.cpp -o emulate
\tmkdir -p $(OUT) && ./emulate $(DATA) $(OUT)

clean:
\trm -f emulate
\tfor d in $(DEVICES); do $(MAKE) -C $$d clean; done
"""


def _readme(design: Design, program: Program, top: str, n: int, ports: tuple[Port, ...]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in design.parameters)
    rows = "\n".join(
        f"| {port} | `{m}` | {design.module(m).param('src_device')} | {design.module(m).param('dst_device')} |"
        for m, port in smi_ports(design).items()
    )
    return f"""\
# {top}: Intel FPGA OpenCL of `{comment(program.name)}` over {n} devices (StencilFlow §VI-B)

Generated by stencilmap from the partitioned Design IR the simulator validated ({params}).
`deviceN/` holds device N's kernels (`kernel.cl`), host program and Makefile; streams cut between
devices are SMI channels: an `SMI_Open_send_channel`/`SMI_Push` kernel on the source device and an
`SMI_Open_receive_channel`/`SMI_Pop` kernel on the destination, on the port below.

| SMI port | cut stream | from device | to device |
|---|---|---|---|
{rows}

Inputs ({", ".join(p.field for p in ports if p.direction == "in")}) are read on every device that uses
them; outputs: {", ".join(p.field for p in ports if p.direction == "out")}.

`make emulate` runs all devices' kernels in one g++ process where `smi_emulation.h` stands in for SMI
(a port is a bounded FIFO). That is the only check this code had: it was not built against the SMI
library, whose code generator and host runtime (`SmiInit`, routing tables) a board build needs.
"""


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value
