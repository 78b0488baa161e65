"""The EMAX codegen target: the mapping's mnemonics (EMAX §3.3, Fig. 3), one line per instruction.

Run it here (``--verify``, ``jobs.codegen_checks``): the EMAX simulator (``sim.emax``) interprets the
mapping these lines print, with values, and its output is compared with the reference."""

from __future__ import annotations

from stencilmap.codegen.registry import Generated, Values, register
from stencilmap.design.emax.mapping import EmaxMapping
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.program.ir import Program


def mnemonics(m: EmaxMapping) -> str:
    """One line per instruction (Fig. 3); the format and its assembler are ``design.emax.asm``."""
    from stencilmap.design.emax.asm import write_mnemonics

    return write_mnemonics(m)


def mapping_of(design: Design, program: Program) -> EmaxMapping:
    """The mapping ``design`` was built from (``design.emax.design_of``), rebuilt from its p and device and
    checked to give the same design."""
    from stencilmap.design.emax import design_of, map_emax

    config = BuildConfig(unroll=design_int(design, "p"), device=design.device)
    mapping = map_emax(device_program(program, design), config)
    if design_of(mapping) != design:
        raise StencilmapError(
            f"target 'emax': the mapping of design '{design.name}' cannot be rebuilt from its parameters"
        )
    return mapping


def design_int(design: Design, key: str) -> int:
    """An integer parameter of ``design`` (a target's rebuilt mapping reads its builder's choices)."""
    value = dict(design.parameters).get(key)
    if not isinstance(value, int):
        raise StencilmapError(f"design '{design.name}' has no integer parameter '{key}'")
    return value


def device_program(program: Program, design: Design) -> Program:
    """``program`` with the banks the registry gave it on the design's device (``design.registry.build``)."""
    if design.device is None:
        return program
    from stencilmap.design.common import on_device_banks
    from stencilmap.device.catalog import load_device

    dev = load_device(design.device)
    return on_device_banks(program, dev.dram_banks, dev.name)[0]


@register(
    "emax",
    ("emax",),
    "EMAX mnemonics (emax.asm) and the library's C call (stencil_<name>.c, emax.h); --verify: the EMAX "
    "simulator runs emax.asm as written",
)
def emit_emax(design: Design, program: Program, values: Values) -> Generated:
    """``emax.asm``: the mnemonics of the design's mapping; ``stencil_<name>.c`` and ``emax.h``: the
    library's C entry point holding the same mnemonics (``codegen.emax_c``)."""
    from stencilmap.codegen.emax_c import c_files

    mapping = mapping_of(design, program)
    files = (("emax.asm", mnemonics(mapping)), *c_files(mapping))
    return Generated("emax", tuple(sorted(files)), program.name, (), "emax-sim", ("emax.asm",), ())
