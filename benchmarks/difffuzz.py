"""Differential fuzzing of every executor against the NumPy reference (the oracle).

Random *valid* programs, wider than ``tests/strategies.py``: SODA (C semantics) and StencilFlow (NumPy
semantics) text, every dtype the formats allow (int8..uint64, float16/32/64), ``+ - * / %`` (and ``//``, ``**``
under NumPy), comparisons, ``&& || !``, ``& | ^ ~``, ``select``/``if``-``else``, casts, math calls (``sqrt exp abs
fabs min max floor round fmod pow ...``), temporaries, SODA params and StencilFlow constants, lower-dimensional
and scalar StencilFlow inputs, grids up to 64x64 or 16^3, radii up to 3, DAGs of up to 6 stencils, shrink /
copy / constant boundaries, ``iterate`` with ``feedback`` and ``border: preserve``, unroll / vector widths.
Inputs are drawn in several modes (small, full range of the integer type, negative, with NaN/inf).

Each program is printed as text, parsed back by the front end (so the files kept under ``--out`` reproduce
it), run by the reference and by every executor sampled for the case, and compared under the project's
tolerance (``sim.validate``: integers exactly, floats within rtol of the output's magnitude); host backends
must also give the reference's definedness masks. Mismatches a documented limit explains are counted apart
(``limit``): 64-bit integers beyond 2^53 in the simulators (their values travel as float64), float → 64-bit
integer conversions out of range (undefined: the semantics define the wrap for 8- to 32-bit targets only),
programs calling library functions (libm and NumPy may round the last bit differently, and a later
comparison or conversion to an integer can turn that bit into any difference), and NaN from ``sim-emax`` where
a star reads fewer neighbours than its degree's pattern multiplies (0 x inf at the unread ones). A tenth of
the cases are one-stage constant-coefficient stars over one float input (``draw_star``), which the EMAX
mapping serves.

Usage::

    .venv/bin/python benchmarks/difffuzz.py --seed 1 --cases 300 --out /tmp/difffuzz
    .venv/bin/python benchmarks/difffuzz.py --replay /tmp/difffuzz/s1-c17 --executors cpu

prints a table: per executor, the cases run, agreeing, mismatching, crashing, refused (the builder or backend
declines the program, with its reason counted) and explained by a limit. Every failing case is kept in
``--out`` as ``program.soda``/``program.json``, ``inputs.npz`` and ``case.json``, with the command that
replays it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # tests.backends.gpu_emulator: the gpu backend on the host
    sys.path.insert(0, str(ROOT))

from stencilmap.backends import ops  # noqa: E402
from stencilmap.backends import reference as reference_mod  # noqa: E402
from stencilmap.backends.cexpr import uses_inexact_math  # noqa: E402
from stencilmap.backends.reference import Result, run_reference  # noqa: E402
from stencilmap.errors import StencilmapError  # noqa: E402
from stencilmap.program import dtypes as dt  # noqa: E402
from stencilmap.program.data import bind_shape  # noqa: E402
from stencilmap.program.expr import (  # noqa: E402
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    Ref,
    Select,
    Unary,
    Var,
    children,
    refs,
    walk,
)
from stencilmap.program.ir import (  # noqa: E402
    Boundary,
    Constant,
    Hints,
    Input,
    Param,
    Program,
    Stencil,
    Temp,
    axis_names,
)
from stencilmap.program.soda import parse_soda  # noqa: E402
from stencilmap.program.soda_print import print_soda  # noqa: E402
from stencilmap.program.stencilflow import parse_stencilflow  # noqa: E402
from stencilmap.program.typecheck import ExprTypeError, TypeEnv, infer  # noqa: E402
from stencilmap.program.verify import verify  # noqa: E402
from stencilmap.sim.validate import validate  # noqa: E402

Array = Any

#: Executors, cheapest first. ``host`` ones are compared on their masks too.
EXECUTORS = (
    "cpu",
    "sim-soda",
    "sim-stencilflow",
    "sim-pcm",
    "sim-cgra",
    "sim-emax",
    "dask",
    "gpu-emu",
    "hls-soda",
    "hls-stencilflow",
    "hls-pcm",
    "opencl-pcm",
    "opencl-stencilflow",
)
HOST = ("cpu", "dask", "gpu-emu")
#: Executors run on every case; the others on a sampled share (``--slow-rate``) of the cases.
FAST = ("cpu", "sim-soda", "sim-stencilflow", "sim-pcm", "sim-cgra", "sim-emax")
SIMULATORS = ("sim-soda", "sim-stencilflow", "sim-pcm", "sim-cgra", "sim-emax")

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
#: Functions libm and NumPy compute alike (correctly rounded or exact).
EXACT_CALLS = ("sqrt", "abs", "fabs", "min", "max", "floor", "ceil", "trunc", "round", "rint", "fmin", "fmax",
               "copysign", "fdim", "fmod")  # fmt: skip
INEXACT_CALLS = ("exp", "log", "sin", "cos", "tanh", "cbrt", "exp2", "expm1", "log1p", "atan", "pow", "hypot",
                 "atan2", "erf", "fma")  # fmt: skip
ARITY = {"min": 0, "max": 0, "pow": 2, "hypot": 2, "atan2": 2, "fmod": 2, "fmin": 2, "fmax": 2, "copysign": 2,
         "fdim": 2, "fma": 3}  # fmt: skip

# ---------------------------------------------------------------------------------------------- generation


@dataclass
class Gen:
    """What one program's expressions may use."""

    rng: random.Random
    semantics: str  # "c" or "numpy"
    fields: dict[str, tuple[str, tuple[int, ...]]]  # name -> (dtype, axes)
    scalars: dict[str, str]  # constants and temporaries
    params: dict[str, tuple[str, tuple[int, ...]]]
    radius: int
    inexact: bool  # library functions allowed

    def env(self) -> TypeEnv:
        return TypeEnv(
            self.semantics,  # type: ignore[arg-type]
            {n: t for n, (t, _) in self.fields.items()},
            dict(self.scalars),
            {n: (t, len(s)) for n, (t, s) in self.params.items()},
        )


def type_of(g: Gen, e: Expr) -> str | None:
    try:
        return infer(e, g.env())
    except ExprTypeError:
        return None


