"""The EMAX codegen target: the mapping's mnemonics (EMAX §3.3, Fig. 3), one line per instruction.

Run it here: ``verify`` interprets them on the EMAX simulator (``sim.emax``) and compares with the
reference."""

from __future__ import annotations

from stencilmap.design.emax.mapping import EmaxMapping
from stencilmap.design.emax.pattern import fmt


def mnemonics(m: EmaxMapping) -> str:
    """One line per instruction (Fig. 3): row, col, unit, ALU OP / MEM OP, dst ← operands, RGI, dist."""
    lines = [
        f"# {m.program}: EMAX mapping of a degree-{m.degree} star, p = {m.p}, {m.rows} rows × "
        f"{m.columns} columns, dist {m.dist}, {m.x_chunks} X chunk(s) of {m.chunk} points on {m.device}",
        f"# {'row':>3s} {'col':>3s} {'unit':<4s} {'op':<5s} {'dst <- operands':<44s} {'rgi':<8s} dist",
    ]
    for i in m.instructions:
        ops = ", ".join(i.srcs)
        if i.op in ("FMUL", "FMA"):
            ops += f" * {fmt(i.coeff)}"
        if i.op == "FIFO":
            ops += f" @x{i.dx:+d}"
        if i.op in ("LD", "ST"):
            ops = f"lmm[{i.rgi}:+{m.chunk}]" + (f" <- {ops}" if ops else "")
        text = f"{i.dst} <- {ops}"
        lines.append(f"  {i.row:3d} {i.col:3d} {i.unit:<4s} {i.op:<5s} {text:<44s} {i.rgi:<8s} {i.dist}")
    return "\n".join(lines) + "\n"
