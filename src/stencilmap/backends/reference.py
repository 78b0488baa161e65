"""The NumPy reference executor: the oracle. Simple, whole-array, obviously correct; not fast.

Semantics (ARCHITECTURE.md): every stencil is evaluated at every point of the iteration space. A read
``f[p + o]`` outside the grid takes the stencil's boundary condition for ``f``: ``constant`` yields the
value, ``copy`` yields the centre value ``f[p]``, ``shrink`` makes the point undefined. A point is defined
when every read of its expression (temporaries included) is defined, so undefined points propagate
through the DAG. ``iterate: q`` applies the program q times, output i feeding input i (or as ``feedback`` names them;
inputs fed by no output keep their values); with
``border: preserve`` the undefined points of each pass keep the value of the matching input. Output
points left undefined are NaN (float) or 0 (integer); ``Result.defined`` holds the masks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.graph import stencil_order
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import TypeEnv, infer, stencil_types

from . import ops

Array = npt.NDArray[Any]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, repr=False)
class Result(Mapping[str, "Array"]):
    """Outputs of a run (C-order arrays of the iteration shape) and which of their points are defined.

    A mapping of the outputs by name (``result["w"]`` is ``result.outputs["w"]``), so ``dict(result)``,
    ``"w" in result`` and ``for name in result`` read the outputs; ``defined`` holds their masks."""

    outputs: Mapping[str, Array]
    defined: Mapping[str, BoolArray]

    def __getitem__(self, name: str) -> Array:
        try:
            return self.outputs[name]
        except KeyError:
            raise KeyError(
                f"{name!r} is not an output (outputs: {', '.join(self.outputs) or 'none'})"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.outputs)

    def __len__(self) -> int:
        return len(self.outputs)

    def __repr__(self) -> str:
        items = ", ".join(
            f"{n}: {a.dtype}{list(a.shape)} {int(self.defined[n].sum()) if n in self.defined else a.size}/{a.size} defined"
            for n, a in self.outputs.items()
        )
        return f"Result({items})"


def shifted(arr: Array, offset: tuple[int, ...]) -> tuple[Array, BoolArray]:
    """``out[p] = arr[p + offset]`` where that is inside the array, and the mask of those points."""
    out = np.zeros_like(arr)
    inside = np.zeros(arr.shape, dtype=bool)
    dst: list[slice] = []
    src: list[slice] = []
    for n, o in zip(arr.shape, offset, strict=True):
        if abs(o) >= n:
            return out, inside
        dst.append(slice(max(0, -o), n - max(0, o)))
        src.append(slice(max(0, o), n - max(0, -o)))
    out[tuple(dst)] = arr[tuple(src)]
    inside[tuple(dst)] = True
    return out, inside


def undefined_value(dtype: np.dtype[np.generic]) -> float | int:
    return np.nan if dtype.kind == "f" else 0


def run_reference(program: Program, inputs: Mapping[str, Array]) -> Result:
    """Execute a shape-bound program on the given input (and param) values."""
    shape = tuple(int(n or 0) for n in program.shape)
    values: dict[str, Array] = {k: np.asarray(v) for k, v in inputs.items()}
    defined: dict[str, BoolArray] = {i.name: np.ones(values[i.name].shape, bool) for i in program.inputs}
    order = stencil_order(program)
    for _ in range(program.iterate):
        for st in order:
            values[st.name], defined[st.name] = _StencilEval(program, st, values, defined, shape).run()
        for inp, out in program.feeds():
            if program.border == "preserve":
                values[out] = np.where(defined[out], values[out], values[inp])
                defined[out] = defined[inp].copy()
            if program.iterate > 1:
                values[inp], defined[inp] = values[out], defined[out]
    outputs: dict[str, Array] = {}
    for name in program.outputs:
        v = values[name].copy()
        v[~defined[name]] = undefined_value(v.dtype)
        outputs[name] = v
    return Result(outputs, {n: defined[n] for n in program.outputs})


class _StencilEval:
    """Evaluation of one stencil over the whole grid."""

    def __init__(
        self,
        program: Program,
        stencil: Stencil,
        values: Mapping[str, Array],
        defined: Mapping[str, BoolArray],
        shape: tuple[int, ...],
    ) -> None:
        self.program = program
        self.stencil = stencil
        self.values = values
        self.defined_in = defined
        self.shape = shape
        self.env, self.temp_types = stencil_types(program, stencil)
        self.temps: dict[str, Array] = {}
        self.mask: BoolArray = np.ones(shape, dtype=bool)
        self.reads: dict[Ref, Array] = {}

    def run(self) -> tuple[Array, BoolArray]:
        semantics = self.program.semantics
        for t in self.stencil.temps:
            env = TypeEnv(semantics, self.env.fields, {**self.env.scalars}, self.env.params)
            self.temps[t.name] = ops.as_type(self.eval(t.expr, env), self.temp_types[t.name])
        value = ops.as_type(self.eval(self.stencil.expr, self.env), self.stencil.dtype)
        return np.broadcast_to(value, self.shape).copy(), self.mask

    def _expand(self, arr: Array, axes: tuple[int, ...]) -> Array:
        """A field array over its own axes, reshaped to broadcast over the full iteration space."""
        full = [1] * len(self.shape)
        for a, n in zip(axes, arr.shape, strict=True):
            full[a] = n
        return arr.reshape(full)

    def read(self, ref: Ref) -> Array:
        if ref in self.reads:
            return self.reads[ref]
        arr = self.values[ref.field]
        mask = self.defined_in[ref.field]
        axes = self.program.field_axes(ref.field)
        b = self.stencil.boundary_of(ref.field)
        if not axes:
            value, ok = arr, mask
        else:
            value, inside = shifted(arr, ref.offset)
            ok_in, _ = shifted(mask, ref.offset)
            if b.kind == "constant":
                fill = ops.as_type(np.asarray(b.value), str(arr.dtype))
                value = np.where(inside, value, fill)
                ok = np.where(inside, ok_in, True)
            elif b.kind == "copy":
                value = np.where(inside, value, arr)
                ok = np.where(inside, ok_in, mask)
            else:
                ok = ok_in & inside
        self.mask = self.mask & self._expand(np.asarray(ok, dtype=bool), axes)
        result = self._expand(np.asarray(value), axes)
        self.reads[ref] = result
        return result

    def eval(self, e: Expr, env: TypeEnv) -> Array:
        semantics = self.program.semantics
        if isinstance(e, Const):
            try:
                return np.asarray(e.value, dtype=dt.concrete(e.dtype))
            except OverflowError:  # issue 19 §9: 2**63 in an int64 program
                raise StencilmapError(
                    f"the constant {e.value} does not fit its type {dt.concrete(e.dtype)}"
                ) from None
        if isinstance(e, Ref):
            return self.read(e)
        if isinstance(e, Var):
            return self._var(e)
        if isinstance(e, Cast):
            return ops.as_type(self.eval(e.operand, env), e.dtype)
        if isinstance(e, Unary):
            return ops.unary(e.op, self.eval(e.operand, env), infer(e, env))
        if isinstance(e, Binary):
            ta, tb = infer(e.lhs, env), infer(e.rhs, env)
            a, b = self.eval(e.lhs, env), self.eval(e.rhs, env)
            return ops.binary(e.op, a, b, ta, tb, infer(e, env), semantics)
        if isinstance(e, Select):
            c, a, b = (self.eval(x, env) for x in (e.cond, e.then, e.else_))
            return ops.select(c, a, b, infer(e, env))
        if isinstance(e, Call):
            args = [self.eval(a, env) for a in e.args]
            return ops.call(e.func, args, infer(e, env), semantics)
        raise TypeError(f"unknown expression {e!r}")

    def _var(self, e: Var) -> Array:
        if e.name in self.temps:
            return self.temps[e.name]
        const = self.program.constant(e.name)
        if const is not None:
            return np.asarray(const.value, dtype=dt.concrete(const.dtype))
        return np.asarray(self.values[e.name][e.index])


def defined_region(mask: BoolArray) -> tuple[tuple[int, int], ...] | None:
    """Per-axis half-open bounds [lo, hi) of the defined points, or None when none is defined."""
    if not mask.any():
        return None
    bounds: list[tuple[int, int]] = []
    for axis in range(mask.ndim):
        other = tuple(a for a in range(mask.ndim) if a != axis)
        hit = np.flatnonzero(mask.any(axis=other))
        bounds.append((int(hit[0]), int(hit[-1]) + 1))
    return tuple(bounds)