def const(g: Gen, want_int: bool = False) -> Const:
    r = g.rng
    c = g.semantics == "c"
    if want_int or r.random() < 0.5:
        v = r.choice([0, 1, 2, 3, 5, 7, 8, 15, 31, 100, 255, 1000, 65535, 2**31 - 1])
        if not c:
            return Const(v, dt.WEAK_INT)
        t = r.choice(["int32", "int32", "uint32", "int64", "uint64"])
        return Const(v, t)
    v = r.choice([0.0, 0.5, 0.25, 1.5, 2.0, 3.0, 0.1, 1e-3, 1e3, 65504.0, 1e10])
    if not c:
        return Const(True, dt.WEAK_BOOL) if r.random() < 0.05 else Const(v, dt.WEAK_FLOAT)
    return Const(v, r.choice(["float32", "float64"]))


def leaf(g: Gen) -> Expr:
    r = g.rng
    roll = r.random()
    if roll < 0.12:
        return const(g)
    if roll < 0.2 and (g.scalars or g.params):
        if g.params and (not g.scalars or r.random() < 0.5):
            name, (_, shape) = r.choice(sorted(g.params.items()))
            return Var(name, tuple(r.randrange(n) for n in shape))
        return Var(r.choice(sorted(g.scalars)))
    name, (_, axes) = r.choice(sorted(g.fields.items()))
    return Ref(name, tuple(r.randint(-g.radius, g.radius) if r.random() < 0.7 else 0 for _ in axes))


def expression(g: Gen, depth: int) -> Expr:
    """A random well-typed expression (an ill-typed draw is retried, then replaced by a leaf)."""
    for _ in range(8):
        e = _draw(g, depth)
        if type_of(g, e) is not None:
            return e
    return leaf(g)


def _int_operand(g: Gen, e: Expr) -> Expr:
    t = type_of(g, e)
    if t is not None and dt.is_integer(t):
        return e
    return _cast(g, g.rng.choice(INTS), e)


def _cast(g: Gen, to: str, e: Expr) -> Cast:
    """``to(e)``; a float converted to a 64-bit integer is undefined out of range (and NaN): mostly avoided."""
    t = type_of(g, e)
    if to in ("int64", "uint64") and t is not None and dt.is_float(t) and g.rng.random() < 0.9:
        to = g.rng.choice(["int8", "int16", "int32", "uint8", "uint16", "uint32"])
    return Cast(to, e)


def _draw(g: Gen, depth: int) -> Expr:
    r = g.rng
    if depth <= 0 or r.random() < 0.2:
        return leaf(g)
    c = g.semantics == "c"
    sub = lambda: expression(g, depth - 1)  # noqa: E731
    kind = r.choices(
        ["arith", "div", "cmp", "logic", "bit", "unary", "select", "cast", "call"],
        [6, 2, 1.5, 0.7, 1.5, 1, 1, 1.5, 2],
    )[0]
    if kind == "arith":
        return Binary(r.choice("+-*"), sub(), sub())
    if kind == "div":
        ops_ = ["/", "%"] + ([] if c else ["//", "**"])
        op = r.choice(ops_)
        a, b = sub(), sub()
        if op == "%" and c:
            a, b = _int_operand(g, a), _int_operand(g, b)
        if op == "**":
            b = Const(r.choice([0, 1, 2, 3]), dt.WEAK_INT) if r.random() < 0.6 else b
        return Binary(op, a, b)
    if kind == "cmp":
        return Binary(r.choice(["==", "!=", "<", "<=", ">", ">="]), sub(), sub())
    if kind == "logic":
        if r.random() < 0.3:
            return Unary("!", sub())
        return Binary(r.choice(["&&", "||"]), sub(), sub())
    if kind == "bit":
        if r.random() < 0.25:
            return Unary("~", _int_operand(g, sub()))
        return Binary(r.choice("&|^"), _int_operand(g, sub()), _int_operand(g, sub()))
    if kind == "unary":
        return Unary(r.choice(["-", "-", "+"]), sub())
    if kind == "select":
        return Select(sub(), sub(), sub())
    if kind == "cast":
        return _cast(g, r.choice([*INTS, *FLOATS]), sub())
    funcs = list(EXACT_CALLS) + (list(INEXACT_CALLS) if g.inexact else [])
    f = r.choice(funcs)
    n = ARITY.get(f, 1) or r.randint(2, 3)
    return Call(f, tuple(sub() for _ in range(n)))


#: Share of cases drawn as a one-stage constant-coefficient star over one float input (``draw_star``): the
#: programs the EMAX mapping serves (the general draw almost never makes one: ``sim-emax`` refused them all)
STAR_RATE = 0.1


