"""SODA printer (Program IR → ``.soda`` text): ``print_soda`` and ``format_expr``, parenthesized so that
parsing the text again (``program.soda``) rebuilds the same Program; SODA's offsets are the fastest
dimension first, the IR's C order, so every offset list is reversed here."""

from __future__ import annotations

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, InBounds, Ref, Select, Unary, Var
from stencilmap.program.ir import Program

_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    "<=": 7,
    ">": 7,
    ">=": 7,
    "+": 8,
    "-": 8,
    "*": 9,
    "/": 9,
    "%": 9,
}
_UNARY_PREC = 10
_ATOM_PREC = 11


def format_expr(e: Expr) -> str:
    """SODA (C) text of an expression, parenthesized so that parsing it rebuilds the same tree."""
    text, _ = _fmt(e)
    return text


def _fmt(e: Expr) -> tuple[str, int]:
    if isinstance(e, Const):
        return _fmt_const(e), _ATOM_PREC
    if isinstance(e, Ref):
        return f"{e.field}({', '.join(str(o) for o in reversed(e.offset))})", _ATOM_PREC
    if isinstance(e, Var):
        return e.name + "".join(f"[{i}]" for i in e.index), _ATOM_PREC
    if isinstance(e, Cast):
        return f"{dt.soda_name(e.dtype)}({format_expr(e.operand)})", _ATOM_PREC
    if isinstance(e, Call):
        return f"{e.func}({', '.join(format_expr(a) for a in e.args)})", _ATOM_PREC
    if isinstance(e, Select):
        args = ", ".join(format_expr(x) for x in (e.cond, e.then, e.else_))
        return f"select({args})", _ATOM_PREC
    if isinstance(e, Unary):
        inner, prec = _fmt(e.operand)
        if prec < _UNARY_PREC or (inner.startswith(("-", "+")) and e.op in "+-"):
            inner = f"({inner})"
        return f"{e.op}{inner}", _UNARY_PREC
    if isinstance(e, Binary):
        prec = _PRECEDENCE[e.op]
        lhs, lp = _fmt(e.lhs)
        rhs, rp = _fmt(e.rhs)
        if lp < prec:
            lhs = f"({lhs})"
        if rp <= prec:
            rhs = f"({rhs})"
        return f"{lhs} {e.op} {rhs}", prec
    if isinstance(e, InBounds):  # fusion's guard: no SODA program writes one (shown, not parsed back)
        return f"in_bounds({', '.join(str(o) for o in reversed(e.offset))})", _ATOM_PREC
    raise TypeError(f"cannot print {e!r} as SODA")


def _fmt_const(c: Const) -> str:
    if c.value < 0:
        return f"(-{_fmt_const(Const(-c.value, c.dtype))})"
    if dt.is_float(c.dtype):
        text = repr(float(c.value))
        return text + ("f" if c.dtype == "float32" else "")
    suffix = {"uint32": "u", "int64": "l", "uint64": "ul"}.get(c.dtype, "")
    return f"{int(c.value)}{suffix}"


def print_soda(program: Program) -> str:
    """SODA DSL text of a SODA-format program; parsing it again yields an equal Program."""
    if program.format != "soda":
        raise ValueError("only SODA-format programs print as SODA")
    h = program.hints
    lines = [f"kernel: {program.name}"]
    if h.burst_width is not None:
        lines.append(f"burst width: {h.burst_width}")
    lines.append(f"unroll factor: {h.unroll}")
    tile = ", ".join([*(str(t) for t in reversed(h.tile or ())), "*"])
    for n, i in enumerate(program.inputs):
        shape = f"({tile})" if n == 0 else ""
        lines.append(f"input{_fmt_banks(i.banks)} {dt.soda_name(i.dtype)}: {i.name}{shape}")
    for p in program.params:
        sizes = "".join(f"[{s}]" for s in p.shape)
        attrs = [f", dup {p.dup}"] if p.dup != 1 else []
        for part in p.partitions:
            factor = f" factor={part.factor}" if part.factor is not None else ""
            dim = f" dim={part.dim}" if part.dim is not None else ""
            attrs.append(f", partition {part.strategy}{factor}{dim}")
        lines.append(f"param{_fmt_banks(p.banks)} {dt.soda_name(p.dtype)}{''.join(attrs)}: {p.name}{sizes}")
    zero = ", ".join("0" for _ in range(program.rank))
    for s in program.stencils:
        kind = "output" if s.name in program.outputs else "local"
        banks = _fmt_banks(s.banks) if kind == "output" else ""
        lets = "".join(
            f"\n  {dt.soda_name(t.dtype) + ' ' if t.dtype else ''}{t.name} = {format_expr(t.expr)}"
            for t in s.temps
        )
        lines.append(
            f"{kind}{banks} {dt.soda_name(s.dtype)}:{lets}\n  {s.name}({zero}) = {format_expr(s.expr)}"
        )
    lines.append(f"iterate: {program.iterate}")
    if program.feedback:
        lines.append("feedback: " + ", ".join(f"{o} -> {i}" for o, i in program.feedback))
    lines += [f"border: {program.border}", f"cluster: {h.cluster or 'none'}"]
    return "\n".join(lines) + "\n"


def _fmt_banks(banks: tuple[int, ...]) -> str:
    return f" dram {'.'.join(str(b) for b in banks)}" if banks else ""
