"""Small builders of Program IR values and the corpus location for the analysis tests."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from pathlib import Path

from stencilmap.program.expr import Binary, Const, Expr, Ref, Var
from stencilmap.program.ir import Input, Program, Stencil, Temp

CORPUS = Path(__file__).parents[2] / ".." / "shared" / "corpus"


def corpus_files() -> list[Path]:
    """Every corpus program (empty when the corpus is absent)."""
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob("soda/*.soda")) + sorted(CORPUS.glob("stencilflow/*.json"))


def total(terms: list[Expr]) -> Expr:
    """``t0 + t1 + …`` as a left-deep chain, the way both front ends build it."""
    return reduce(lambda a, b: Binary("+", a, b), terms)


def refs_sum(field: str, offsets: Sequence[tuple[int, ...]]) -> Expr:
    return total([Ref(field, o) for o in offsets])


def stencil(name: str, expr: Expr, dtype: str = "float32", temps: tuple[Temp, ...] = ()) -> Stencil:
    return Stencil(name, dtype, expr, temps)


def program(
    shape: tuple[int, ...],
    inputs: list[Input] | list[str],
    stencils: list[Stencil],
    outputs: tuple[str, ...] | None = None,
    iterate: int = 1,
    dtype: str = "float32",
) -> Program:
    """A StencilFlow-flavoured program; ``inputs`` may be names of full-rank inputs of ``dtype``."""
    ins = tuple(i if isinstance(i, Input) else Input(i, dtype, tuple(range(len(shape)))) for i in inputs)
    return Program(
        name="test",
        format="stencilflow",
        semantics="numpy",
        shape=shape,
        inputs=ins,
        stencils=tuple(stencils),
        outputs=outputs if outputs is not None else (stencils[-1].name,),
        iterate=iterate,
    )


FIVE_POINT = [(-1, 0), (0, -1), (0, 0), (0, 1), (1, 0)]


def coefficient_stencil(name: str, field: str) -> Stencil:
    """c0*a(0,0) + c1*a(0,1) + c2*a(0,-1) + c3*a(1,0) + c4*a(-1,0): 5 mul + 4 add."""
    offs = [(0, 0), (0, 1), (0, -1), (1, 0), (-1, 0)]
    return stencil(name, total([Binary("*", Var(f"c{n}"), Ref(field, o)) for n, o in enumerate(offs)]))


def jacobi(name: str, field: str) -> Stencil:
    """(a(-1,0) + a(0,-1) + a(0,0) + a(0,1) + a(1,0)) * 0.2"""
    return stencil(name, Binary("*", refs_sum(field, FIVE_POINT), Const(0.2, "pyfloat")))