def draw_program(rng: random.Random) -> tuple[Program, tuple[int, ...]]:
    """A random program (IR, not yet printed) and the shape to bind it to."""
    c = rng.random() < 0.5
    rank = rng.choice([1, 2, 2, 3])
    limit = {1: 256, 2: 4096, 3: 4096}[rank]
    while True:
        shape = tuple(rng.randint(1, {1: 256, 2: 64, 3: 16}[rank]) for _ in range(rank))
        if math.prod(shape) <= limit and (rng.random() < 0.3 or min(shape) >= 4):
            break
    family = rng.random()
    pool = INTS if family < 0.4 else FLOATS if family < 0.8 else (*INTS, *FLOATS)
    dtypes = [rng.choice(pool) for _ in range(3)]
    n_in = rng.choice([1, 1, 2, 3])
    inputs: list[Input] = []
    for n in range(n_in):
        axes = tuple(range(rank))
        if not c and n > 0 and rng.random() < 0.4:
            axes = tuple(sorted(rng.sample(range(rank), rng.randint(0, rank - 1))))
        inputs.append(Input(f"in{n}", rng.choice(dtypes), axes))
    params: list[Param] = []
    constants: list[Constant] = []
    if c and rng.random() < 0.2:
        params.append(Param("coef", rng.choice(dtypes), (rng.randint(1, 4),)))
    if not c and rng.random() < 0.3:
        constants.append(
            Constant("alpha", rng.choice([0.5, 2.0, 3.0, -1.0]), rng.choice(["float32", "float64"]))
        )
    g = Gen(
        rng,
        "c" if c else "numpy",
        {i.name: (i.dtype, i.axes) for i in inputs},
        {k.name: k.dtype for k in constants},
        {p.name: (p.dtype, p.shape) for p in params},
        rng.choice([0, 1, 1, 2, 3]),
        rng.random() < 0.35,
    )
    stencils: list[Stencil] = []
    for s in range(1 if rng.random() < 0.3 else rng.randint(2, 6)):
        temps: list[Temp] = []
        scalars = dict(g.scalars)
        for t in range(rng.choice([0, 0, 0, 1, 2])):
            e = expression(g, rng.randint(1, 3))
            td = rng.choice(dtypes) if c and rng.random() < 0.5 else None
            name = f"t{s}_{t}"
            temps.append(Temp(name, td, e))
            g.scalars[name] = td if td is not None else type_of(g, e) or "float64"
        expr = expression(g, rng.randint(1, 4))
        g.scalars = scalars
        sdtype = rng.choice(dtypes)
        read = sorted({r.field for e in (expr, *(t.expr for t in temps)) for r in refs(e)})
        boundary: tuple[tuple[str, Boundary], ...] = ()
        if not c:
            boundary = tuple((f, _boundary(rng, g.fields[f][0])) for f in read)
        stencils.append(Stencil(f"s{s}", sdtype, expr, tuple(temps), boundary))
        g.fields[f"s{s}"] = (sdtype, tuple(range(rank)))
    read_any = {r.field for s in stencils for e in (s.expr, *(t.expr for t in s.temps)) for r in refs(e)}
    outputs = [s.name for s in stencils if s.name not in read_any or rng.random() < 0.2]
    iterate, border, feedback = 1, "ignore", ()
    full = [i for i in inputs if i.axes == tuple(range(rank))]
    if rng.random() < 0.35 and full:
        out = rng.choice(outputs)
        inp = rng.choice(full)
        stencils = [replace(s, dtype=inp.dtype) if s.name == out else s for s in stencils]
        feedback = ((out, inp.name),)
        iterate = rng.randint(1, 3)
        if c and rng.random() < 0.5:
            border = "preserve"
    hints = Hints(
        unroll=rng.choice([1, 1, 2, 4]) if c else 1,
        vectorization=1 if c else rng.choice([1, 1, 2, 4]),
        tile=_tile(rng, shape) if c and rank > 1 else None,
    )
    program = Program(
        name="fuzz",
        format="soda" if c else "stencilflow",
        semantics="c" if c else "numpy",
        shape=(None, *shape[1:]) if c else shape,
        inputs=tuple(inputs),
        stencils=tuple(stencils),
        outputs=tuple(outputs),
        params=tuple(params),
        constants=tuple(constants),
        iterate=iterate,
        border=border,  # type: ignore[arg-type]
        hints=hints,
        feedback=feedback,
    )
    return program, shape


def draw_star(rng: random.Random) -> tuple[Program, tuple[int, ...]]:
    """``out = c + Σ c_o·v(o)``: a symmetric star of degree 1 to 3 over one float32 or float64 input, 2-D or
    3-D, border left undefined (what ``docs/tutorials/emax.md`` says the EMAX mapping serves; every other
    executor runs it too). Some draws break one of those rules, so the refusals stay exercised."""
    c = rng.random() < 0.5
    rank, dtype, d = rng.choice([2, 3, 3]), rng.choice(["float32", "float64"]), rng.choice([1, 1, 2, 3])
    shape = tuple(rng.randint(2 * d + 1, {2: 48, 3: 12}[rank] + 2 * d) for _ in range(rank))
    offsets: list[tuple[int, ...]] = [(0,) * rank] if rng.random() < 0.8 else []
    for axis in range(rank):
        for k in range(1, d + 1):
            if k == d or rng.random() < 0.7:
                offsets += [tuple(s * k if a == axis else 0 for a in range(rank)) for s in (-1, 1)]
    if rng.random() < 0.1:  # off the axes, or one side only: refused
        offsets.append(tuple(rng.choice([-1, 1]) for _ in range(rank)))

    def number(v: float) -> Const:
        return Const(v, dtype if c else dt.WEAK_FLOAT)

    coefficients = [0.25, -0.5, 0.125, 1.5, 0.08, 2.0, -0.04]
    terms = [Binary("*", number(rng.choice(coefficients)), Ref("in0", o)) for o in offsets]
    if rng.random() < 0.3:
        terms.append(number(rng.choice([0.5, -1.0, 3.0])))
    expr = terms[0]
    for t in terms[1:]:
        expr = Binary("+", expr, t)
    boundary = () if c else (("in0", Boundary("shrink")),)
    program = Program(
        name="fuzz",
        format="soda" if c else "stencilflow",
        semantics="c" if c else "numpy",
        shape=(None, *shape[1:]) if c else shape,
        inputs=(Input("in0", dtype, tuple(range(rank))),),
        stencils=(Stencil("s0", dtype, expr, (), boundary),),
        outputs=("s0",),
        hints=Hints(tile=shape[1:] if c else None),
    )
    return program, shape


def _boundary(rng: random.Random, dtype: str) -> Boundary:
    kind = rng.choice(["shrink", "copy", "constant", "constant"])
    if kind != "constant":
        return Boundary(kind)  # type: ignore[arg-type]
    if dt.is_integer(dtype):
        return Boundary(
            "constant", float(rng.choice([0, 1, 3, 100, -1] if dtype.startswith("i") else [0, 1, 7]))
        )
    return Boundary("constant", rng.choice([0.0, 1.5, -0.25, 2.0]))


