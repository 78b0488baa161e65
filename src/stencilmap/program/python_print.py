"""Python printer (Program IR → ``.py`` text for ``program.python``): ``print_python`` and ``format_expr``,
parenthesized by Python's precedence so that parsing the text again rebuilds the same Program (up to its
name, path and format). Offsets are printed in the IR's C order, as the Python front end reads them."""

from __future__ import annotations

import math

from stencilmap.names import comment
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, InBounds, Ref, Select, Unary, Var, refs
from stencilmap.program.ir import Boundary, DataSource, Hints, Input, Program, Stencil
from stencilmap.program.python_expr import SETTINGS, escape, literal_dtype

#: Python's binding strengths (the language reference, §6.17): ``x if c else y`` 0, ``or`` 1, ``and`` 2,
#: ``not`` 3, comparisons 4, ``|`` 5, ``^`` 6, ``&`` 7, ``+ -`` 9, ``* / // %`` 10, unary 11, ``**`` 12.
_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "|": 5,
    "^": 6,
    "&": 7,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "//": 10,
    "%": 10,
    "**": 12,
}
_SPELLING = {"||": "or", "&&": "and"}
_SELECT, _NOT, _COMPARE, _UNARY, _POWER, _ATOM = 0, 3, 4, 11, 12, 13
#: Functions Python has built in (not imported from stencilmap.lang).
_BUILTINS = {"min", "max", "abs", "round", "pow"}


def format_expr(e: Expr, semantics: dt.Semantics, used: set[str] | None = None) -> str:
    """Python text of an expression; ``used`` collects the stencilmap.lang names it needs."""
    text, _ = _fmt(e, semantics, used if used is not None else set())
    return text


def _fmt(e: Expr, sem: dt.Semantics, used: set[str]) -> tuple[str, int]:
    if isinstance(e, Const):
        return _fmt_const(e, sem, used), _ATOM
    if isinstance(e, Ref):
        offsets = ", ".join(str(o) for o in e.offset)
        return escape(e.field) + (f"[{offsets}]" if e.offset else ""), _ATOM
    if isinstance(e, Var):
        index = ", ".join(str(i) for i in e.index)
        return escape(e.name) + (f"[{index}]" if e.index else ""), _ATOM
    if isinstance(e, Cast):
        used.add(e.dtype)
        return f"{e.dtype}({format_expr(e.operand, sem, used)})", _ATOM
    if isinstance(e, Call):
        used.add(e.func)
        return f"{e.func}({', '.join(format_expr(a, sem, used) for a in e.args)})", _ATOM
    if isinstance(e, Select):
        parts = [_wrap(x, sem, used, lambda p: p <= _SELECT) for x in (e.then, e.cond, e.else_)]
        return f"{parts[0]} if {parts[1]} else {parts[2]}", _SELECT
    if isinstance(e, Unary):
        if e.op == "!":
            return f"not {_wrap(e.operand, sem, used, lambda p: p < _NOT)}", _NOT
        return f"{e.op}{_wrap(e.operand, sem, used, lambda p: p < _UNARY)}", _UNARY
    if isinstance(e, Binary):
        return _fmt_binary(e, sem, used)
    if isinstance(e, InBounds):  # fusion's guard: no Python program writes one (shown, not parsed back)
        return f"in_bounds({', '.join(str(o) for o in e.offset)})", _ATOM
    raise TypeError(f"cannot print {e!r} as Python")


def _fmt_binary(e: Binary, sem: dt.Semantics, used: set[str]) -> tuple[str, int]:
    prec = _PRECEDENCE[e.op]
    if prec == _COMPARE:  # comparisons chain in Python: a comparison operand is always parenthesized
        lhs = _wrap(e.lhs, sem, used, lambda p: p <= _COMPARE)
        rhs = _wrap(e.rhs, sem, used, lambda p: p <= _COMPARE)
    elif prec == _POWER:  # right-associative, and binds tighter than a unary sign on its left
        lhs = _wrap(e.lhs, sem, used, lambda p: p <= _POWER)
        rhs = _wrap(e.rhs, sem, used, lambda p: p < _UNARY)
    else:
        lhs = _wrap(e.lhs, sem, used, lambda p: p < prec)
        rhs = _wrap(e.rhs, sem, used, lambda p: p <= prec)
    return f"{lhs} {_SPELLING.get(e.op, e.op)} {rhs}", prec


