"""Target ``opencl``: Intel FPGA OpenCL of a PCM design (one single-work-item kernel, ``opencl_pcm``)
or of a StencilFlow design (one kernel per module joined by channels, ``opencl_channels``; split over
devices: one folder per device joined by SMI, ``opencl_smi``), with an OpenCL host program, a Makefile
for ``aoc`` and a README.
"""

from __future__ import annotations

from stencilmap.codegen import binding, opencl_host
from stencilmap.codegen.hls import declared, ports_of
from stencilmap.codegen.host_files import board_of
from stencilmap.codegen.layout import layout
from stencilmap.codegen.opencl_pcm import PcmKernel
from stencilmap.codegen.registry import Generated, Values, register
from stencilmap.design.ir import Design
from stencilmap.names import identifier
from stencilmap.program.ir import Program


@register("opencl", ("pcm", "stencilflow"))
def emit_opencl(design: Design, program: Program, values: Values) -> Generated:
    if design.arch == "stencilflow" and design.count("network"):
        from stencilmap.codegen.opencl_smi import emit_partitioned

        return emit_partitioned(design, program, values)
    if design.arch == "stencilflow":
        from stencilmap.codegen.opencl_channels import emit_channels

        return emit_channels(design, program, values)
    top = f"{identifier(program.name)}_pcm"
    lay = layout(design, program)
    ports = ports_of(lay)
    pcm = PcmKernel(design, program, values, top)
    api = binding.api(program.name, ports, declared(program), lay.shape)
    board = board_of(design.device)
    files = {
        "kernel.cl": pcm.kernel(ports),
        f"{top}.h": pcm.header(),
        "host.cpp": opencl_host.host(top, ports, ["kernel"], f"{top}.aocx"),
        "Makefile": opencl_host.makefile(top, "kernel.cl", board=board, api=api.name),
        "README.md": opencl_host.readme(design, program, top, ports, pcm_header=f"{top}.h"),
        f"api/{api.name}.h": binding.header(api),
        f"api/{api.name}_opencl.cpp": binding.opencl(api, top, [(top, ports)]),
    }
    return Generated(
        "opencl",
        tuple(sorted(files.items())),
        top,
        ports,
        "pocl",
        sources=("kernel.cl",),
        include_dirs=(".",),
    )
