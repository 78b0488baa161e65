"""The Program IR: one immutable description of a stencil program, whatever format it came from.

Axis order is C order (the last axis varies fastest in memory). A SODA ``name(x, y)`` has shape
``(Y, X)``; a StencilFlow program over ``i, j, k`` has shape ``(I, J, K)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from stencilmap.program.dtypes import Semantics
from stencilmap.program.expr import Expr

SourceKind = Literal["file", "constant", "random", "inline", "scalar"]
BoundaryKind = Literal["constant", "copy", "shrink"]
Border = Literal["ignore", "preserve"]
Format = Literal["soda", "stencilflow"]


@dataclass(frozen=True, slots=True)
class DataSource:
    """Where an input's values come from (StencilFlow ``data``); inputs without one are generated."""

    kind: SourceKind
    path: str | None = None  # file: as written in the program, relative to the program file
    value: float | None = None  # constant / scalar
    low: float | None = None  # random
    high: float | None = None
    values: tuple[float, ...] = ()  # inline


@dataclass(frozen=True, slots=True)
class Boundary:
    """How a stencil treats reads of one field outside the grid.

    ``constant``: the read yields ``value``; ``copy``: it yields the centre value (offset 0);
    ``shrink``: the output point is undefined (not computed).
    """

    kind: BoundaryKind
    value: float = 0.0


SHRINK = Boundary("shrink")


@dataclass(frozen=True, slots=True)
class Input:
    """An input field: dtype, the iteration axes it spans (``()`` for a 0-D scalar), its data source."""

    name: str
    dtype: str
    axes: tuple[int, ...]
    source: DataSource | None = None
    banks: tuple[int, ...] = ()
    loc: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ParamPartition:
    """A SODA param's ``partition`` attribute (SODA compiler grammar): ``complete`` or ``cyclic`` with a factor,
    along dimension ``dim`` (1 = the leftmost size, as HLS ``array_partition`` counts; ``None``: every one)."""

    strategy: str
    factor: int | None = None
    dim: int | None = None


@dataclass(frozen=True, slots=True)
class Param:
    """A small constant array (SODA ``param``) read by element, ``name[i][j]``; values are inputs.

    ``dup`` and ``partitions`` are SODA's storage hints for its on-chip copy of the array. stencilmap folds a
    param's values into the generated code as literals, so every PE reads its own constants: the hints are
    checked and kept (the program prints back with them) but change no design."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    banks: tuple[int, ...] = ()
    dup: int = 1
    partitions: tuple[ParamPartition, ...] = ()
    loc: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Constant:
    """A named compile-time scalar (StencilFlow ``constants``)."""

    name: str
    value: float
    dtype: str
    loc: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Temp:
    """A local temporary evaluated before the stencil's expression (SODA ``let``, StencilFlow ``t = e;``)."""

    name: str
    dtype: str | None
    expr: Expr


@dataclass(frozen=True, slots=True)
class Stencil:
    """One stencil: its output field ``name`` of ``dtype`` is ``expr`` evaluated at every point."""

    name: str
    dtype: str
    expr: Expr
    temps: tuple[Temp, ...] = ()
    boundary: tuple[tuple[str, Boundary], ...] = ()  # per field read, sorted by field name
    banks: tuple[int, ...] = ()
    loc: str | None = field(default=None, compare=False)

    def boundary_of(self, field_name: str) -> Boundary:
        for name, b in self.boundary:
            if name == field_name:
                return b
        return SHRINK


@dataclass(frozen=True, slots=True)
class Hints:
    """Hardware hints the formats carry: SODA unroll/burst/tile/cluster, StencilFlow vectorization."""

    unroll: int = 1
    burst_width: int | None = None
    vectorization: int = 1
    tile: tuple[int, ...] | None = None  # SODA tile sizes of all but the outermost axis, C order
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class Program:
    """A whole stencil program: a DAG of stencils over one iteration space, applied ``iterate`` times."""

    name: str
    format: Format
    semantics: Semantics
    shape: tuple[int | None, ...]  # None: given at run time (SODA's ``*``)
    inputs: tuple[Input, ...]
    stencils: tuple[Stencil, ...]
    outputs: tuple[str, ...]
    params: tuple[Param, ...] = ()
    constants: tuple[Constant, ...] = ()
    iterate: int = 1
    border: Border = "ignore"
    hints: Hints = Hints()
    #: (output, input) pairs: the output of one time step becomes that input of the next (and fills its
    #: undefined points under ``border: preserve``); ``()``: output i feeds input i (positional).
    feedback: tuple[tuple[str, str], ...] = ()
    path: str | None = field(default=None, compare=False)
    feedback_loc: str | None = field(default=None, compare=False)  # SODA: file:line:col of ``feedback:``
    warnings: tuple[str, ...] = field(default=(), compare=False)
    #: Where the front end read program-wide settings, for error messages: (key, "file:line:col" or
    #: "file: json.path") pairs; keys ``iterate``, ``border``, ``unroll``, ``vectorization``, ``shape``
    #: (the statement that fixes the rank), ``outputs``.
    locs: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    #: Name → input and name → stencil, built on first use (``_index``): lookups in O(1), not a scan per call
    #: (a 3,000-stencil program asks for a field's type hundreds of thousands of times).
    _index: tuple[dict[str, Input], dict[str, Stencil]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def _names(self) -> tuple[dict[str, Input], dict[str, Stencil]]:
        index = self._index
        if index is None:  # the first of a name wins, as a scan would find it (unverified programs)
            index = ({i.name: i for i in reversed(self.inputs)}, {s.name: s for s in reversed(self.stencils)})
            object.__setattr__(self, "_index", index)
        return index

    def loc_of(self, key: str) -> str | None:
        """Where setting ``key`` was written (``locs``), else the program's file."""
        return next((loc for k, loc in self.locs if k == key), self.path)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def input(self, name: str) -> Input | None:
        return self._names()[0].get(name)

    def stencil(self, name: str) -> Stencil | None:
        return self._names()[1].get(name)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def constant(self, name: str) -> Constant | None:
        return next((c for c in self.constants if c.name == name), None)

    def field_axes(self, name: str) -> tuple[int, ...]:
        """Axes a field spans: an input's declared axes, or all axes for a stencil output."""
        inp = self.input(name)
        return inp.axes if inp is not None else tuple(range(self.rank))

    def field_dtype(self, name: str) -> str:
        inp = self.input(name)
        if inp is not None:
            return inp.dtype
        st = self.stencil(name)
        if st is None:
            raise KeyError(name)
        return st.dtype

    def feeds(self) -> tuple[tuple[str, str], ...]:
        """(input, output) pairs of ``iterate``/``preserve``: ``feedback`` by name when given, else output i
        paired with input i. Inputs in no pair keep their values every step (coefficients)."""
        if self.feedback:
            return tuple((i, o) for o, i in self.feedback)
        return tuple(zip((i.name for i in self.inputs), self.outputs, strict=False))

    def with_shape(self, shape: tuple[int, ...]) -> Program:
        return replace(self, shape=shape)


def axis_names(rank: int) -> tuple[str, ...]:
    """StencilFlow's names of the iteration axes: ``k`` is innermost (``j, k`` in 2-D, ``k`` in 1-D)."""
    return ("i", "j", "k")[3 - rank :]