def _wrap(e: Expr, sem: dt.Semantics, used: set[str], needs: object) -> str:
    text, prec = _fmt(e, sem, used)
    assert callable(needs)
    return f"({text})" if needs(prec) else text


def _fmt_const(c: Const, sem: dt.Semantics, used: set[str]) -> str:
    """A bare literal when it reads back as this constant, else ``literal(value[, dtype])``."""
    if c.dtype in ("bool", dt.WEAK_BOOL):
        value: bool | int | float = bool(c.value)
    elif dt.is_float(c.dtype):
        value = float(c.value)
    else:
        value = int(c.value)
    text = number(value)
    default = literal_dtype(value, sem)
    if c.dtype == default and not text.startswith("-"):
        return text
    used.add("literal")
    if c.dtype == default:
        return f"literal({text})"
    if c.dtype not in dt.DTYPES:
        raise ValueError(f"a {c.dtype} literal cannot be written under {sem} semantics")
    if c.dtype != "bool":
        used.add(c.dtype)
    return f"literal({text}, {c.dtype})"


def number(value: bool | int | float) -> str:
    """Python text of a number that ``ast`` reads back as the same value and type (``1e999`` is inf)."""
    if isinstance(value, int):  # bool included
        return repr(value)
    if math.isnan(value):
        raise ValueError("NaN has no literal")
    if math.isinf(value):
        return "1e999" if value > 0 else "-1e999"
    return repr(value)


# ---------------------------------------------------------------------------------------------- program


def print_python(program: Program) -> str:
    """Python text of a program; ``parse_python`` of it gives an equal Program (up to name and path)."""
    used: set[str] = set()
    params = {s.name: _params(s) for s in program.stencils}
    functions = [_function(program, s, params[s.name], used) for s in program.stencils]
    body = _settings(program, params) + _declarations(program, params, used)
    imports = sorted(used - _BUILTINS - {"bool"}, key=lambda n: (n[0].islower(), n))
    header = [f"# {comment(program.name)}: a stencil program, read by stencilmap (never run)"]
    if imports:
        header.append(f"from stencilmap.lang import {', '.join(imports)}")
    text = "\n".join(header) + "\n\n"
    if body:
        text += "\n".join(body) + "\n\n\n"
    return text + "\n\n".join(functions)


def _params(s: Stencil) -> list[str]:
    """The fields a stencil reads, in order of first read; those with a boundary condition (a default)
    last, as Python wants."""
    order: list[str] = []
    for e in [*(t.expr for t in s.temps), s.expr]:
        for r in refs(e):
            if r.field not in order:
                order.append(r.field)
    bounded = {n for n, _ in s.boundary}
    if bounded - set(order):
        raise ValueError(f"stencil '{s.name}' has a boundary condition for a field it does not read")
    return [n for n in order if n not in bounded] + [n for n in order if n in bounded]


def _function(program: Program, s: Stencil, fields: list[str], used: set[str]) -> str:
    sem = program.semantics
    boundary = dict(s.boundary)
    args: list[str] = []
    for name in fields:
        dtype = program.field_dtype(name)
        used.add(dtype)
        default = f" = {_boundary(boundary[name], used)}" if name in boundary else ""
        args.append(f"{escape(name)}: {dtype}{default}")
    used.add(s.dtype)
    lines = [f"def {escape(s.name)}({', '.join(args)}) -> {s.dtype}:"]
    for t in s.temps:
        if t.dtype is not None:
            used.add(t.dtype)
        annotation = f": {t.dtype}" if t.dtype is not None else ""
        lines.append(f"    {escape(t.name)}{annotation} = {format_expr(t.expr, sem, used)}")
    lines.append(f"    return {format_expr(s.expr, sem, used)}")
    return "\n".join(lines) + "\n"


def _boundary(b: Boundary, used: set[str]) -> str:
    used.add(b.kind)
    if b.kind == "constant":
        return f"constant({number(b.value)})"
    return b.kind if b.value == 0.0 else f"{b.kind}({number(b.value)})"


