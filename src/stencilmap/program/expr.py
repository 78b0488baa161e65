"""Expression nodes of the Program IR (frozen, hashable) and small pure helpers over them.

Offsets are in C order over the axes the accessed field spans: for a 2-D program ``Ref("a", (-1, 0))``
reads ``a[y-1, x]``. Operators use C spellings in both formats (``&&``, ``||``, ``!``); ``//`` and ``**``
exist only under NumPy semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

UNARY_OPS = ("-", "+", "!", "~")
ARITH_OPS = ("+", "-", "*", "/", "%", "//", "**")
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
LOGIC_OPS = ("&&", "||")
BITWISE_OPS = ("&", "|", "^")
BINARY_OPS = ARITH_OPS + COMPARE_OPS + LOGIC_OPS + BITWISE_OPS

#: Math functions both formats accept, with their arity (None: any count ≥ 2).
FUNCTIONS: dict[str, int | None] = {
    **{
        f: 1
        for f in (
            "sqrt",
            "cbrt",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "asinh",
            "acosh",
            "atanh",
            "fabs",
            "abs",
            "floor",
            "ceil",
            "trunc",
            "round",
            "rint",
            "erf",
            "erfc",
        )
    },
    **{f: 2 for f in ("pow", "atan2", "hypot", "fmod", "fmin", "fmax", "copysign", "fdim")},
    "fma": 3,
    "min": None,
    "max": None,
}


@dataclass(frozen=True, slots=True)
class Const:
    """A literal. ``dtype`` is a canonical dtype, or a weak kind (``pyint``/``pyfloat``) under NumPy rules."""

    value: int | float | bool
    dtype: str


@dataclass(frozen=True, slots=True)
class Ref:
    """A field read at a constant offset (one entry per axis the field spans; ``()`` for a 0-D field)."""

    field: str
    offset: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Var:
    """A named scalar: a local temporary, a program constant, or an element of a SODA ``param`` array."""

    name: str
    index: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True, slots=True)
class Select:
    """``cond ? then : else_`` (SODA ``select``; StencilFlow ``then if cond else else_``)."""

    cond: Expr
    then: Expr
    else_: Expr


@dataclass(frozen=True, slots=True)
class InBounds:
    """True (a ``bool``) where the point ``p + offset`` lies inside the grid; ``offset`` has one entry per
    axis of the iteration space. No front end writes it: fusion (``transform.fusion``) guards an inlined
    producer with it, ``Select(InBounds(o), producer at o, boundary value)``, so that a read the original
    made outside the grid still yields its boundary value. Definedness is unchanged by it (every read of a
    select counts, both branches), so fusion guards only reads that are defined on both sides."""

    offset: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Cast:
    dtype: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class Call:
    func: str
    args: tuple[Expr, ...]


Expr = Const | Ref | Var | Unary | Binary | Select | Cast | Call | InBounds


#: Deepest expression a front end accepts. A left-to-right sum of n terms nests n deep: a 21×21 window
#: (441 terms) or an 11×11×11 one (1,331) is well within; the command line runs with the stack to match.
MAX_DEPTH = 10_000


def children(e: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions of a node."""
    if isinstance(e, Unary | Cast):
        return (e.operand,)
    if isinstance(e, Binary):
        return (e.lhs, e.rhs)
    if isinstance(e, Select):
        return (e.cond, e.then, e.else_)
    if isinstance(e, Call):
        return e.args
    return ()


def walk(e: Expr) -> Iterator[Expr]:
    """All nodes of an expression, pre-order."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def postorder(e: Expr) -> Iterator[Expr]:
    """All nodes of an expression, children before their parent (iterative: any depth)."""
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(children(node)))


def depth(e: Expr) -> int:
    """Nesting depth of an expression (a leaf is 1; ``a + b + c`` is 3)."""
    best = 0
    stack = [(e, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in children(node))
    return best


def refs(e: Expr) -> Iterator[Ref]:
    """Every field access in an expression (with repetitions, in evaluation order)."""
    for node in walk(e):
        if isinstance(node, Ref):
            yield node


def shift(e: Expr, delta: dict[str, tuple[int, ...]]) -> Expr:
    """The expression with ``delta[field]`` added to every access of the named fields."""

    def moved(x: Expr) -> Expr | None:
        if isinstance(x, Ref) and x.field in delta:
            return Ref(x.field, tuple(o + d for o, d in zip(x.offset, delta[x.field], strict=True)))
        return None

    return map_expr(e, moved)


def map_expr(e: Expr, leaf: Callable[[Expr], Expr | None]) -> Expr:
    """``e`` with the nodes ``leaf`` replaces (it returns None for the others) rebuilt bottom-up."""
    new = leaf(e)
    if new is not None:
        return new
    if isinstance(e, Unary):
        return Unary(e.op, map_expr(e.operand, leaf))
    if isinstance(e, Cast):
        return Cast(e.dtype, map_expr(e.operand, leaf))
    if isinstance(e, Binary):
        return Binary(e.op, map_expr(e.lhs, leaf), map_expr(e.rhs, leaf))
    if isinstance(e, Select):
        return Select(map_expr(e.cond, leaf), map_expr(e.then, leaf), map_expr(e.else_, leaf))
    if isinstance(e, Call):
        return Call(e.func, tuple(map_expr(a, leaf) for a in e.args))
    return e
