"""Static types of expressions under the program's semantics (see ``dtypes`` for the rules)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from types import MappingProxyType

from stencilmap.program import dtypes as dt
from stencilmap.program.expr import (
    BITWISE_OPS,
    COMPARE_OPS,
    FUNCTIONS,
    LOGIC_OPS,
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    InBounds,
    Ref,
    Select,
    Unary,
    Var,
)
from stencilmap.program.ir import Program, Stencil


class ExprTypeError(Exception):
    """An ill-typed or unresolvable expression; ``verify`` turns it into a located user error."""


@dataclass(frozen=True, slots=True)
class TypeEnv:
    """What names mean inside one stencil: fields, temporaries, params and constants, with their types."""

    semantics: dt.Semantics
    fields: Mapping[str, str]
    scalars: Mapping[str, str]  # temporaries, constants
    params: Mapping[str, tuple[str, int]]  # name -> (dtype, rank)
    #: Types already inferred, by node identity (the node is kept, so its id is not reused): executors
    #: ask for the type of every node of a tree, which would otherwise re-walk each subtree.
    memo: dict[int, tuple[Expr, str]] = field(default_factory=dict, compare=False, repr=False)


def stencil_env(program: Program, stencil: Stencil | None = None) -> TypeEnv:
    """The environment a stencil's expression is typed in (temporaries are added by ``stencil_types``).
    Its tables are built once per program (``_ENVS``: every stencil of a program of thousands would
    otherwise copy every field's type) and shared, read only."""
    hit = _ENVS.get(id(program))
    if hit is None or hit[0] is not program:
        fields = {i.name: i.dtype for i in program.inputs}
        fields.update({s.name: s.dtype for s in program.stencils})
        scalars = {c.name: c.dtype for c in program.constants}
        params = {p.name: (p.dtype, len(p.shape)) for p in program.params}
        hit = (program, MappingProxyType(fields), MappingProxyType(scalars), MappingProxyType(params))
        with _ENVS_LOCK:
            if len(_ENVS) >= 8:
                _ENVS.pop(next(iter(_ENVS)))
            _ENVS[id(program)] = hit  # holding the program keeps its id from being reused
    return TypeEnv(program.semantics, hit[1], hit[2], hit[3])


_ENVS: dict[int, tuple[Program, Mapping[str, str], Mapping[str, str], Mapping[str, tuple[str, int]]]] = {}
_ENVS_LOCK = threading.Lock()


def stencil_types(program: Program, stencil: Stencil) -> tuple[TypeEnv, dict[str, str]]:
    """The full environment of a stencil and the type of each of its temporaries."""
    env = stencil_env(program, stencil)
    temps: dict[str, str] = {}
    for t in stencil.temps:
        scalars = {**env.scalars, **temps}
        ty = infer(t.expr, TypeEnv(env.semantics, env.fields, scalars, env.params))
        temps[t.name] = t.dtype if t.dtype is not None else ty
    full = TypeEnv(env.semantics, env.fields, {**env.scalars, **temps}, env.params)
    return full, temps


def infer(e: Expr, env: TypeEnv) -> str:
    """The type of ``e``; raises ExprTypeError for unknown names or operations the semantics forbid."""
    known = env.memo.get(id(e))
    if known is not None and known[0] is e:
        return known[1]
    ty = _infer(e, env)
    env.memo[id(e)] = (e, ty)
    return ty


def _infer(e: Expr, env: TypeEnv) -> str:
    c = env.semantics == "c"
    if isinstance(e, Const):
        return e.dtype
    if isinstance(e, Ref):
        if e.field not in env.fields:
            raise ExprTypeError(f"undefined field '{e.field}'")
        return env.fields[e.field]
    if isinstance(e, Var):
        return _var_type(e, env)
    if isinstance(e, Cast):
        infer(e.operand, env)
        return e.dtype
    if isinstance(e, Unary):
        return _unary_type(e.op, infer(e.operand, env), c)
    if isinstance(e, Binary):
        ty = _binary_type(e.op, infer(e.lhs, env), infer(e.rhs, env), c)
        if e.op == "**" and dt.is_integer(ty) and _negative_constant(e.rhs):
            raise ExprTypeError("integers cannot be raised to a negative power")
        return ty
    if isinstance(e, Select):
        infer(e.cond, env)
        return _common(infer(e.then, env), infer(e.else_, env), c)
    if isinstance(e, Call):
        return _call_type(e.func, [infer(a, env) for a in e.args], c)
    if isinstance(e, InBounds):
        return "bool"
    raise ExprTypeError(f"unknown expression node {e!r}")


def _negative_constant(e: Expr) -> bool:
    """``e`` is a literal below zero, possibly written with unary signs (``-1``, ``-(+2)``)."""
    sign = 1
    while isinstance(e, Unary) and e.op in ("-", "+"):
        sign = -sign if e.op == "-" else sign
        e = e.operand
    return isinstance(e, Const) and sign * e.value < 0


def _var_type(e: Var, env: TypeEnv) -> str:
    if e.name in env.params:
        dtype, rank = env.params[e.name]
        if len(e.index) != rank:
            raise ExprTypeError(f"param '{e.name}' has {rank} indices, {len(e.index)} given")
        return dtype
    if e.index:
        raise ExprTypeError(f"'{e.name}' is not an array and cannot be indexed")
    if e.name in env.scalars:
        return env.scalars[e.name]
    if e.name in env.fields:
        raise ExprTypeError(f"field '{e.name}' is used without an index")
    raise ExprTypeError(f"undefined name '{e.name}'")


def _common(a: str, b: str, c: bool) -> str:
    return dt.c_common(a, b) if c else dt.np_common(a, b)


def _require_integer(op: str, *types: str) -> None:
    for t in types:
        if not dt.is_integer(t):
            raise ExprTypeError(f"operator '{op}' needs integer operands, got {t}")


def _unary_type(op: str, t: str, c: bool) -> str:
    if op in ("-", "+") and not c and t in ("bool", dt.WEAK_BOOL):
        raise ExprTypeError(f"unary '{op}' on a boolean; use 'not' or convert it with int()")
    if op == "!":
        return "int32" if c else "bool"
    if op == "~":
        _require_integer(op, t)
        return dt.c_promote(t) if c else t
    return dt.c_promote(t) if c else t


_BOOLEANS = ("bool", dt.WEAK_BOOL)


def _binary_type(op: str, a: str, b: str, c: bool) -> str:
    if op in COMPARE_OPS or op in LOGIC_OPS:
        return "int32" if c else "bool"
    if op in BITWISE_OPS:
        _require_integer(op, a, b)
        common = _common(a, b, c)
        if not dt.is_integer(common):  # NumPy: uint64 with int64 has no integer type holding both
            raise ExprTypeError(
                f"operator '{op}' on {a} and {b}: no integer type holds both (NumPy would compute in "
                f"{common}); convert one, e.g. int64(...)"
            )
        return common
    if not c and op == "-" and a in _BOOLEANS and b in _BOOLEANS:
        raise ExprTypeError(
            "binary '-' of two booleans (NumPy refuses it); use '^' or convert one with int()"
        )
    if c:
        if op in ("//", "**"):
            raise ExprTypeError(f"operator '{op}' is not C; SODA programs cannot use it")
        if op == "%":
            _require_integer(op, a, b)
        return dt.c_common(a, b)
    if op == "/":
        return dt.np_true_divide(a, b)
    return dt.np_common(a, b)


def _call_type(func: str, args: list[str], c: bool) -> str:
    if func not in FUNCTIONS:
        raise ExprTypeError(f"unknown function '{func}'")
    arity = FUNCTIONS[func]
    if (arity is None and len(args) < 2) or (arity is not None and len(args) != arity):
        want = "at least 2" if arity is None else str(arity)
        raise ExprTypeError(f"function '{func}' takes {want} arguments, {len(args)} given")
    common = reduce(lambda x, y: _common(x, y, c), args)
    if func in ("min", "max"):
        return common
    if func == "abs" and dt.is_integer(common):
        return dt.c_promote(common) if c else common
    if c:
        return "float32" if dt.c_promote(common) == "float32" else "float64"
    return dt.np_float_result(common)
