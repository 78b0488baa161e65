"""A stencil as a constant-coefficient linear form of its inputs: ``c + Σ c_t · f_t(p + o_t)``.

The EMAX library (EMAX §4.2: the coefficients C multiply the input array A) and the CGRA's MUL/MAC worker
chains (CGRA §III-A, Fig. 5) both serve exactly these stencils, so both builders ask this one analysis.
Temporaries are substituted; a read of a local stencil substitutes that stencil's own form shifted by the
read's offset (a several-stage linear program is one linear form of its inputs: the same values up to
rounding). Anything else raises ``NotLinear`` naming the node that is not linear; each builder words its
own refusal from it.
"""

from __future__ import annotations

from typing import Literal

from stencilmap.errors import StencilmapError
from stencilmap.program.dtypes import is_float
from stencilmap.program.expr import Binary, Cast, Const, Expr, Ref, Unary, Var
from stencilmap.program.ir import Program, Stencil

Offset = tuple[int, int, int]  # (dz, dy, dx), C order; lower-rank programs pad with zeros
Key = tuple[str, Offset]  # (input field, offset)
LinearForm = tuple[float, dict[Key, float]]

#: Why a node is not linear: an expression kind the form has no rule for, a product or quotient of two
#: field reads, a read of a name that is neither an input nor a stencil.
Reason = Literal["node", "product", "unknown"]


class NotLinear(StencilmapError):
    """The node at which the linear form stops, and why (``Reason``)."""

    def __init__(self, node: Expr, reason: Reason, field: str = "") -> None:
        super().__init__(f"not a constant-coefficient linear form ({reason} at {type(node).__name__})")
        self.node = node
        self.reason: Reason = reason
        self.field = field


def pad(offset: tuple[int, ...], rank: int) -> Offset:
    """An offset of a rank-``rank`` program as three axes (leading zeros)."""
    full = (0,) * (3 - rank) + tuple(offset)
    return (full[0], full[1], full[2])


def linear_form(program: Program, st: Stencil) -> LinearForm:
    """``st``'s expression as (constant, {(input, offset): coefficient}); raises ``NotLinear``."""
    return _Linearizer(program).stencil(st)


class _Linearizer:
    """Expression → (constant, {(field, offset): coefficient}); local stencils substituted."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.rank = program.rank

    def stencil(self, st: Stencil, shift: Offset = (0, 0, 0)) -> LinearForm:
        temps = {t.name: t.expr for t in st.temps}
        return self.expr(st.expr, temps, shift)

    def expr(self, e: Expr, temps: dict[str, Expr], shift: Offset) -> LinearForm:
        if isinstance(e, Const) and not isinstance(e.value, bool):
            return float(e.value), {}
        if isinstance(e, Ref):
            return self._ref(e, shift)
        if isinstance(e, Var) and not e.index:
            if e.name in temps:
                return self.expr(temps[e.name], temps, shift)
            c = self.program.constant(e.name)
            if c is not None:
                return float(c.value), {}
        if isinstance(e, Cast) and is_float(e.dtype):
            return self.expr(e.operand, temps, shift)
        if isinstance(e, Unary) and e.op in ("-", "+"):
            k, t = self.expr(e.operand, temps, shift)
            return (-k, {o: -v for o, v in t.items()}) if e.op == "-" else (k, t)
        if isinstance(e, Binary) and e.op in ("+", "-", "*", "/"):
            return self._binary(e, temps, shift)
        raise NotLinear(e, "node")

    def _ref(self, e: Ref, shift: Offset) -> LinearForm:
        o = pad(e.offset, self.rank)
        at = (o[0] + shift[0], o[1] + shift[1], o[2] + shift[2])
        if self.program.input(e.field) is not None:
            return 0.0, {(e.field, at): 1.0}
        local = self.program.stencil(e.field)
        if local is None:
            raise NotLinear(e, "unknown", e.field)
        return self.stencil(local, at)

    def _binary(self, e: Binary, temps: dict[str, Expr], shift: Offset) -> LinearForm:
        (ka, ta), (kb, tb) = self.expr(e.lhs, temps, shift), self.expr(e.rhs, temps, shift)
        if e.op in ("+", "-"):
            s = 1.0 if e.op == "+" else -1.0
            return ka + s * kb, {o: ta.get(o, 0.0) + s * tb.get(o, 0.0) for o in {*ta, *tb}}
        if e.op == "*" and not ta:
            return ka * kb, {o: ka * v for o, v in tb.items()}
        if e.op in ("*", "/") and not tb and (e.op == "*" or kb != 0):
            f = kb if e.op == "*" else 1.0 / kb
            return ka * f, {o: v * f for o, v in ta.items()}
        raise NotLinear(e, "product")
