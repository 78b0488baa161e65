"""What a program asks of the triggered-instruction CGRA's workers (CGRA paper §III): the products of a
linear stencil, ordered the way their operands reach a compute worker.

The mapping serves programs whose output is ``c + Σ c_t · f_t(p + o_t)`` over input fields ``f_t`` with
constant coefficients (the paper's star stencils, and any other constant-coefficient window): the linear
form of ``analysis.linear``, local stencils substituted (the same defined points under ``shrink``).
Everything else is refused with one line saying why (``CgraRefusal``).
"""

from __future__ import annotations

from dataclasses import dataclass

from stencilmap.analysis.linear import LinearForm, NotLinear, Offset, linear_form
from stencilmap.errors import StencilmapError
from stencilmap.program.dtypes import is_float
from stencilmap.program.expr import Binary, Call, Expr, Select, Unary, Var
from stencilmap.program.ir import Program, Stencil

__all__ = ["LinearStencil", "Offset", "Term", "arrival_order", "linear_stencil", "refusal"]


@dataclass(frozen=True, slots=True)
class Term:
    """One product c · field(p + offset) of a compute worker's MUL/MAC chain (§III-A, Fig. 5)."""

    field: str
    offset: Offset
    coeff: float


@dataclass(frozen=True, slots=True)
class LinearStencil:
    """The output as ``constant + Σ terms``, terms in arrival order (see ``arrival_order``)."""

    output: str
    dtype: str
    constant: float
    terms: tuple[Term, ...]
    fields: tuple[str, ...]  # the input fields read, sorted

    def halo(self) -> tuple[Offset, Offset]:
        """Per axis the reach below (≥ 0) and above (≥ 0) of one application."""
        lo = tuple(max(0, -min(t.offset[a] for t in self.terms)) for a in range(3))
        hi = tuple(max(0, max(t.offset[a] for t in self.terms)) for a in range(3))
        return (lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2])


def refusal(reason: str) -> StencilmapError:
    return StencilmapError(f"the CGRA mapping cannot serve this program: {reason}")


def arrival_order(t: Term) -> tuple[Offset, str]:
    """Readers stream the grid in row-major order, so operands arrive in the order of their offsets:
    planes above, rows above, then the row's x neighbours, rows below (§III-B: the y chain's data of
    rows j − r_y.. reach the worker before row j's). Chaining products in this order lets each MAC
    wait only for data that is on its way."""
    return (t.offset, t.field)


def linear_stencil(program: Program) -> LinearStencil:
    """The program's one output as a linear form of its inputs, or a ``refusal``."""
    _check_program(program)
    out = program.stencil(program.outputs[0])
    assert out is not None
    const, coeff = _linear(program, out)
    terms = tuple(
        sorted(
            (Term(f, o, c) for (f, o), c in coeff.items() if c != 0.0),
            key=arrival_order,
        )
    )
    if not terms:
        raise refusal("its output reads no input (a constant needs no worker)")
    return LinearStencil(out.name, out.dtype, const, terms, tuple(sorted({t.field for t in terms})))


def _check_program(program: Program) -> None:
    if len(program.outputs) != 1:
        raise refusal(f"it has {len(program.outputs)} outputs; the workers compute one output field")
    if program.params:
        raise refusal("it reads param arrays; coefficients must be constants (§III-A)")
    for inp in program.inputs:
        if inp.axes != tuple(range(program.rank)):
            raise refusal(f"input '{inp.name}' spans axes {inp.axes}: readers stream whole grids")
        if not is_float(inp.dtype):
            raise refusal(f"input '{inp.name}' is {inp.dtype}: the MUL/MAC PEs are floating-point")
    for st in program.stencils:
        if not is_float(st.dtype):
            raise refusal(f"stencil '{st.name}' computes {st.dtype}: the MUL/MAC PEs are floating-point")
        for name, b in st.boundary:
            if b.kind != "shrink":
                raise refusal(f"stencil '{st.name}' reads '{name}' with a {b.kind} boundary (only shrink)")
    if program.iterate > 1 and len(program.inputs) != 1:
        raise refusal("iterating a program of several inputs: §IV chains one field through the layers")
    if program.iterate > 1 and program.feeds() != ((program.inputs[0].name, program.outputs[0]),):
        raise refusal("a feedback mapping other than output 1 → input 1: §IV chains the first output")


def _linear(program: Program, st: Stencil) -> LinearForm:
    """``analysis.linear.linear_form`` with its ``NotLinear`` worded as this mapping's refusal."""
    try:
        return linear_form(program, st)
    except NotLinear as exc:
        if exc.reason == "unknown":
            raise refusal(f"it reads '{exc.field}', neither an input nor a stencil") from None
        if exc.reason == "product" and isinstance(exc.node, Binary):
            raise refusal(
                f"it multiplies or divides two fields ('{exc.node.op}'); §III's MACs take constant coefficients"
            ) from None
        raise refusal(
            f"its expression is not linear with constant coefficients ({_what(exc.node)}); §III maps MUL/MAC chains"
        ) from None


def _what(e: Expr) -> str:
    if isinstance(e, Call):
        return f"a call to {e.func}"
    if isinstance(e, Select):
        return "a ternary"
    if isinstance(e, Binary):
        return f"operator '{e.op}'"
    if isinstance(e, Unary):
        return f"operator '{e.op}'"
    if isinstance(e, Var):
        return f"'{e.name}'"
    return type(e).__name__
