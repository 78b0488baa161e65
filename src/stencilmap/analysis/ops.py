"""Operation counts per stencil and per output point, by kind.

Kinds: ``add`` (binary ``+``/``-``, and unary minus), ``mul``, ``div`` (``/``, ``//``, ``%``), ``pow``
(``**`` and ``pow``), ``sqrt``, ``minmax`` (``min``/``max``/``fmin``/``fmax``; n arguments count n − 1),
``compare``, ``select``, ``logic`` (``&&``, ``||``, ``!``), ``bitwise`` (``&``, ``|``, ``^``, ``~``),
``cast``, and every other math function under its own name (``exp``, ``fabs``, ...). ``fma`` counts one
``mul`` and one ``add``.

Choices: unary minus is a subtraction from zero, so it counts as ``add`` (StencilFlow's tree also counts
a ``neg`` node); unary plus is nothing. Constant subexpressions (no field read, no named value) are folded
at compile time and count nothing, so ``-0.5`` or ``1.0 / 3`` cost no operation. No common subexpression
elimination: the expression tree is counted as written, each temporary once per point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from stencilmap.program.expr import (
    BITWISE_OPS,
    COMPARE_OPS,
    LOGIC_OPS,
    Binary,
    Call,
    Cast,
    Expr,
    InBounds,
    Ref,
    Select,
    Unary,
    Var,
    children,
    postorder,
    walk,
)
from stencilmap.program.ir import Program, Stencil

_BINARY_KIND = {"+": "add", "-": "add", "*": "mul", "/": "div", "//": "div", "%": "div", "**": "pow"}
_BINARY_KIND.update({op: "compare" for op in COMPARE_OPS})
_BINARY_KIND.update({op: "logic" for op in LOGIC_OPS})
_BINARY_KIND.update({op: "bitwise" for op in BITWISE_OPS})
_UNARY_KIND = {"-": "add", "!": "logic", "~": "bitwise"}
_MINMAX = ("min", "max", "fmin", "fmax")


@dataclass(frozen=True, slots=True)
class OpCounts:
    """Operation counts by kind, sorted by kind name, zero counts omitted."""

    counts: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def of(pairs: Iterable[tuple[str, int]]) -> OpCounts:
        acc: dict[str, int] = {}
        for kind, n in pairs:
            acc[kind] = acc.get(kind, 0) + n
        return OpCounts(tuple(sorted((k, n) for k, n in acc.items() if n)))

    def __getitem__(self, kind: str) -> int:
        return dict(self.counts).get(kind, 0)

    def __add__(self, other: OpCounts) -> OpCounts:
        return OpCounts.of((*self.counts, *other.counts))

    def scaled(self, factor: int) -> OpCounts:
        return OpCounts.of((k, n * factor) for k, n in self.counts)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts)

    def as_dict(self) -> dict[str, int]:
        return dict(self.counts)


def is_constant(e: Expr) -> bool:
    """True when no field and no named value occurs in ``e``: it folds to a literal at compile time."""
    return not any(isinstance(n, Ref | Var | InBounds) for n in walk(e))


def node_ops(e: Expr) -> tuple[tuple[str, int], ...]:
    """The operations one node performs itself (its children excluded), as (kind, count) pairs."""
    if isinstance(e, Binary):
        return ((_BINARY_KIND[e.op], 1),)
    if isinstance(e, Unary):
        kind = _UNARY_KIND.get(e.op)
        return ((kind, 1),) if kind is not None else ()
    if isinstance(e, Select):
        return (("select", 1),)
    if isinstance(e, Cast):
        return (("cast", 1),)
    if isinstance(e, Call):
        return _call_ops(e)
    if isinstance(e, InBounds):  # 0 <= p_d + o_d < n_d on every axis it moves along, and-ed
        moved = sum(1 for o in e.offset if o)
        return (("compare", 2 * moved), ("logic", max(0, 2 * moved - 1))) if moved else ()
    return ()


def _call_ops(e: Call) -> tuple[tuple[str, int], ...]:
    if e.func in _MINMAX:
        return (("minmax", len(e.args) - 1),)
    if e.func == "fma":
        return (("mul", 1), ("add", 1))
    return ((e.func, 1),)


def constant_nodes(e: Expr) -> set[int]:
    """``id`` of every node of ``e`` that ``is_constant`` (found in one pass, children first)."""
    const: set[int] = set()
    for node in postorder(e):
        if not isinstance(node, Ref | Var | InBounds) and all(id(c) in const for c in children(node)):
            const.add(id(node))
    return const


def count_ops(e: Expr) -> OpCounts:
    """Operations of an expression tree; constant subtrees are folded and count nothing."""
    const = constant_nodes(e)
    pairs: list[tuple[str, int]] = []
    stack = [e]
    while stack:
        node = stack.pop()
        if id(node) in const:
            continue
        pairs.extend(node_ops(node))
        stack.extend(children(node))
    return OpCounts.of(pairs)


def stencil_ops(stencil: Stencil) -> OpCounts:
    """Operations a stencil performs per output point: its expression and each temporary once."""
    total = count_ops(stencil.expr)
    for t in stencil.temps:
        total = total + count_ops(t.expr)
    return total


def program_ops(program: Program) -> dict[str, OpCounts]:
    """Operations per output point of every stencil of one pass, keyed by stencil name."""
    return {s.name: stencil_ops(s) for s in program.stencils}


def ops_per_point(program: Program) -> OpCounts:
    """Operations per point of the iteration space for the whole run: all stencils, ``iterate`` times."""
    return merged(program_ops(program)).scaled(max(1, program.iterate))


def merged(counts: Mapping[str, OpCounts]) -> OpCounts:
    """The sum of several stencils' counts."""
    total = OpCounts()
    for c in counts.values():
        total = total + c
    return total
