"""Invariants of the Program IR. ``verify`` raises a located StencilmapError on the first violation."""

from __future__ import annotations

from collections import Counter

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Expr, Ref, walk
from stencilmap.program.graph import find_cycle
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import ExprTypeError, TypeEnv, infer, stencil_types


def verify(program: Program) -> None:
    """Check names, shapes, types, outputs and acyclicity; raise StencilmapError saying where."""
    _check_program(program)
    _check_names(program)
    for s in program.stencils:
        _check_stencil(program, s)
    cycle = find_cycle(program)
    if cycle is not None:
        raise StencilmapError(f"cyclic program: {' -> '.join(cycle)}", program.path)
    _check_iterate(program)


def _where(program: Program, loc: str | None) -> str | None:
    return loc if loc is not None else program.path


def _check_program(p: Program) -> None:
    if not 1 <= p.rank <= 3:
        raise StencilmapError(f"iteration space must have 1 to 3 dimensions, got {p.rank}", p.path)
    for n in p.shape:
        if n is not None and n < 1:
            raise StencilmapError(f"dimension sizes must be positive, got {list(p.shape)}", p.path)
    if p.iterate < 1:
        raise StencilmapError(f"iterate must be ≥ 1, got {p.iterate}", p.path)
    if p.hints.unroll < 1 or p.hints.vectorization < 1:
        raise StencilmapError("unroll factor and vectorization must be ≥ 1", p.path)
    if not p.outputs:
        raise StencilmapError("the program has no outputs", p.path)
    for i in p.inputs:
        if i.dtype not in dt.DTYPES:
            raise StencilmapError(f"input '{i.name}': bad dtype '{i.dtype}'", _where(p, i.loc))
        if len(set(i.axes)) != len(i.axes) or any(not 0 <= a < p.rank for a in i.axes):
            raise StencilmapError(f"input '{i.name}': bad axes {list(i.axes)}", _where(p, i.loc))


def _check_names(p: Program) -> None:
    names = [i.name for i in p.inputs] + [s.name for s in p.stencils]
    names += [q.name for q in p.params] + [c.name for c in p.constants]
    dup = [n for n, k in Counter(names).items() if k > 1]
    if dup:
        raise StencilmapError(f"duplicate name '{dup[0]}'", p.path)
    for out in p.outputs:
        if p.stencil(out) is None:
            raise StencilmapError(f"output '{out}' is not computed by any stencil", p.path)


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
    infer(e, env)
    for node in walk(e):
        if not isinstance(node, Ref):
            continue
        axes = p.field_axes(node.field)
        if not axes and node.offset:
            raise ExprTypeError(f"scalar '{node.field}' cannot be read at an offset {list(node.offset)}")
        if len(node.offset) != len(axes):
            raise ExprTypeError(
                f"field '{node.field}' spans {len(axes)} dimension(s), accessed with {len(node.offset)}"
            )


def _check_iterate(p: Program) -> None:
    if p.iterate == 1 and p.border == "ignore":
        return
    ins = [(i.dtype, i.axes) for i in p.inputs]
    outs = [(p.field_dtype(o), tuple(range(p.rank))) for o in p.outputs]
    if ins != outs:
        raise StencilmapError(
            "iterate/preserve need outputs matching inputs in number, type and dimensions "
            f"(inputs {[t for t, _ in ins]}, outputs {[t for t, _ in outs]})",
            p.path,
        )
