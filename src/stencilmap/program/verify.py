"""Invariants of the Program IR. ``verify`` raises a located StencilmapError on the first violation."""

from __future__ import annotations

import re
from collections import Counter

from stencilmap.errors import Location, StencilmapError
from stencilmap.names import check_name
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import FUNCTIONS, MAX_DEPTH, Expr, Ref, Var, depth, walk
from stencilmap.program.graph import find_cycle
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import ExprTypeError, TypeEnv, infer, stencil_types

#: Every field, stencil, param, constant and temporary name: an identifier of at most this many characters
#: (names become file names: ``--out DIR/<output>.npy``).
MAX_NAME = 128
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Largest dimension size and largest number of points of an iteration space (analysis and the models
#: count in these; executors also check the memory they need, ``program.data.check_memory``).
MAX_DIM = 2**40
MAX_POINTS = 2**50
#: Largest field offset (a stencil's window) and param size.
MAX_OFFSET = 2**20
MAX_PARAM_SIZE = 2**24
#: Largest unroll factor (SODA) and vectorization (StencilFlow) a program may ask for, and the largest
#: ``--unroll``/``--vector``/``--iterate`` of a design (``design.common.check_parameters``).
MAX_LANES = 1024
#: Largest ``iterate`` a program may ask for (each step is a chained copy of the program).
MAX_ITERATE = 4096


def verify(program: Program) -> None:
    """Check names, shapes, types, outputs and acyclicity; raise StencilmapError saying where."""
    _check_program(program)
    _check_names(program)
    for s in program.stencils:
        _check_stencil(program, s)
    cycle = find_cycle(program)
    if cycle is not None:
        raise StencilmapError(f"cyclic program: {' -> '.join(cycle)}", _name_loc(program, cycle[0]))
    _check_iterate(program)


def _where(program: Program, loc: str | None) -> str | None:
    return loc if loc is not None else program.path


def _definitions(p: Program) -> list[tuple[str, str | None]]:
    """(name, where it is defined) of every input, stencil, param and constant, in that order, then every
    temporary (at its stencil)."""
    defs = [(i.name, i.loc) for i in p.inputs] + [(s.name, s.loc) for s in p.stencils]
    defs += [(q.name, q.loc) for q in p.params] + [(c.name, c.loc) for c in p.constants]
    return defs + [(t.name, s.loc) for s in p.stencils for t in s.temps]


def _name_loc(p: Program, name: str, nth: int = 0) -> str | None:
    """Where the ``nth`` definition of ``name`` is (an output that is defined nowhere: the outputs)."""
    found = [loc for n, loc in _definitions(p) if n == name]
    if nth < len(found):
        return _where(p, found[nth])
    return p.loc_of("outputs")


def _check_program(p: Program) -> None:
    if not 1 <= p.rank <= 3:
        raise StencilmapError(f"iteration space must have 1 to 3 dimensions, got {p.rank}", p.loc_of("shape"))
    for n in p.shape:
        if n is not None and n < 1:
            raise StencilmapError(f"dimension sizes must be positive, got {list(p.shape)}", p.path)
    sizes = [n for n in p.shape if n is not None]
    if any(n > MAX_DIM for n in sizes) or _product(sizes) > MAX_POINTS:
        raise StencilmapError(
            f"iteration space {list(p.shape)} is too large (at most {MAX_DIM:,} per dimension and "
            f"{MAX_POINTS:,} points)",
            p.path,
        )
    if not 1 <= p.iterate <= MAX_ITERATE:
        raise StencilmapError(
            f"iterate must be between 1 and {MAX_ITERATE:,}, got {p.iterate}", p.loc_of("iterate")
        )
    if not (1 <= p.hints.unroll <= MAX_LANES and 1 <= p.hints.vectorization <= MAX_LANES):
        key = "unroll" if not 1 <= p.hints.unroll <= MAX_LANES else "vectorization"
        raise StencilmapError(
            f"unroll factor and vectorization must be between 1 and {MAX_LANES:,}", p.loc_of(key)
        )
    if not p.outputs:
        raise StencilmapError("the program has no outputs", p.loc_of("outputs"))
    for i in p.inputs:
        if i.dtype not in dt.DTYPES:
            raise StencilmapError(f"input '{i.name}': bad dtype '{i.dtype}'", _where(p, i.loc))
        if len(set(i.axes)) != len(i.axes) or any(not 0 <= a < p.rank for a in i.axes):
            raise StencilmapError(f"input '{i.name}': bad axes {list(i.axes)}", _where(p, i.loc))


def _product(sizes: list[int]) -> int:
    total = 1
    for n in sizes:
        total *= n
    return total


def _check_names(p: Program) -> None:
    if not p.name or len(p.name) > MAX_NAME or p.name.startswith(".") or "/" in p.name or "\0" in p.name:
        raise StencilmapError(f"program name {_shown(p.name)} is not a usable folder name", p.path)
    check_name(p.name, "program name", p.path)  # it reaches generated code's comments and file names
    names = [i.name for i in p.inputs] + [s.name for s in p.stencils]
    names += [q.name for q in p.params] + [c.name for c in p.constants]
    temps = [t.name for s in p.stencils for t in s.temps]
    for n in [*names, *temps, *p.outputs]:
        if not _IDENTIFIER.fullmatch(n) or len(n) > MAX_NAME:
            raise StencilmapError(
                f"name {_shown(n)} is not an identifier of at most {MAX_NAME} characters", _name_loc(p, n)
            )
    called = [n for n in [*names, *temps] if n in FUNCTIONS and p.format == "soda"]
    if called:  # issue 19 §9: SODA's `max(0, 1)` calls the function: the field would silently never be read
        raise StencilmapError(
            f"name '{called[0]}' is a function's name: a read {called[0]}(...) would call the function; "
            "rename the field",
            _name_loc(p, called[0]),
        )
    dup = [n for n, k in Counter(names).items() if k > 1]
    if dup:
        raise StencilmapError(f"duplicate name '{dup[0]}'", _name_loc(p, dup[0], 1))
    dup_out = [n for n, k in Counter(p.outputs).items() if k > 1]
    if dup_out:
        raise StencilmapError(f"output '{dup_out[0]}' is listed twice", p.loc_of("outputs"))
    for out in p.outputs:
        if p.stencil(out) is None:
            raise StencilmapError(f"output '{out}' is not computed by any stencil", p.loc_of("outputs"))
    for q in p.params:
        if any(n < 1 for n in q.shape) or _product(list(q.shape)) > MAX_PARAM_SIZE:
            raise StencilmapError(
                f"param '{q.name}': sizes {list(q.shape)} must be positive, at most {MAX_PARAM_SIZE:,} elements",
                _where(p, q.loc),
            )


def _shown(name: str) -> str:
    """A name as an error message shows it: quoted, shortened, control characters escaped."""
    text = name if len(name) <= 40 else name[:37] + "..."
    return ascii(text) if not text.isprintable() else f"'{text}'"


def _check_stencil(p: Program, s: Stencil) -> None:
    where = _where(p, s.loc)
    if s.dtype not in dt.DTYPES:
        raise StencilmapError(f"stencil '{s.name}': bad dtype '{s.dtype}'", where)
    try:
        env, _ = stencil_types(p, s)
        seen: set[str] = set()
        for t in s.temps:
            if t.name in seen or t.name in env.fields:
                raise ExprTypeError(f"temporary '{t.name}' redefines a name")
            seen.add(t.name)
            _check_expr(p, t.expr, env)
        _check_expr(p, s.expr, env)
    except ExprTypeError as exc:
        raise StencilmapError(f"stencil '{s.name}': {exc}", where) from None
    for field_name, b in s.boundary:
        if b.kind not in ("constant", "copy", "shrink"):
            raise StencilmapError(f"stencil '{s.name}': bad boundary '{b.kind}' for '{field_name}'", where)


def _check_expr(p: Program, e: Expr, env: TypeEnv) -> None:
    if depth(e) > MAX_DEPTH:
        raise ExprTypeError(f"expression nested more than {MAX_DEPTH:,} levels deep")
    infer(e, env)
    for node in walk(e):
        if isinstance(node, Var):
            _check_param_index(p, node)
        if not isinstance(node, Ref):
            continue
        if any(abs(o) > MAX_OFFSET for o in node.offset):
            raise ExprTypeError(f"offset {list(node.offset)} of '{node.field}' is beyond ±{MAX_OFFSET:,}")
        axes = p.field_axes(node.field)
        if not axes and node.offset:
            raise ExprTypeError(f"scalar '{node.field}' cannot be read at an offset {list(node.offset)}")
        if len(node.offset) != len(axes):
            raise ExprTypeError(
                f"field '{node.field}' spans {len(axes)} dimension(s), accessed with {len(node.offset)}"
            )


def _check_param_index(p: Program, v: Var) -> None:
    param = next((q for q in p.params if q.name == v.name), None)
    if param is None or len(v.index) != len(param.shape):
        return  # typing reports a wrong number of indices
    for i, n in zip(v.index, param.shape, strict=True):
        if not 0 <= i < n:
            sizes = "".join(f"[{s}]" for s in param.shape)
            raise ExprTypeError(f"index {i} of param '{v.name}{sizes}' is out of bounds")


def _check_iterate(p: Program) -> None:
    if p.feedback:
        _check_feedback(p)
        return
    if p.iterate == 1 and p.border == "ignore":
        return
    ins = [(i.dtype, i.axes) for i in p.inputs]
    outs = [(p.field_dtype(o), tuple(range(p.rank))) for o in p.outputs]
    if ins != outs:
        raise StencilmapError(
            "iterate/preserve need outputs matching inputs in number, type and dimensions "
            f"(inputs {[t for t, _ in ins]}, outputs {[t for t, _ in outs]}); "
            "or name the pairs with a feedback mapping",
            p.loc_of("iterate" if p.iterate != 1 else "border"),
        )


def _check_feedback(p: Program) -> None:
    """Each ``feedback`` pair: a program output feeding a distinct input of the same type, spanning every
    axis (the output of a step is a whole-grid field)."""
    fed: set[str] = set()
    for out, inp in p.feedback:
        where = _feedback_where(p, out)
        if out not in p.outputs:
            raise StencilmapError(f"feedback from '{out}': not an output of the program", where)
        field = p.input(inp)
        if field is None:
            raise StencilmapError(f"feedback from '{out}' into '{inp}': not an input of the program", where)
        if inp in fed:
            raise StencilmapError(f"feedback: input '{inp}' is fed by more than one output", where)
        fed.add(inp)
        if field.dtype != p.field_dtype(out) or field.axes != tuple(range(p.rank)):
            raise StencilmapError(
                f"feedback from '{out}' ({p.field_dtype(out)}, {p.rank}-D) into '{inp}' "
                f"({field.dtype}, {len(field.axes)}-D): type and dimensions must match",
                where,
            )


def _feedback_where(p: Program, out: str) -> Location | str | None:
    if p.format == "stencilflow" and p.feedback_loc is None:  # a Python program of NumPy semantics has a line
        return Location(p.path, json_path=f"feedback.{out}")
    return _where(p, p.feedback_loc)
