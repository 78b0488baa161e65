"""Target ``opencl`` for a StencilFlow design split over devices (StencilFlow §VI-B), for SMI's own flow.

``design.partition`` gives every module a ``device``; a stream cut between devices goes through a
``network`` module. Here each device gets its own design (``device_design``): its modules, and every
network module it sends or receives becomes an SMI endpoint — on the source device a kernel that pops
the stream and ``SMI_Push``-es its elements, on the destination one that ``SMI_Pop``-s them into the
stream (the same ``opencl_channels`` emitter writes both). Ports number the cut streams in design order,
so both ends of stream k use port k.

What SMI's flow (spcl/SMI) consumes: one program per device, ``kernels/<top>_rank<d>.cl``
(``smi_topology.program_names``); the topology its code generator reads (``topology.json``,
``smi_topology``); one MPI host for all ranks that includes SMI's generated ``smi_generated_host.c`` and
calls ``SmiInit_<program>`` (``host.cpp``, ``smi_host``); ``CMakeLists.txt`` (one ``smi_target``, as
SMI's examples) and a ``Makefile`` running the same steps (``smi_build``).

``--verify`` runs every device's kernels together in one channel emulation (``emulate.cpp``): each
program included in a namespace of its own, SMI replaced by ``smi_emulation.h``, where a port is a
bounded FIFO of the network module's depth (W elements a beat). That stand-in is not the SMI library.
"""

from __future__ import annotations

from stencilmap.codegen import smi_build, smi_host, smi_topology
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
    """Every device's program, the topology, the host and build files, and the joint emulation."""
    top = f"{identifier(program.name)}_stencilflow"
    n = devices_of(design)
    programs = smi_topology.program_names(top, n)
    files: dict[str, str] = {}
    devices: list[tuple[Layout, ChannelEmitter, tuple[Port, ...]]] = []
    ranks: list[smi_host.RankKernels] = []
    for d, name in enumerate(programs):
        lay = layout(device_design(design, d), program)
        ports = ports_of(lay)
        text, mods = channel_kernel(lay, values, name)
        devices.append((lay, mods, ports))
        ranks.append(_rank_kernels(name, lay, mods, ports))
        files[kernel_file(name)] = text
    ports = _joint_ports(tuple(p for _, _, ps in devices for p in ps))
    files.update(
        {
            "opencl_emulation.h": support_file("opencl_emulation.h"),
            "smi_emulation.h": support_file("smi_emulation.h"),
            "emulate.cpp": _emulation_main(design, devices, ports, programs),
            "topology.json": smi_topology.topology(programs),
            "host.cpp": smi_host.host(top, tuple(ranks)),
            "CMakeLists.txt": smi_build.cmake(top, programs),
            "Makefile": smi_build.makefile(top, programs),
            "README.md": _readme(design, program, top, programs, ports),
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


def kernel_file(program: str) -> str:
    """The kernel file of SMI program ``program`` (SMI names a program after its file's basename)."""
    return f"kernels/{program}.cl"


def _rank_kernels(
    name: str, lay: Layout, mods: ChannelEmitter, ports: tuple[Port, ...]
) -> smi_host.RankKernels:
    """What the host launches on this device: readers and writers with their port, and the SMI endpoints."""
    by_field = {(p.field, p.direction): p for p in ports}
    memory = tuple(
        (mods.names[m.name], by_field[(str(m.param("field")), "in" if m.kind == "reader" else "out")])
        for m in lay.order()
        if m.kind in ("reader", "writer")
    )
    smi = tuple(mods.names[m.name] for m in lay.order() if m.kind == "network")
    return smi_host.RankKernels(name, memory, smi)


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
    design: Design,
    devices: list[tuple[Layout, ChannelEmitter, tuple[Port, ...]]],
    ports: tuple[Port, ...],
    programs: tuple[str, ...],
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
        w.line(f'#include "{kernel_file(programs[d])}"')
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


def _readme(
    design: Design, program: Program, top: str, programs: tuple[str, ...], ports: tuple[Port, ...]
) -> str:
    params = ", ".join(f"{k}={v}" for k, v in design.parameters)
    n = len(programs)
    rows = "\n".join(
        f"| {port} | `{comment(m)}` | {design.module(m).param('src_device')} | {design.module(m).param('dst_device')} |"
        for m, port in smi_ports(design).items()
    )
    return f"""\
# {top}: Intel FPGA OpenCL of `{comment(program.name)}` over {n} devices (StencilFlow §VI-B)

Generated by stencilmap from the partitioned Design IR the simulator validated ({params}).
Device d runs the SMI program `{top}_rank<d>` (`kernels/{top}_rank<d>.cl`: its modules); streams cut
between devices are SMI channels: an `SMI_Open_send_channel`/`SMI_Push` kernel on the source device and an
`SMI_Open_receive_channel`/`SMI_Pop` kernel on the destination, on the port below.

| SMI port | cut stream | from device | to device |
|---|---|---|---|
{rows}

Inputs ({", ".join(p.field for p in ports if p.direction == "in")}) are read on every device that uses
them; outputs: {", ".join(p.field for p in ports if p.direction == "out")}.

Files for SMI's flow (https://github.com/spcl/SMI):

- `topology.json`: SMI's topology file — each device's FPGA (`fpga-<d>:acl0`, rank d) and program, and the
  cabling: a chain with two links between consecutive devices (edit `connections` to your cabling).
- `host.cpp`: one MPI host for all ranks; it includes SMI's generated `smi_generated_host.c` and calls
  `SmiInit_<program>` for the rank's `SMI_Comm`, then launches the rank's readers, writers and SMI kernels.
- `CMakeLists.txt`: one `smi_target` call, as in SMI's `examples/` (configure it inside an SMI checkout).
- `Makefile`: the same steps from this folder: `make smi SMI=<checkout>` (SMI's code generator),
  `make host`, `make emulator`, `make aocx BOARD=<board>`; then
  `cd build && mpirun -np {n} ./{top}_host DATA_DIR OUT_DIR [emulator]`.

`make emulate` runs all devices' kernels in one g++ process where `smi_emulation.h` stands in for SMI
(a port is a bounded FIFO); that is what `--verify` checks bit for bit. stencilmap's tests run SMI's code
generator on programs like these (with a stand-in for its clang source rewriter) and compile the host
against SMI's headers (with stand-ins for hlslib, OpenCL and MPI); no aoc, board or MPI run checked them.
"""


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value
