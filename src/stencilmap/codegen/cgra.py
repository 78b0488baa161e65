"""The CGRA codegen target (CGRA paper §V): the high-level assembly of a worker mapping — one instruction
per PE with its op, grid place, input queues (the triggers: it fires when they all hold data and its
consumers have room), constants and filter pattern — and the data-flow graph as Graphviz DOT coloured by
op as in Fig. 7. Deterministic text (design order, no clocks). Run it here (``--verify``,
``jobs.codegen_checks``): the CGRA simulator (``sim.cgra``) fires the mapped PEs with values and its
outputs are compared with the reference.
"""

from __future__ import annotations

from stencilmap.codegen.emax import design_int, device_program
from stencilmap.codegen.registry import Generated, Values, register
from stencilmap.design.cgra.mapping import CgraMapping, Pe, Queue
from stencilmap.design.cgra.traffic import reads_of, stores_of
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.names import comment, dot_string
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


def _inputs(m: CgraMapping) -> dict[str, list[Queue]]:
    into: dict[str, list[Queue]] = {}
    for q in m.queues:
        into.setdefault(q.dst, []).append(q)
    return into


def assembly(m: CgraMapping) -> str:
    """One line per PE: row, column, op, name, its input queues ``port←source[depth]``, its operand."""
    counts = ", ".join(f"{op} {n}" for op, n in m.op_counts().items())
    lines = [
        f"# {comment(m.program)}: CGRA worker mapping on {comment(m.device)} (CGRA §III): {m.workers} workers, {m.layers} layer(s), "
        f"{len(m.strips)} strip(s), grid {m.grid[0]}×{m.grid[1]}",
        f"# {len(m.pes)} PEs: {counts}",
        "# a PE fires when every input queue holds a ready token and each queue it feeds has room",
        f"# {'row':>3s} {'col':>3s}  {'op':<6s} {'pe':<18s} {'inputs (port<-source[depth])':<48s} operand",
    ]
    into = _inputs(m)
    by_name = {p.name: p for p in m.pes}
    for p in sorted(m.pes, key=lambda p: (p.row, p.col)):
        order = {port: i for i, port in enumerate(p.inputs)}
        queues = sorted(into.get(p.name, []), key=lambda q: order.get(q.port, 0))
        ins = ", ".join(f"{q.port}<-{q.src}[{q.depth}]" for q in queues) or "-"
        lines.append(
            f"  {p.row:3d} {p.col:3d}  {p.op:<6s} {p.name:<18s} {ins:<48s} {_operand(m, p, by_name, into)}"
        )
    return "\n".join(lines) + "\n"


def _operand(m: CgraMapping, p: Pe, by_name: dict[str, Pe], into: dict[str, list[Queue]]) -> str:
    if p.op in ("MUL", "MAC") and m.linear is not None:
        return f"x * {p.const!r}" + (" + acc" if p.op == "MAC" else "")
    if p.operands:
        return f"{p.op.lower()}(" + ", ".join(o if isinstance(o, str) else repr(o) for o in p.operands) + ")"
    if p.op == "AGEN":
        f = [name for name, _, _ in m.inputs].index(p.field)
        return f"{p.field}[x ≡ {p.worker} mod {m.workers}] row by row, {reads_of(m, f, p.worker):,} addresses"
    if p.op == "LOAD":
        return f"load {p.field}, broadcast"
    if p.op == "FILTER":
        return _pattern(m, p, by_name[into[p.name][0].src])
    if p.op == "STORE":
        return f"store {p.field}"
    if p.op == "COUNT":
        return f"raise after {stores_of(m, p.stage, p.worker):,} stores"
    return "raise done when every count is reached"


def _pattern(m: CgraMapping, p: Pe, source: Pe) -> str:
    """The filter's keep test on the row/column ids, and Fig. 6's 0^m 1^n 0^p over one row of the stream
    (first strip): m points before the needed ones, n needed, p after."""
    dz, dy, dx = p.offset
    z0, z1, y0, y1, x0, x1 = m.boxes[p.stage][0]
    if source.op == "LOAD":
        lo, hi = m.spans[[name for name, _, _ in m.inputs].index(source.field)][0]
    else:
        lo, hi = m.boxes[by_stage(m, source)][0][4:]
    r = (p.worker + dx) % m.workers
    xs = [x for x in range(lo, hi) if x % m.workers == r]
    before = sum(1 for x in xs if x - dx < x0)
    kept = sum(1 for x in xs if x0 <= x - dx < x1)
    rows = f"{_minus('y', dy)} in [{y0},{y1}) " if m.rank >= 2 else ""
    planes = f"{_minus('z', dz)} in [{z0},{z1}) " if m.rank == 3 else ""
    after = len(xs) - before - kept
    fill = {
        "constant": f"; outside the grid: {p.const!r}",
        "copy": "; outside the grid: the centre's value",
    }.get(p.boundary, "")
    return f"keep {planes}{rows}{_minus('x', dx)} in [{x0},{x1}): per row 0^{before} 1^{kept} 0^{after}{fill}"


def by_stage(m: CgraMapping, p: Pe) -> int:
    """The box of the stage a compute PE belongs to."""
    if m.linear is not None:
        return m.box_id(p.layer, 0)
    return p.stage if p.stage >= 0 else m.box_id(p.layer, 0)


def _minus(axis: str, d: int) -> str:
    """The id of the output point a token at ``axis`` feeds through offset d: axis − d."""
    return axis if d == 0 else f"{axis}{-d:+d}"


def cgra_dot(m: CgraMapping) -> str:
    """The DFG (§V, Fig. 7): one oval per PE coloured by op, labelled with its op, name and place."""
    out = [
        f"digraph {dot_string(m.program)} {{{{",
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
