"""The lowered form of one stencil: typed values in SSA order (each after its arguments).

A value is a field read (``Read``), the in-bounds test of a fusion guard (``Inside``), an element of a ``param`` array (``Param``), a literal already
converted to its type (``Lit``), or one named operation (``Op``, see ``ops.OPS``) whose arguments are the
numbers of earlier values and whose operands all have the types the operation expects: every conversion
is an explicit ``Op``, so a printer never infers a type.
"""

from __future__ import annotations

from dataclasses import dataclass


class Unsupported(Exception):
    """A construct the lowering or a dialect cannot reproduce bit for bit (the message names it: "function
    'sin' on int32"); the caller reports it."""


class Undefined(Unsupported):
    """An operation the semantics leave undefined (the message is a sentence)."""


@dataclass(frozen=True, slots=True)
class Read:
    """``field`` at ``offset`` (C order over the axes the field spans), of the field's dtype."""

    field: str
    offset: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class Inside:
    """``InBounds(offset)``: whether the point plus ``offset`` (one entry per axis of the iteration space)
    lies inside the grid, a ``bool``; the printer's caller knows the point and the grid."""

    offset: tuple[int, ...]
    dtype: str = "bool"


@dataclass(frozen=True, slots=True)
class Param:
    """Element ``index`` of the ``param`` array ``name`` (its values are bound when rendering)."""

    name: str
    index: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal: ``value`` is exactly ``np.asarray(v, dtype)`` of the source literal ``v``."""

    value: int | float | bool
    dtype: str


@dataclass(frozen=True, slots=True)
class Op:
    """``op(args…)`` of result type ``dtype``; ``attr``: the library function of ``libm``, else ""."""

    op: str
    args: tuple[int, ...]
    dtype: str
    attr: str = ""


Value = Read | Param | Lit | Op | Inside


@dataclass(frozen=True, slots=True)
class TempValue:
    """A stencil temporary: its name, the value it holds (already of ``dtype``) and that dtype."""

    name: str
    value: int
    dtype: str


@dataclass(frozen=True, slots=True)
class ScalarKernel:
    """One stencil lowered: ``values`` in SSA order, ``temps`` in definition order, and the value of the
    stencil (already converted to ``dtype``, the stored type of the output field)."""

    name: str
    dtype: str
    semantics: str
    values: tuple[Value, ...]
    temps: tuple[TempValue, ...]
    result: int

    def reads(self) -> tuple[Read, ...]:
        """The distinct reads, in first-use order."""
        seen: dict[Read, None] = {}
        for v in self.values:
            if isinstance(v, Read):
                seen.setdefault(v, None)
        return tuple(seen)

    def ops_used(self) -> frozenset[tuple[str, str, str]]:
        """Every (op, dtype, attr) the kernel computes."""
        return frozenset((v.op, v.dtype, v.attr) for v in self.values if isinstance(v, Op))
