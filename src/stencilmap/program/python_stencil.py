"""One stencil function of a Python program (``program.python``) → a Stencil: its parameters (the fields it
reads, their dtypes and boundary conditions), its temporaries and its returned expression."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Expr, refs
from stencilmap.program.ir import Boundary, Stencil, Temp
from stencilmap.program.python_expr import (
    PyExprConverter,
    Scope,
    dtype_of,
    lang_name,
    signed_number,
    unescape,
    where,
)

_BODY_HINT = "a stencil body holds 'name = expression' lines and one 'return expression'"


@dataclass(frozen=True, slots=True)
class ParamDef:
    """A parameter: a field the function reads, its annotated dtype (if any) and boundary condition."""

    dtype: str | None
    boundary: Boundary | None
    node: ast.arg


@dataclass
class StencilDef:
    """A ``def`` read but not yet converted (converting needs the whole program's names)."""

    name: str
    node: ast.FunctionDef
    filename: str
    dtype: str
    params: dict[str, ParamDef]
    temps: list[tuple[str, str | None, ast.expr, ast.stmt]] = field(default_factory=list)
    result: ast.expr | None = None

    def fail(self, message: str, node: ast.AST) -> StencilmapError:
        return StencilmapError(message, where(self.filename, node))

    def check_params(self, params: dict[str, Any], constants: dict[str, Any]) -> None:
        for name, p in self.params.items():
            if name in params or name in constants:
                kind = "param" if name in params else "constant"
                raise self.fail(
                    f"'{p.node.arg}' is a {kind}: read it without listing it as a parameter", p.node
                )


def read_function(node: ast.FunctionDef, filename: str) -> StencilDef:
    """Check a ``def``'s form and collect its parts (nothing is converted yet)."""

    def fail(message: str, at: ast.AST) -> StencilmapError:
        return StencilmapError(message, where(filename, at))

    if node.decorator_list:
        raise fail(
            "a stencil function takes no decorator (the file is read, never run)", node.decorator_list[0]
        )
    a = node.args
    if a.vararg or a.kwarg:
        raise fail(
            "a stencil function takes named fields, not *args or **kwargs", a.vararg or a.kwarg or node
        )
    name = unescape(node.name)
    dtype = dtype_of(node.returns, filename, f"stencil '{node.name}'") if node.returns else None
    if dtype is None:
        raise fail(f"give the dtype of stencil '{node.name}': def {node.name}(...) -> float32", node)
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params: dict[str, ParamDef] = {}
    for arg, default in [
        *zip(positional, defaults, strict=True),
        *zip(a.kwonlyargs, a.kw_defaults, strict=True),
    ]:
        pname = unescape(arg.arg)
        if pname in params:
            raise fail(f"parameter '{arg.arg}' is listed twice", arg)
        ptype = dtype_of(arg.annotation, filename, f"parameter '{arg.arg}'") if arg.annotation else None
        params[pname] = ParamDef(ptype, _boundary(default, filename) if default is not None else None, arg)
    fn = StencilDef(name, node, filename, dtype, params)
    _read_body(fn)
    return fn


def _boundary(node: ast.expr, filename: str) -> Boundary:
    """``constant(v)``, ``copy``, ``shrink`` (``copy(v)``/``shrink(v)`` keep a value, as the IR may)."""
    call = node if isinstance(node, ast.Call) else None
    kind = lang_name(call.func if call is not None else node)
    args = call.args if call is not None else []
    if kind in ("constant", "copy", "shrink") and not (call and call.keywords) and len(args) <= 1:
        if kind == "constant" and len(args) != 1:
            raise StencilmapError("a constant boundary needs its value: constant(0.0)", where(filename, node))
        value = signed_number(args[0]) if args else 0.0
        if value is None or isinstance(value, bool):
            raise StencilmapError("a boundary value must be a number", where(filename, node))
        return Boundary(kind, float(value))  # type: ignore[arg-type]
    raise StencilmapError(
        f"a parameter's default is its boundary condition: constant(v), copy or shrink, not '{ast.unparse(node)}'",
        where(filename, node),
    )


def _read_body(fn: StencilDef) -> None:
    body = list(fn.node.body)
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]  # the docstring
    for n, stmt in enumerate(body):
        if isinstance(stmt, ast.Return) and n == len(body) - 1:
            if stmt.value is None:
                raise fn.fail("return the stencil's value", stmt)
            fn.result = stmt.value
        elif (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            fn.temps.append((unescape(stmt.targets[0].id), None, stmt.value, stmt))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            dtype = dtype_of(stmt.annotation, fn.filename, f"temporary '{stmt.target.id}'")
            fn.temps.append((unescape(stmt.target.id), dtype, stmt.value, stmt))
        else:
            what = "a return before the end" if isinstance(stmt, ast.Return) else statement_name(stmt)
            raise fn.fail(f"{what} is not allowed: {_BODY_HINT}", stmt)
    if fn.result is None:
        raise fn.fail(f"stencil '{fn.node.name}' does not return a value: {_BODY_HINT}", fn.node)


def reads(fn: StencilDef) -> list[tuple[str, int]]:
    """Each parameter read in the body with its number of offsets (0: read bare), in source order."""
    out: list[tuple[str, int]] = []
    indexed: set[int] = set()
    exprs = [e for _, _, e, _ in fn.temps] + ([fn.result] if fn.result is not None else [])
    for e in exprs:
        for node in ast.walk(e):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                indexed.add(id(node.value))
                name = unescape(node.value.id)
                if name in fn.params:
                    count = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
                    out.append((name, count))
            elif isinstance(node, ast.Name) and id(node) not in indexed and unescape(node.id) in fn.params:
                out.append((unescape(node.id), 0))
    return out


def to_stencil(
    fn: StencilDef,
    semantics: dt.Semantics,
    axes: dict[str, tuple[int, ...]],
    constants: set[str],
    params: dict[str, int],
) -> Stencil:
    """The Stencil of a function: the fields in ``axes`` it lists are readable, with the program's
    ``constants`` and ``params`` (name → rank)."""
    fields: dict[str, tuple[int, ...]] = {}
    for name, p in fn.params.items():
        if name not in axes:
            raise fn.fail(f"'{p.node.arg}' is neither an input nor a stencil", p.node)
        fields[name] = axes[name]
    conv = PyExprConverter(Scope(fn.filename, semantics, fields, constants, params))
    temps: list[Temp] = []
    for name, dtype, value, _ in fn.temps:
        temps.append(Temp(name, dtype, conv.convert(value)))
        conv.scope.temps.add(name)
    assert fn.result is not None
    expr = conv.convert(fn.result)
    read = _fields_read(expr, temps)
    for name, p in fn.params.items():
        if name not in read:
            raise fn.fail(
                f"parameter '{p.node.arg}' is not read (parameters are the fields a stencil reads)", p.node
            )
    boundary = tuple(
        sorted(((n, p.boundary) for n, p in fn.params.items() if p.boundary), key=lambda x: x[0])
    )
    return Stencil(fn.name, fn.dtype, expr, tuple(temps), boundary, loc=where(fn.filename, fn.node))


def _fields_read(expr: Expr, temps: list[Temp]) -> set[str]:
    names = {r.field for r in refs(expr)}
    for t in temps:
        names.update(r.field for r in refs(t.expr))
    return names


def statement_name(stmt: ast.stmt) -> str:
    """How an error names a statement: ``a 'while' statement``, ``an expression statement 'f(x)'``."""
    if isinstance(stmt, ast.Expr):
        return f"an expression statement '{ast.unparse(stmt)[:40]}'"
    kind = type(stmt).__name__
    names = {
        "ClassDef": "a class",
        "FunctionDef": "a nested function",
        "AsyncFunctionDef": "an async function",
        "AugAssign": "an augmented assignment",
    }
    article = "an" if kind[0] in "AEIOU" else "a"
    return names.get(kind, f"{article} '{kind.lower()}' statement")