def _settings(program: Program, params: dict[str, list[str]]) -> list[str]:
    p, h = program, program.hints
    lines: list[str] = []
    if p.semantics != "numpy":
        lines.append(f'semantics = "{p.semantics}"')
    lines.append(f"shape = {_tuple(p.shape)}")
    if p.iterate != 1:
        lines.append(f"iterate = {p.iterate}")
    if p.feedback:
        lines.append("feedback = {" + ", ".join(f'"{escape(o)}": "{escape(i)}"' for o, i in p.feedback) + "}")
    if p.border != "ignore":
        lines.append(f'border = "{p.border}"')
    read = {f for s in p.stencils for f in params[s.name] if f != s.name}
    if tuple(s.name for s in p.stencils if s.name not in read) != p.outputs:
        lines.append("outputs = [" + ", ".join(f'"{escape(o)}"' for o in p.outputs) + "]")
    default = Hints()
    for key, value in (
        ("unroll", h.unroll),
        ("vectorization", h.vectorization),
        ("burst_width", h.burst_width),
    ):
        if value != getattr(default, key):
            lines.append(f"{key} = {value}")
    if h.tile is not None:
        lines.append(f"tile = {_tuple(h.tile)}")
    if h.cluster is not None:
        lines.append(f'cluster = "{h.cluster}"')
    banked = [(x.name, x.banks) for x in p.inputs if x.banks] + [
        (x.name, x.banks) for x in p.params if x.banks
    ]
    banked += [(x.name, x.banks) for x in p.stencils if x.banks]
    if banked:
        items = [f'"{escape(n)}": {b[0] if len(b) == 1 else _tuple(b)}' for n, b in banked]
        lines.append("dram = {" + ", ".join(items) + "}")
    return lines


def _declarations(program: Program, params: dict[str, list[str]], used: set[str]) -> list[str]:
    lines: list[str] = []
    sem = program.semantics
    declared = [c.name for c in program.constants] + [q.name for q in program.params]
    if not _inferred(program, params):
        declared += [i.name for i in program.inputs]
    clash = [n for n in declared if n in SETTINGS]
    if clash:
        raise ValueError(f"'{clash[0]}' is the name of a setting; it cannot be declared in a Python program")
    for c in program.constants:
        text = number(c.value)
        if literal_dtype(c.value, sem) == c.dtype:
            lines.append(f"{escape(c.name)} = {text}")
        elif c.dtype in dt.DTYPES:
            used.add(c.dtype)
            lines.append(f"{escape(c.name)}: {c.dtype} = {text}")
        else:
            raise ValueError(f"constant '{c.name}' of {c.dtype} cannot be written under {sem} semantics")
    for q in program.params:
        used.update((q.dtype, "Param"))
        lines.append(f"{escape(q.name)}: {q.dtype} = Param({', '.join(str(n) for n in q.shape)})")
    if not _inferred(program, params):
        lines += [_input(program, i, used) for i in program.inputs]
    return lines


def _inferred(program: Program, params: dict[str, list[str]]) -> bool:
    """Whether the parser infers the inputs from the parameters alone: in this order, spanning every axis
    (or none), with no data source."""
    order: list[str] = []
    for s in program.stencils:
        order += [f for f in params[s.name] if program.input(f) is not None and f not in order]
    every = tuple(range(program.rank))
    plain = all(i.source is None and i.axes in ((), every) for i in program.inputs)
    return plain and order == [i.name for i in program.inputs]


def _input(program: Program, i: Input, used: set[str]) -> str:
    used.add(i.dtype)
    options: list[str] = []
    if i.axes != tuple(range(program.rank)):
        options.append(f"axes={_tuple(i.axes)}")
    if i.source is not None:
        options.append(f"data={_source(i.source, used)}")
    if not options:
        return f"{escape(i.name)}: {i.dtype}"
    used.add("Input")
    return f"{escape(i.name)}: {i.dtype} = Input({', '.join(options)})"


def _source(s: DataSource, used: set[str]) -> str:
    if s.kind == "file":
        return repr(s.path)
    if s.kind == "scalar":
        return number(float(s.value or 0.0))
    if s.kind == "inline":
        return "[" + ", ".join(number(float(v)) for v in s.values) + "]"
    if s.kind == "constant":
        used.add("constant")
        return f"constant({number(float(s.value or 0.0))})"
    used.add("random")
    return f"random({number(float(s.low or 0.0))}, {number(float(s.high or 0.0))})"


def _tuple(items: tuple[int | None, ...]) -> str:
    texts = ["None" if n is None else str(n) for n in items]
    return f"({texts[0]},)" if len(texts) == 1 else f"({', '.join(texts)})"
