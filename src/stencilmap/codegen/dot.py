"""The DOT codegen target: Graphviz text of a design, modules labelled with kind, parameters and latency,
channels with depth. A drawing: ``--verify`` has nothing to run ("not run: a drawing")."""

from __future__ import annotations

from stencilmap.codegen.registry import Generated, Values, register
from stencilmap.design.ir import Design, Module
from stencilmap.names import dot_string
from stencilmap.program.ir import Program

_SHAPES = {
    "reader": "invhouse",
    "writer": "house",
    "pe": "box",
    "forward": "circle",
    "fifo": "cds",
    "shift_register": "cds",
    "delay": "cds",
    "internal_buffer": "cylinder",
    "broadcast": "point",
}
_SHOWN = ("field", "stencil", "lane", "stage", "depth", "size", "offset", "bank", "width", "taps")


def _label(m: Module) -> str:
    lines = [m.name, m.kind]
    for key in _SHOWN:
        value = m.param(key)
        if value is not None and not isinstance(value, tuple):
            lines.append(f"{key}={value}")
    if m.latency:
        lines.append(f"latency={m.latency}")
    return "\n".join(lines)


def to_dot(design: Design) -> str:
    """Deterministic DOT text (modules and channels in design order)."""
    out = [
        f"digraph {dot_string(design.name)} {{",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
    ]
    params = ", ".join(f"{k}={v}" for k, v in design.parameters)
    out.append(f"  label={dot_string(f'{design.name} ({design.arch}) {params}')};")
    for m in design.modules:
        shape = _SHAPES.get(m.kind, "box")
        label = "" if m.kind == "broadcast" else f", label={dot_string(_label(m), line_breaks=True)}"
        out.append(f"  {dot_string(m.name)} [shape={shape}{label}];")
    for c in design.channels:
        label = f"{c.depth}" + (f"×{c.width}" if c.width > 1 else "")
        if c.dst_port:
            label += f" {c.dst_port}"
        out.append(f"  {dot_string(c.src)} -> {dot_string(c.dst)} [label={dot_string(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"


#: a design with more modules is drawn as its summary (``summary_dot``): past this, one node per module is
#: unreadable and Graphviz's layout grows too slow
SUMMARY_PAST = 170
#: module kinds drawn together as one group of a stage and field
_GROUPS = {
    "forward": "reuse chain",
    "fifo": "reuse chain",
    "shift_register": "buffers",
    "internal_buffer": "buffers",
    "delay": "delays",
    "pe": "PEs",
    "broadcast": "broadcast",
}


def _group(m: Module) -> tuple[str, str]:
    """The summary node of a module: (key, label) — its stage, the field (buffers) or stencil (PEs) and
    its kind's group; readers, writers and other kinds stay single nodes."""
    if m.kind == "cgra_pe":  # a CGRA worker's PEs by operation (CGRA §III)
        where = f"worker {m.param('worker')}"
        return f"{where}|{m.param('op')}", f"{where}\n{m.param('op')} PEs"
    kind = _GROUPS.get(m.kind)
    if kind is None:
        return m.name, f"{m.name}\n{m.kind}"
    stage, name = m.param("stage"), m.param("stencil" if m.kind == "pe" else "field")
    where = " ".join(str(x) for x in (f"stage {stage}" if stage is not None else None, name) if x is not None)
    return f"{where}|{kind}", f"{where}\n{kind}" if where else kind


def summary_dot(design: Design) -> str:
    """DOT of the design's structure: one node per stage × field × kind group (a SODA reuse chain's
    taps and FIFOs, a stage's PEs, buffers, delays) with its module count, one edge per pair of groups
    with its channel count. Readable at any size; ``to_dot`` keeps every module."""
    groups: dict[str, tuple[str, list[Module]]] = {}
    of: dict[str, str] = {}
    for m in design.modules:
        key, label = _group(m)
        groups.setdefault(key, (label, []))[1].append(m)
        of[m.name] = key
    edges: dict[tuple[str, str], int] = {}
    for c in design.channels:
        pair = (of[c.src], of[c.dst])
        if pair[0] != pair[1]:
            edges[pair] = edges.get(pair, 0) + 1
    params = ", ".join(f"{k}={v}" for k, v in design.parameters)
    out = [
        f"digraph {dot_string(design.name)} {{",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
        f"  label={dot_string(f'{design.name} ({design.arch}) {params}: summary, {len(design.modules):,} modules')};",
    ]
    for key, (label, members) in groups.items():
        shape = _SHAPES.get(members[0].kind, "box") if len(members) == 1 else "box3d"
        text = label + (f"\n×{len(members):,}" if len(members) > 1 else "")
        out.append(f"  {dot_string(key)} [shape={shape}, label={dot_string(text, line_breaks=True)}];")
    for (a, b), n in edges.items():
        out.append(f"  {dot_string(a)} -> {dot_string(b)} [label={dot_string(str(n))}];")
    out.append("}")
    return "\n".join(out) + "\n"


@register(
    "dot",
    ("soda", "stencilflow", "pcm", "emax", "cgra"),
    "Graphviz DOT of the design (design.dot); nothing to run",
)
def emit_dot(design: Design, program: Program, values: Values) -> Generated:
    """``design.dot``: the design's graph (``to_dot``). A drawing: ``--verify`` has nothing to run."""
    return Generated("dot", (("design.dot", to_dot(design)),), design.name, (), "none", (), ())
