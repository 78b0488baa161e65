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


@register(
    "dot",
    ("soda", "stencilflow", "pcm", "emax", "cgra"),
    "Graphviz DOT of the design (design.dot); nothing to run",
)
def emit_dot(design: Design, program: Program, values: Values) -> Generated:
    """``design.dot``: the design's graph (``to_dot``). A drawing: ``--verify`` has nothing to run."""
    return Generated("dot", (("design.dot", to_dot(design)),), design.name, (), "none", (), ())
