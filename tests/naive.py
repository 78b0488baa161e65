"""A naive per-point evaluator of the Program IR, written independently of the reference executor's
whole-array logic (indexing, boundaries, definedness, iterate), to check it point by point."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from stencilmap.backends import ops
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.graph import stencil_order
from stencilmap.program.ir import Program, Stencil
from stencilmap.program.typecheck import TypeEnv, infer, stencil_types


def naive_run(program: Program, inputs: Mapping[str, np.ndarray]) -> tuple[dict, dict]:
    shape = tuple(int(n) for n in program.shape)  # type: ignore[arg-type]
    values = {k: np.asarray(v) for k, v in inputs.items()}
    defined = {i.name: np.ones(values[i.name].shape, bool) for i in program.inputs}
    for _ in range(program.iterate):
        for st in stencil_order(program):
            out = np.zeros(shape, dtype=st.dtype)
            ok = np.zeros(shape, dtype=bool)
            for p in np.ndindex(*shape):
                out[p], ok[p] = _point(program, st, values, defined, p)
            values[st.name], defined[st.name] = out, ok
        for inp, name in zip(program.inputs, program.outputs, strict=False):
            if program.border == "preserve":
                for p in np.ndindex(*shape):
                    if not defined[name][p]:
                        values[name][p] = values[inp.name][p]
                        defined[name][p] = defined[inp.name][p]
            if program.iterate > 1:
                values[inp.name], defined[inp.name] = values[name], defined[name]
    outs = {}
    for name in program.outputs:
        v = values[name].copy()
        for p in np.ndindex(*shape):
            if not defined[name][p]:
                v[p] = np.nan if v.dtype.kind == "f" else 0
        outs[name] = v
    return outs, {n: defined[n] for n in program.outputs}


def _point(program: Program, st: Stencil, values, defined, p) -> tuple[object, bool]:
    ok = [True]

    def read(ref: Ref) -> np.ndarray:
        arr, mask = values[ref.field], defined[ref.field]
        axes = program.field_axes(ref.field)
        if not axes:
            ok[0] &= bool(mask[()])
            return arr[()]
        centre = tuple(p[a] for a in axes)
        idx = tuple(p[a] + o for a, o in zip(axes, ref.offset, strict=True))
        b = st.boundary_of(ref.field)
        if all(0 <= i < n for i, n in zip(idx, arr.shape, strict=True)):
            ok[0] &= bool(mask[idx])
            return arr[idx]
        if b.kind == "constant":
            return ops.as_type(np.asarray(b.value), str(arr.dtype))
        if b.kind == "copy":
            ok[0] &= bool(mask[centre])
            return arr[centre]
        ok[0] = False
        return arr[centre]

    env, temp_types = stencil_types(program, st)
    temps: dict[str, np.ndarray] = {}
    for t in st.temps:
        temps[t.name] = ops.as_type(
            np.asarray(_eval(t.expr, env, program, read, temps, values)), temp_types[t.name]
        )
    value = ops.as_type(np.asarray(_eval(st.expr, env, program, read, temps, values)), st.dtype)
    return value[()], ok[0]


def _eval(
    e: Expr, env: TypeEnv, program: Program, read: Callable[[Ref], np.ndarray], temps, values
) -> np.ndarray:
    def ev(x: Expr) -> np.ndarray:
        return np.asarray(_eval(x, env, program, read, temps, values))

    if isinstance(e, Const):
        return np.asarray(e.value, dtype=dt.concrete(e.dtype))
    if isinstance(e, Ref):
        return np.asarray(read(e))
    if isinstance(e, Var):
        if e.name in temps:
            return temps[e.name]
        c = program.constant(e.name)
        if c is not None:
            return np.asarray(c.value, dtype=dt.concrete(c.dtype))
        return np.asarray(values[e.name][e.index])
    if isinstance(e, Cast):
        return ops.as_type(ev(e.operand), e.dtype)
    if isinstance(e, Unary):
        return ops.unary(e.op, ev(e.operand), infer(e, env))
    if isinstance(e, Binary):
        return ops.binary(e.op, ev(e.lhs), ev(e.rhs), infer(e.lhs, env), infer(e.rhs, env), infer(e, env),
                          program.semantics)  # fmt: skip
    if isinstance(e, Select):
        return ops.select(ev(e.cond), ev(e.then), ev(e.else_), infer(e, env))
    if isinstance(e, Call):
        return ops.call(e.func, [ev(a) for a in e.args], infer(e, env), program.semantics)
    raise TypeError(e)
