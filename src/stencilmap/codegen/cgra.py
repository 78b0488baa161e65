"""The CGRA codegen target (CGRA paper §V): the high-level assembly of a worker mapping — a header with
the fabric, fields, shapes and addresses, then one instruction per PE with its op, grid place, input queues
(the triggers: it fires when they all hold data and its consumers have room), constants and filter pattern
(``codegen.cgra_asm``, which also parses it back) — and the data-flow graph as Graphviz DOT coloured by op
as in Fig. 7. Deterministic text (design order, no clocks). Run it here (``--verify``,
``jobs.codegen_checks``): the assembly written is parsed back and the CGRA simulator (``sim.cgra``) fires
its PEs with values; the outputs are compared with the reference.
"""

from __future__ import annotations

from stencilmap.codegen.cgra_asm import print_asm
from stencilmap.codegen.emax import design_int, device_program
from stencilmap.codegen.registry import Generated, Values, register
from stencilmap.design.cgra.mapping import CgraMapping
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.names import dot_string
from stencilmap.program.ir import Program

#: Fig. 7's colours: MUL orange, MAC red, ADD green, address generators cyan, the broadcasting loads light
#: blue (the paper's demux), the filters light yellow (its mux), everything else gray.
COLOURS = {
    "AGEN": "cyan",
    "LOAD": "lightblue",
    "FILTER": "lightyellow",
    "MUL": "orange",
    "MAC": "red",
    "ADD": "green",
}


def assembly(m: CgraMapping) -> str:
    """The assembly of ``m``: one instruction per PE, a text ``codegen.cgra_asm.parse_asm`` reads back
    (the format: ``codegen.cgra_asm``, README "CGRA assembly")."""
    return print_asm(m)


def cgra_dot(m: CgraMapping) -> str:
    """The DFG (§V, Fig. 7): one oval per PE coloured by op, labelled with its op, name and place."""
    out = [
        f"digraph {dot_string(m.program)} {{",
        "  rankdir=TB;",
        '  node [shape=ellipse, style=filled, fontname="Helvetica", fontsize=9];',
        f"  label={dot_string(f'{m.program}: {m.workers} workers, {m.layers} layer(s), {len(m.strips)} strip(s) on {m.device}')};",
    ]
    for p in m.pes:
        colour = COLOURS.get(p.op, "gray")
        label = dot_string(f"{p.op}\n{p.name}\n({p.row},{p.col})", line_breaks=True)
        out.append(f"  {dot_string(p.name)} [fillcolor={colour}, label={label}];")
    for q in m.queues:
        out.append(f"  {dot_string(q.src)} -> {dot_string(q.dst)} [label={dot_string(q.port)} fontsize=7];")
    out.append("}")
    return "\n".join(out) + "\n"


def mapping_of(design: Design, program: Program) -> CgraMapping:
    """The mapping ``design`` was built from (``design.cgra.mapping.design_of``), rebuilt from its workers,
    strips and device and checked to give the same design. The §VI roofline's count is not in the design
    and not in the text: the rebuilt mapping records the workers in its place."""
    from stencilmap.design.cgra.mapping import design_of, map_cgra

    workers, strips = design_int(design, "workers"), design_int(design, "strips")
    program = device_program(program, design)
    mapping = map_cgra(program, BuildConfig(workers=workers, device=design.device), workers)
    if len(mapping.strips) != strips:
        # the strips depend on their number n only (``design.cgra.plan.split_strips``): the width
        # ⌈columns / n⌉ cuts the same columns into the same n strips
        columns = mapping.strips[-1][1] - mapping.strips[0][0]
        config = BuildConfig(workers=workers, strip=-(-columns // strips), device=design.device)
        mapping = map_cgra(program, config, workers)
    if design_of(mapping) != design:
        raise StencilmapError(
            f"target 'cgra': the mapping of design '{design.name}' cannot be rebuilt from its parameters"
        )
    return mapping


@register("cgra", ("cgra",), "CGRA assembly and DFG (cgra.asm, cgra_dfg.dot); --verify: the CGRA simulator")
def emit_cgra(design: Design, program: Program, values: Values) -> Generated:
    """``cgra.asm`` (one instruction per PE) and ``cgra_dfg.dot`` (Fig. 7's DFG) of the design's mapping."""
    mapping = mapping_of(design, program)
    files = (("cgra.asm", assembly(mapping)), ("cgra_dfg.dot", cgra_dot(mapping)))
    return Generated("cgra", files, program.name, (), "cgra-sim", ("cgra.asm",), ())
