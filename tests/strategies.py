"""Hypothesis strategies for random, valid stencil programs (random windows, dims, boundaries, DAGs)."""

from __future__ import annotations

from hypothesis import strategies as st

from stencilmap.program.expr import Binary, Call, Const, Expr, Ref, Select, Unary
from stencilmap.program.ir import Boundary, Input, Program, Stencil
from stencilmap.program.verify import verify


@st.composite
def expressions(draw: st.DrawFn, fields: list[tuple[str, int]], depth: int, radius: int, c: bool) -> Expr:
    def leaf() -> Expr:
        if draw(st.integers(0, 4)) == 0:
            v = draw(st.sampled_from([0.5, 2.0, 3.0, 0.25]))
            return Const(v, "float32" if c else "pyfloat")
        name, rank = draw(st.sampled_from(fields))
        offset = tuple(draw(st.integers(-radius, radius)) for _ in range(rank))
        return Ref(name, offset)

    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return leaf()
    kind = draw(st.sampled_from(["bin", "bin", "bin", "unary", "minmax", "select"]))
    sub = lambda: draw(expressions(fields, depth - 1, radius, c))  # noqa: E731
    if kind == "bin":
        return Binary(draw(st.sampled_from(["+", "-", "*"])), sub(), sub())
    if kind == "unary":
        return Unary("-", sub())
    if kind == "minmax":
        return Call(draw(st.sampled_from(["min", "max"])), (sub(), sub()))
    return Select(Binary(draw(st.sampled_from(["<", ">="])), sub(), sub()), sub(), sub())


@st.composite
def programs(draw: st.DrawFn, max_points: int = 60) -> Program:
    c = draw(st.booleans())
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    while len(shape) > 1 and _prod(shape) > max_points:
        shape = (*shape[:-1], max(1, shape[-1] // 2))
    dtype = draw(st.sampled_from(["float32", "float64"] if not c else ["float32", "float64", "int32"]))
    n_inputs = draw(st.integers(1, 2))
    inputs: list[Input] = []
    for n in range(n_inputs):
        axes = tuple(range(rank))
        if not c and n > 0 and draw(st.booleans()):
            axes = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), max_size=rank))))
        inputs.append(Input(f"in{n}", dtype, axes))
    iterate_ok = n_inputs == 1
    fields = [(i.name, len(i.axes)) for i in inputs]
    stencils: list[Stencil] = []
    for s in range(draw(st.integers(1, 3))):
        expr = draw(expressions(fields, 3, 2, c))
        read = sorted({r.field for r in _refs(expr)})
        boundary = tuple(
            (f, draw(st.sampled_from([Boundary("shrink"), Boundary("copy"), Boundary("constant", 1.5)])))
            for f in read
        )
        stencils.append(Stencil(f"s{s}", dtype, expr, (), boundary))
        fields.append((f"s{s}", rank))
    iterate = draw(st.integers(1, 2)) if iterate_ok else 1
    border = draw(st.sampled_from(["ignore", "preserve"])) if iterate_ok else "ignore"
    program = Program(
        name="random",
        format="soda" if c else "stencilflow",
        semantics="c" if c else "numpy",
        shape=shape,
        inputs=tuple(inputs),
        stencils=tuple(stencils),
        outputs=(stencils[-1].name,),
        iterate=iterate,
        border=border,
    )
    verify(program)
    return program


def _prod(shape: tuple[int, ...]) -> int:
    out = 1
    for n in shape:
        out *= n
    return out


def _refs(e: Expr) -> list[Ref]:
    from stencilmap.program.expr import refs

    return list(refs(e))