def _tile(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    if rng.random() < 0.8:
        return shape[1:]
    return tuple(max(1, rng.randint(n // 2, n)) for n in shape[1:])


# ---------------------------------------------------------------------------------- StencilFlow printing


def sf_expr(e: Expr, axes_of: Callable[[str], tuple[str, ...]]) -> str:
    """A computation-string (Python) expression, fully parenthesized."""
    f = lambda x: sf_expr(x, axes_of)  # noqa: E731
    if isinstance(e, Const):
        if isinstance(e.value, bool) or e.dtype in ("bool", dt.WEAK_BOOL):
            return "True" if e.value else "False"
        text = repr(int(e.value)) if dt.is_integer(e.dtype) else repr(float(e.value))
        return f"({text})" if text.startswith("-") else text
    if isinstance(e, Ref):
        names = axes_of(e.field)
        if not names:
            return e.field
        idx = [n if o == 0 else f"{n}{o:+d}" for n, o in zip(names, e.offset, strict=True)]
        return f"{e.field}[{', '.join(idx)}]"
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Unary):
        return f"(not {f(e.operand)})" if e.op == "!" else f"({e.op}{f(e.operand)})"
    if isinstance(e, Binary):
        op = {"&&": "and", "||": "or"}.get(e.op, e.op)
        return f"({f(e.lhs)} {op} {f(e.rhs)})"
    if isinstance(e, Select):
        return f"({f(e.then)} if {f(e.cond)} else {f(e.else_)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({f(e.operand)})"
    if isinstance(e, Call):
        return f"{e.func}({', '.join(f(a) for a in e.args)})"
    raise TypeError(f"cannot print {e!r}")


def print_stencilflow(p: Program) -> str:
    names = axis_names(p.rank)

    def axes_of(field_name: str) -> tuple[str, ...]:
        return tuple(names[a] for a in p.field_axes(field_name))

    inputs = {i.name: {"data_type": i.dtype, "input_dims": [names[a] for a in i.axes]} for i in p.inputs}
    program: dict[str, Any] = {}
    for s in p.stencils:
        lines = [f"{t.name} = {sf_expr(t.expr, axes_of)}" for t in s.temps]
        lines.append(f"{s.name} = {sf_expr(s.expr, axes_of)}")
        bcs = {
            f: {"type": b.kind, **({"value": b.value} if b.kind == "constant" else {})} for f, b in s.boundary
        }
        program[s.name] = {
            "computation_string": "; ".join(lines),
            "boundary_conditions": bcs,
            "data_type": s.dtype,
        }
    doc: dict[str, Any] = {
        "inputs": inputs,
        "outputs": list(p.outputs),
        "dimensions": [int(n or 1) for n in p.shape],
        "vectorization": p.hints.vectorization,
    }
    if p.constants:
        doc["constants"] = {k.name: {"value": k.value, "data_type": k.dtype} for k in p.constants}
    doc["program"] = program
    if p.iterate != 1:
        doc["iterate"] = p.iterate
    if p.feedback:
        doc["feedback"] = dict(p.feedback)
    return json.dumps(doc, indent=1) + "\n"


def program_text(p: Program) -> str:
    return print_soda(p) if p.format == "soda" else print_stencilflow(p)


def parse_text(text: str, fmt: str, shape: tuple[int, ...]) -> Program:
    """The program the front end reads from ``text``, bound to ``shape``."""
    p = parse_soda(text, "program.soda") if fmt == "soda" else parse_stencilflow(text, "program.json")
    verify(p)
    return bind_shape(p, {}, shape)


# ------------------------------------------------------------------------------------------------- inputs


def draw_inputs(rng: random.Random, program: Program) -> dict[str, Array]:
    """Values of every input and param; the mode (small, full range, signed, special floats) per case."""
    mode = rng.choice(["small", "small", "range", "signed", "special"])
    gen = np.random.default_rng(rng.randrange(2**32))
    values: dict[str, Array] = {}
    fields = [(i.name, i.dtype, tuple(int(program.shape[a] or 1) for a in i.axes)) for i in program.inputs]
    fields += [(q.name, q.dtype, q.shape) for q in program.params]
    for name, dtype, shape in fields:
        values[name] = _values(gen, mode, dtype, shape)
    return values


def _values(gen: np.random.Generator, mode: str, dtype: str, shape: tuple[int, ...]) -> Array:
    d = np.dtype(dtype)
    if d.kind in "iu":
        info = np.iinfo(d)
        if mode == "range":
            lo, hi = int(info.min), int(info.max)
            return gen.integers(lo, hi, size=shape, endpoint=True, dtype=d)
        if mode in ("signed", "special"):
            lo = max(int(info.min), -100)
            return gen.integers(lo, 100, size=shape, endpoint=True, dtype=d)
        return gen.integers(0, 64, size=shape, dtype=d)
    if mode == "small":
        return gen.random(shape).astype(d)
    if mode == "range":
        return (gen.standard_normal(shape) * 10.0 ** gen.integers(-3, 4, size=shape)).astype(d)
    x = gen.uniform(-4, 4, shape)
    if mode == "special":
        pick = gen.random(shape)
        x = np.where(pick < 0.05, np.nan, x)
        x = np.where((pick >= 0.05) & (pick < 0.08), np.inf, x)
        x = np.where((pick >= 0.08) & (pick < 0.11), -np.inf, x)
        x = np.where((pick >= 0.11) & (pick < 0.2), np.round(x), x)
        x = np.where((pick >= 0.2) & (pick < 0.25), -0.0, x)
    return x.astype(d)


# ------------------------------------------------------------------------------------- documented limits


@dataclass
class Limits:
    """What the reference run met that a documented limit covers."""

    big_int64: bool = False  # a 64-bit integer value beyond 2^53 (the simulators carry float64)
    f2i64: bool = False  # a float converted to a 64-bit integer out of its range (undefined)


@contextmanager
def tracking(limits: Limits) -> Iterator[None]:
    """Watch every conversion and every evaluated node of a reference run."""
    as_type, evaluate = ops.as_type, reference_mod._StencilEval.eval

    def watched_as_type(x: Array, t: str) -> Array:
        out = as_type(x, t)
        target = np.dtype(dt.concrete(t))
        x = np.asarray(x)
        if target.kind in "iu" and target.itemsize == 8 and x.dtype.kind == "f":
            info = np.iinfo(target)
            with np.errstate(all="ignore"):
                t_ = np.trunc(x.astype(np.float64))
                if (~np.isfinite(t_) | (t_ < float(info.min)) | (t_ >= float(info.max) + 1.0)).any():
                    limits.f2i64 = True
        _check_big(np.asarray(out), limits)
        return out

    def watched_eval(self: Any, e: Expr, env: TypeEnv) -> Array:
        out = evaluate(self, e, env)
        _check_big(np.asarray(out), limits)
        return out

    ops.as_type = watched_as_type  # type: ignore[assignment]
    reference_mod._StencilEval.eval = watched_eval  # type: ignore[method-assign]
    try:
        yield
    finally:
        ops.as_type = as_type  # type: ignore[assignment]
        reference_mod._StencilEval.eval = evaluate  # type: ignore[method-assign]


def _check_big(a: Array, limits: Limits) -> None:
    if a.dtype.kind in "iu" and a.dtype.itemsize == 8 and a.size:
        if a.dtype.kind == "u":
            big = bool((a > 2**53).any())
        else:
            big = bool(((a > 2**53) | (a < -(2**53))).any())
        limits.big_int64 = limits.big_int64 or big


def uses_64bit_int(p: Program) -> bool:
    types = {i.dtype for i in p.inputs} | {s.dtype for s in p.stencils} | {q.dtype for q in p.params}
    for s in p.stencils:
        for root in (s.expr, *(t.expr for t in s.temps)):
            for node in walk(root):
                if isinstance(node, Cast):
                    types.add(node.dtype)
                if isinstance(node, Const):
                    types.add(dt.concrete(node.dtype))
    return bool(types & {"int64", "uint64"})


# ---------------------------------------------------------------------------------------------- executors


class Refused(Exception):
    """The executor declines the program (a StencilmapError before anything ran)."""


@dataclass
class Ran:
    outputs: Mapping[str, Array]
    defined: Mapping[str, Array] | None  # host backends return masks
    status: str = "done"
    note: str = ""


def _host(name: str, p: Program, v: Mapping[str, Array], k: Mapping[str, Any]) -> Ran:
    if name == "cpu":
        from stencilmap.backends.cpu import run_cpu

        res, _ = run_cpu(p, v, threads=k.get("threads", 1), block=k.get("block"))
    elif name == "dask":
        from stencilmap.backends.registry import HostOptions, execute

        chunks = tuple(max(1, int(n or 1) // k.get("split", 2)) for n in p.shape)
        res = execute(p, v, HostOptions("dask", threads=1, chunks=chunks, block=k.get("block"))).result
    else:
        from tests.backends.gpu_emulator import EmulatedDevice

        from stencilmap.backends.gpu import Tuning, run_gpu

        res = run_gpu(p, v, EmulatedDevice(), k.get("chunk"), Tuning(rotate=k.get("rotate", False))).result
    return Ran(res.outputs, res.defined)


def _design(name: str, p: Program, k: Mapping[str, Any]) -> Any:
    from stencilmap.arch import arch
    from stencilmap.point import DesignPoint

    lanes = k.get("lanes", 1)
    if name == "stencilflow":
        return arch(name).build(p, DesignPoint(vector=lanes))
    if name in ("soda", "pcm"):
        return arch(name).build(p, DesignPoint(unroll=lanes))
    return arch(name).build(p, DesignPoint())


def _simulated(arch: str, p: Program, v: Mapping[str, Array], k: Mapping[str, Any]) -> Ran:
    design = _design(arch, p, k)
    if arch in ("cgra", "emax"):
        from stencilmap.codegen.registry import emit
        from stencilmap.jobs.codegen_checks import run_here

        ran = run_here(emit(arch, design, p, v), design, p, v)
        if isinstance(ran, str):
            raise Refused(ran)
        return Ran(ran.outputs, None, ran.status, ran.message)
    from stencilmap.jobs.simulate import simulate_dataflow

    sim = simulate_dataflow(p, design, v, None)
    return Ran(sim.result.outputs, None, sim.result.status)


def _generated(arch: str, target: str, p: Program, v: Mapping[str, Array], k: Mapping[str, Any]) -> Ran:
    from stencilmap.codegen.registry import emit
    from stencilmap.codegen.verify import run_csim, write_data

    design = _design(arch, p, k)
    gen = emit(target, design, p, v)
    shape = tuple(int(n or 0) for n in p.shape)
    with tempfile.TemporaryDirectory(prefix="difffuzz-") as tmp:
        folder = Path(tmp)
        for name, text in gen.files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        write_data(folder / "data", gen.ports, v)
        if gen.runner == "pocl":
            from stencilmap.codegen.opencl_run import pocl_available, run_pocl

            if not pocl_available():
                raise Refused("no PoCL here")
            result = run_pocl(gen, folder, folder / "data", shape)
        else:
            result = run_csim(gen, folder, folder / "data", shape, cache=CACHE)
    if result.status == "failed":
        raise RuntimeError(f"{target} run failed: {result.message}")
    return Ran(result.outputs, None, result.status, result.message)


CACHE = Path(tempfile.gettempdir()) / "difffuzz-csim-cache"


def run_executor(name: str, p: Program, v: Mapping[str, Array], k: Mapping[str, Any]) -> Ran:
    if name in HOST:
        return _host(name, p, v, k)
    kind, arch = name.split("-", 1)
    if kind == "sim":
        return _simulated(arch, p, v, k)
    return _generated(arch, kind, p, v, k)


def available() -> tuple[str, ...]:
    import shutil

    names = list(EXECUTORS)
    if shutil.which("g++") is None:
        names = [n for n in names if not n.startswith(("hls", "opencl-stencilflow", "gpu-emu"))]
    try:
        import dask  # noqa: F401
    except ImportError:
        names.remove("dask")
    try:
        from stencilmap.codegen.opencl_run import pocl_available

        if not pocl_available():
            names.remove("opencl-pcm")
    except Exception:
        names.remove("opencl-pcm")
    return tuple(names)


# ----------------------------------------------------------------------------------------------- checking


@dataclass
class Verdict:
    executor: str
    outcome: str  # ok, mismatch, crash, refused, limit
    detail: str = ""
    seconds: float = 0.0


def compare(name: str, p: Program, ref: Result, ran: Ran) -> tuple[str, bool] | None:
    """None when ``ran`` agrees with the reference, else what differs and whether only by a little (floats
    within 1e-3 of the output's magnitude, or a few points of any type: what a library function's last bit
    can grow into, e.g. pow(3, 34) = 3^34 + 1 ± 1 beyond 2^53 converted to uint8 gives 136 or 138)."""
    if ran.status != "done":
        return f"status {ran.status} {ran.note}".strip(), False
    for o in p.outputs:
        if o not in ran.outputs:
            return f"output {o} missing", False
        if ran.defined is not None and not np.array_equal(ran.defined[o], ref.defined[o]):
            bad = np.argwhere(ran.defined[o] != ref.defined[o])[0]
            return f"{o}: mask differs at {tuple(int(i) for i in bad)}", False
        got = np.asarray(ran.outputs[o])
        if got.shape != ref.outputs[o].shape:
            return f"{o}: shape {got.shape} != {ref.outputs[o].shape}", False
    v = validate("done", {o: ran.outputs[o] for o in p.outputs}, ref.outputs, ref.defined)
    if v.valid:
        return None
    where = v.first_mismatch
    assert where is not None
    out, m = where
    n = next(c.mismatches for c in v.outputs if c.name == out)
    small = all(
        c.within_tolerance
        or (c.dtype in ("float32", "float64") and c.max_abs_error <= 10 * c.tolerance.atol)
        or c.mismatches
        <= max(2, c.points // 100)  # a few points: a last bit a conversion made any difference
        for c in v.outputs
    )
    return f"{out}[{','.join(map(str, m.index))}] = {m.got!r}, reference {m.expected!r} ({n} points)", small


def explained(name: str, p: Program, limits: Limits, diff: str, small: bool) -> str | None:
    """A documented limit that explains a mismatch of ``name`` on ``p``, if any."""
    if diff.startswith(("status", "output")):
        return None  # a deadlock or a missing output is never a rounding matter
    if limits.f2i64:
        return "float -> 64-bit integer out of range (undefined)"
    if name in SIMULATORS and limits.big_int64:
        return "64-bit integer beyond 2^53 in the simulator"
    if small and uses_inexact_math(p):
        return "library function (last-ulp difference)"
    if name == "sim-emax" and " = nan, " in diff and emax_unread_neighbours(p):
        return "EMAX full star: 0 x inf or NaN at a neighbour the program does not read"
    return None


def emax_unread_neighbours(p: Program) -> bool:
    """Whether the one stencil's star window lacks some offset of its degree: the EMAX pattern multiplies
    every neighbour of the full star, by 0 where the program reads nothing (``docs/tutorials/emax.md``)."""
    if len(p.stencils) != 1:
        return False
    read = {r.offset for r in refs(p.stencils[0].expr)}
    d = max((abs(o) for off in read for o in off), default=0)
    star = {(0,) * p.rank} | {
        tuple(s * k if a == axis else 0 for a in range(p.rank))
        for axis in range(p.rank)
        for k in range(1, d + 1)
        for s in (-1, 1)
    }
    return bool(star - read)


@dataclass
class Case:
    seed: int
    index: int
    fmt: str
    text: str
    shape: tuple[int, ...]
    inputs: dict[str, Array]
    knobs: dict[str, dict[str, Any]]
    executors: tuple[str, ...]
    verdicts: list[Verdict] = field(default_factory=list)
    reference_error: str = ""

    @property
    def label(self) -> str:
        return f"s{self.seed}-c{self.index}"


def make_case(seed: int, index: int, executors: tuple[str, ...], slow_rate: float) -> tuple[Case | None, str]:
    """The ``index``-th case of ``seed`` (None and why when the generated program is not valid)."""
    rng = random.Random(f"{seed}:{index}")
    star = random.Random(f"{seed}:{index}:star").random() < STAR_RATE  # apart: other cases draw as before
    ir, shape = draw_star(rng) if star else draw_program(rng)
    try:
        verify(replace(ir, shape=shape))
        text = program_text(ir)
        program = parse_text(text, ir.format, shape)
    except StencilmapError as exc:
        return None, f"invalid: {exc.message.splitlines()[0][:70]}"
    values = draw_inputs(rng, program)
    chosen, knobs = [], {}
    for e in executors:  # each executor's own draws: a case replays alike whichever others run
        r = random.Random(f"{seed}:{index}:{e}")
        if e in FAST or r.random() < slow_rate:
            chosen.append(e)
            knobs[e] = {
                "lanes": r.choice([1, 1, 2, 3, 4]),
                "block": r.choice([None, None, 1, 2]),
                "threads": r.choice([1, 2]),
                "chunk": r.choice([None, 1, 2, 5]),
                "rotate": r.random() < 0.5,
                "split": r.choice([1, 2, 3]),
            }
    return Case(seed, index, ir.format, text, shape, values, knobs, tuple(chosen)), ""


def run_case(case: Case) -> Case:
    program = parse_text(case.text, case.fmt, case.shape)
    limits = Limits()
    try:
        with tracking(limits):
            ref = run_reference(program, case.inputs)
    except Exception as exc:  # the oracle itself failed
        case.reference_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        return case
    for name in case.executors:
        start = time.perf_counter()
        try:
            ran = run_executor(name, program, case.inputs, case.knobs[name])
            compared = compare(name, program, ref, ran)
            if compared is None:
                verdict = Verdict(name, "ok")
            else:
                diff, small = compared
                why = explained(name, program, limits, diff, small)
                verdict = Verdict(name, "limit" if why else "mismatch", diff if not why else f"{why}: {diff}")
        except (Refused, StencilmapError) as exc:
            msg = exc.message if isinstance(exc, StencilmapError) else str(exc)
            verdict = Verdict(name, "refused", msg.splitlines()[0])
        except Exception as exc:
            tb = traceback.format_exc().strip().splitlines()
            verdict = Verdict(name, "crash", f"{type(exc).__name__}: {str(exc)[:200]} [{tb[-3].strip()}]")
        verdict.seconds = time.perf_counter() - start
        case.verdicts.append(verdict)
    return case


def _run_index(args: tuple[int, int, tuple[str, ...], float]) -> tuple[Case | None, str]:
    seed, index, executors, slow_rate = args
    case, why = make_case(seed, index, executors, slow_rate)
    if case is None:
        return None, why
    return run_case(case), ""


# ------------------------------------------------------------------------------------------ keeping cases


def keep(case: Case, out: Path) -> Path:
    folder = out / case.label
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"program.{'soda' if case.fmt == 'soda' else 'json'}").write_text(case.text, encoding="utf-8")
    np.savez(folder / "inputs.npz", **case.inputs)
    info = {
        "seed": case.seed,
        "index": case.index,
        "format": case.fmt,
        "shape": list(case.shape),
        "knobs": case.knobs,
        "reference_error": case.reference_error,
        "verdicts": [vars(v) for v in case.verdicts if v.outcome not in ("ok", "refused")],
    }
    (folder / "case.json").write_text(json.dumps(info, indent=1, default=str) + "\n", encoding="utf-8")
    return folder


def load_case(folder: Path, executors: tuple[str, ...] | None) -> Case:
    info = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    fmt = info["format"]
    text = (folder / f"program.{'soda' if fmt == 'soda' else 'json'}").read_text(encoding="utf-8")
    with np.load(folder / "inputs.npz") as z:
        inputs = {k: z[k] for k in z.files}
    knobs = info["knobs"]
    chosen = executors if executors is not None else tuple(knobs)
    knobs = {e: knobs.get(e, {}) for e in chosen}
    return Case(info["seed"], info["index"], fmt, text, tuple(info["shape"]), inputs, knobs, chosen)


def replay_command(folder: Path, executors: list[str]) -> str:
    return f".venv/bin/python benchmarks/difffuzz.py --replay {folder} --executors {','.join(executors)}"


# ------------------------------------------------------------------------------------------------ minimising


def still_fails(p: Program, values: Mapping[str, Array], executor: str, knobs: Mapping[str, Any]) -> bool:
    """Whether ``executor`` still disagrees with the reference (or crashes, or the reference crashes)."""
    try:
        text = program_text(p)
        q = parse_text(text, p.format, tuple(int(n or 1) for n in p.shape))
    except (StencilmapError, ValueError, TypeError):
        return False
    limits = Limits()
    try:
        with tracking(limits):
            ref = run_reference(q, values)
    except StencilmapError:
        return False
    except Exception:
        return executor == "reference"
    if executor == "reference":
        return False
    try:
        compared = compare(executor, q, ref, run_executor(executor, q, values, knobs))
    except (Refused, StencilmapError):
        return False
    except Exception:
        return True
    return compared is not None and explained(executor, q, limits, *compared) is None


def _read(p: Program) -> set[str]:
    return {r.field for s in p.stencils for e in (s.expr, *(t.expr for t in s.temps)) for r in refs(e)}


def _candidates(p: Program, values: Mapping[str, Array]) -> Iterator[tuple[Program, dict[str, Array]]]:
    """Smaller variants of ``p`` (with their inputs), most promising first."""
    v = dict(values)
    fed = {o for o, _ in p.feedback} | {i for _, i in p.feedback}
    if p.iterate > 1:
        yield replace(p, iterate=1, border="ignore", feedback=()), v
        yield replace(p, iterate=p.iterate - 1), v
    if p.border != "ignore":
        yield replace(p, border="ignore"), v
    for o in p.outputs:
        if len(p.outputs) > 1 and o not in fed:
            yield replace(p, outputs=tuple(x for x in p.outputs if x != o)), v
    read = _read(p)
    for st in p.stencils:
        if st.name not in p.outputs and st.name not in read:
            yield replace(p, stencils=tuple(x for x in p.stencils if x is not st)), v
    for i in p.inputs:
        if i.name not in read and i.name not in fed:
            yield (
                replace(p, inputs=tuple(x for x in p.inputs if x is not i)),
                {k: a for k, a in v.items() if k != i.name},
            )
    for n, size in enumerate(p.shape):
        for new in sorted({1, int(size or 1) // 2, int(size or 1) - 1}):
            if 1 <= new < int(size or 1):
                yield _reshaped(p, v, n, new)
    for k, st in enumerate(p.stencils):
        for smaller in _smaller_stencils(st):
            yield replace(p, stencils=(*p.stencils[:k], smaller, *p.stencils[k + 1 :])), v


def _reshaped(p: Program, v: dict[str, Array], axis: int, size: int) -> tuple[Program, dict[str, Array]]:
    shape = tuple(size if a == axis else int(n or 1) for a, n in enumerate(p.shape))
    values = dict(v)
    for i in p.inputs:
        if axis in i.axes:
            cut = [slice(None)] * len(i.axes)
            cut[i.axes.index(axis)] = slice(0, size)
            values[i.name] = np.ascontiguousarray(v[i.name][tuple(cut)])
    tile = p.hints.tile
    if tile is not None:
        tile = tuple(min(t, n) for t, n in zip(tile, shape[1:], strict=True))
    return replace(p, shape=shape, hints=replace(p.hints, tile=tile)), values


def _smaller_stencils(st: Stencil) -> Iterator[Stencil]:
    used = {n.name for e in (st.expr, *(t.expr for t in st.temps)) for n in walk(e) if isinstance(n, Var)}
    for t in st.temps:
        if t.name not in used:
            yield replace(st, temps=tuple(x for x in st.temps if x is not t))
    for e in _smaller_exprs(st.expr):
        yield _reboundary(replace(st, expr=e))
    for k, t in enumerate(st.temps):
        for e in _smaller_exprs(t.expr):
            yield _reboundary(replace(st, temps=(*st.temps[:k], replace(t, expr=e), *st.temps[k + 1 :])))


def _reboundary(st: Stencil) -> Stencil:
    read = {r.field for e in (st.expr, *(t.expr for t in st.temps)) for r in refs(e)}
    return replace(st, boundary=tuple((f, b) for f, b in st.boundary if f in read))


def _smaller_exprs(e: Expr) -> Iterator[Expr]:
    """``e`` with one node replaced by one of its children, or a read moved to the centre."""
    yield from children(e)
    if isinstance(e, Ref) and any(e.offset):
        yield Ref(e.field, tuple(0 for _ in e.offset))
    if isinstance(e, Cast | Unary):
        for x in _smaller_exprs(e.operand):
            yield replace(e, operand=x)
    elif isinstance(e, Binary):
        yield from (replace(e, lhs=x) for x in _smaller_exprs(e.lhs))
        yield from (replace(e, rhs=x) for x in _smaller_exprs(e.rhs))
    elif isinstance(e, Select):
        yield from (replace(e, cond=x) for x in _smaller_exprs(e.cond))
        yield from (replace(e, then=x) for x in _smaller_exprs(e.then))
        yield from (replace(e, else_=x) for x in _smaller_exprs(e.else_))
    elif isinstance(e, Call):
        for k, a in enumerate(e.args):
            for x in _smaller_exprs(a):
                yield replace(e, args=(*e.args[:k], x, *e.args[k + 1 :]))


def minimise(case: Case, executor: str, budget_s: float = 300.0) -> Case:
    """The smallest variant of ``case`` on which ``executor`` still fails, by greedy reduction."""
    p = parse_text(case.text, case.fmt, case.shape)
    values = dict(case.inputs)
    knobs = case.knobs.get(executor, {})
    if not still_fails(p, values, executor, knobs):
        return case
    deadline = time.perf_counter() + budget_s
    progress = True
    while progress and time.perf_counter() < deadline:
        progress = False
        for q, w in _candidates(p, values):
            if time.perf_counter() > deadline:
                break
            if still_fails(q, w, executor, knobs):
                p, values, progress = q, w, True
                break
    shape = tuple(int(n or 1) for n in p.shape)
    return replace(case, text=program_text(p), shape=shape, inputs=values, executors=(executor,), verdicts=[])


# -------------------------------------------------------------------------------------------------- main


def campaign(
    seed: int,
    cases: int,
    executors: tuple[str, ...],
    slow_rate: float,
    jobs: int,
    out: Path | None,
    quiet: bool = False,
    only: list[int] | None = None,
    keep_limits: bool = False,
) -> tuple[list[Case], Counter[str]]:
    invalid: Counter[str] = Counter()
    done: list[Case] = []
    work = [(seed, i, executors, slow_rate) for i in (only if only is not None else range(cases))]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_run_index, work, chunksize=1))
    else:
        results = [_run_index(w) for w in work]
    for case, why in results:
        if case is None:
            invalid[why] += 1
            continue
        done.append(case)
        failed = ("mismatch", "crash", "limit") if keep_limits else ("mismatch", "crash")
        bad = case.reference_error or any(v.outcome in failed for v in case.verdicts)
        if out is not None and bad:
            folder = keep(case, out)
            failing = [v.executor for v in case.verdicts if v.outcome in failed]
            say = sys.stderr if quiet else sys.stdout
            print(f"{case.label}: {case.reference_error or '; '.join(_lines(case))}", file=say, flush=True)
            print(f"  replay: {replay_command(folder, failing or ['cpu'])}", file=say, flush=True)
    return done, invalid


def _lines(case: Case) -> list[str]:
    return [
        f"{v.executor} {v.outcome}: {v.detail[:160]}"
        for v in case.verdicts
        if v.outcome not in ("ok", "refused")
    ]


def table(cases: list[Case], invalid: Counter[str], executors: tuple[str, ...]) -> str:
    rows = [("executor", "cases", "ok", "mismatch", "crash", "refused", "limit", "seconds")]
    count: dict[str, Counter[str]] = defaultdict(Counter)
    secs: dict[str, float] = defaultdict(float)
    refusals: dict[str, Counter[str]] = defaultdict(Counter)
    for c in cases:
        for v in c.verdicts:
            count[v.executor][v.outcome] += 1
            secs[v.executor] += v.seconds
            if v.outcome == "refused":
                refusals[v.executor][v.detail[:90]] += 1
    ref_errors = sum(1 for c in cases if c.reference_error)
    rows.append(
        ("reference", str(len(cases)), str(len(cases) - ref_errors), "-", str(ref_errors), "-", "-", "-")
    )
    for e in executors:
        k = count[e]
        rows.append((e, str(sum(k.values())), *(str(k[o]) for o in ("ok", "mismatch", "crash", "refused", "limit")),
                     f"{secs[e]:.1f}"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]  # fmt: skip
    lines.insert(1, "  ".join("-" * w for w in widths))
    if invalid:
        lines.append(
            f"programs the front ends refused (generator misses, not counted): {sum(invalid.values())}"
        )
        lines += [f"  {n} x {why}" for why, n in invalid.most_common(5)]
    for e in executors:
        for why, n in refusals[e].most_common(3):
            lines.append(f"{e} refused {n} x: {why}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="Executors: " + ", ".join(EXECUTORS)
    )
    ap.add_argument("--seed", type=int, default=0, help="campaign seed (cases are numbered within it)")
    ap.add_argument("--cases", type=int, default=100, help="programs to generate")
    ap.add_argument(
        "--executors", default="all", help="comma-separated executors, or 'all' (those available here)"
    )
    ap.add_argument("--slow-rate", type=float, default=0.15, help="share of cases the slow executors run on")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="cases run in parallel")
    ap.add_argument(
        "--out", type=Path, help="folder keeping every failing case (program, inputs, replay command)"
    )
    ap.add_argument("--replay", type=Path, help="run one kept case folder again (--executors: which)")
    ap.add_argument("--only", help="comma-separated case numbers of the seed to run (instead of --cases)")
    ap.add_argument("--keep-limits", action="store_true", help="keep cases a documented limit explains too")
    ap.add_argument(
        "--minimise",
        metavar="EXECUTOR",
        help="with --replay: shrink the case while EXECUTOR "
        "(or 'reference') still fails, and keep the result beside it (min-EXECUTOR)",
    )
    ap.add_argument("--json", action="store_true", help="print the verdicts as JSON instead of a table")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    here = available()
    if args.executors == "all":
        executors = here
    else:
        executors = tuple(e.strip() for e in args.executors.split(",") if e.strip())
        unknown = [e for e in executors if e not in EXECUTORS]
        if unknown:
            print(f"error: unknown executor {unknown[0]} (known: {', '.join(EXECUTORS)})", file=sys.stderr)
            return 2
    if args.replay is not None and args.minimise:
        small = minimise(load_case(args.replay, None), args.minimise)
        folder = keep(run_case(small), args.replay.parent / f"{args.replay.name}-min-{args.minimise}")
        print(small.text)
        print(f"kept in {folder}; replay: {replay_command(folder, [args.minimise])}")
        return 0
    if args.replay is not None:
        case = run_case(load_case(args.replay, None if args.executors == "all" else executors))
        print(case.text)
        if case.reference_error:
            print(f"reference: {case.reference_error}")
        for v in case.verdicts:
            print(f"{v.executor}: {v.outcome} {v.detail}")
        bad = case.reference_error or any(v.outcome in ("mismatch", "crash") for v in case.verdicts)
        return 1 if bad else 0
    start = time.perf_counter()
    cases, invalid = campaign(
        args.seed,
        args.cases,
        executors,
        args.slow_rate,
        args.jobs,
        args.out,
        args.json,
        [int(n) for n in args.only.split(",")] if args.only else None,
        args.keep_limits,
    )
    if args.json:
        print(json.dumps([{"case": c.label, "reference_error": c.reference_error,
                           "verdicts": [vars(v) for v in c.verdicts]} for c in cases], default=str))  # fmt: skip
    else:
        print(table(cases, invalid, executors))
        print(f"seed {args.seed}: {len(cases)} cases in {time.perf_counter() - start:.0f} s")
    bad = any(c.reference_error or any(v.outcome in ("mismatch", "crash") for v in c.verdicts) for c in cases)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
