"""Random expressions × dtypes through every dialect that compiles here (C99 with gcc, HLS C++ and OpenCL
C as C++ with g++, the simulator's bytecode with cc) equal the NumPy reference bit for bit.

One compiler call per dialect evaluates a whole batch of expressions over edge values (0, −1, the
extremes, NaN, ±inf, halves); a failure names the dialect, the operation at the root of the (shrunk)
expression and its type."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stencilmap.backends.reference import run_reference
from stencilmap.program import dtypes as dt
from stencilmap.program.expr import Binary, Call, Cast, Const, Expr, Ref, Select, Unary
from stencilmap.program.ir import Boundary, Input, Program, Stencil
from stencilmap.program.typecheck import ExprTypeError, infer, stencil_env
from stencilmap.scalar import ScalarKernel, Unsupported, lower
from stencilmap.scalar.ctypes_ import Dialect
from stencilmap.scalar.helpers import helpers_text
from stencilmap.scalar.kernel import Op
from stencilmap.scalar.render import Printer

Array = npt.NDArray[Any]
N = 64
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32", "float64")
BINARY = ("+", "-", "*", "/", "%", "//", "**", "&", "|", "^", "==", "<", ">=", "&&", "||")
FUNCS = {"min": 2, "max": 2, "abs": 1, "fabs": 1, "round": 1, "sqrt": 1, "floor": 1, "ceil": 1, "trunc": 1,
         "rint": 1, "fmod": 2, "fmin": 2, "fmax": 2, "copysign": 2, "fdim": 2, "fma": 3}  # fmt: skip
CONSTS = (0, 1, -1, 2, 3, 7, 0.5, -2.5, 1e10, 127, -128, 255, 65535.0, 2.0**31)


def edge_values(t: str, rng: np.random.Generator) -> Array:
    if t == "bool":
        return rng.integers(0, 2, N).astype(bool)
    if dt.is_float(t):
        special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.5, np.nan, np.inf, -np.inf, 1e30, 3e9, -3e9, 0.1]
        rest = rng.normal(0, 100, N - len(special))
        return rng.permutation(np.asarray([*special, *rest]).astype(t))
    info = np.iinfo(t)
    special = [0, 1, -1, int(info.min), int(info.max), 7, -7, 2, -2, int(info.min) + 1]
    special = [int(np.asarray(v).astype(t)) for v in special]
    rest = (
        rng.integers(-9, 9, N // 2 - len(special), dtype=t)
        if info.min < 0
        else rng.integers(0, 9, N // 2 - len(special), dtype=t)
    )
    wide = rng.integers(int(info.min), int(info.max), N - N // 2, dtype=t, endpoint=True)
    return rng.permutation(np.asarray([*special, *rest, *wide]).astype(t))


@st.composite
def expressions(draw: st.DrawFn, depth: int) -> Expr:
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        if draw(st.integers(0, 3)) == 0:
            return Const(draw(st.sampled_from(CONSTS)), "")  # typed by the caller
        return Ref(draw(st.sampled_from(["a", "b"])), (0,))
    kind = draw(st.sampled_from(["bin", "bin", "bin", "unary", "call", "cast", "select"]))
    sub = lambda: draw(expressions(depth - 1))  # noqa: E731
    if kind == "bin":
        return Binary(draw(st.sampled_from(BINARY)), sub(), sub())
    if kind == "unary":
        return Unary(draw(st.sampled_from(["-", "!", "~", "+"])), sub())
    if kind == "cast":
        return Cast(draw(st.sampled_from(DTYPES)), sub())
    if kind == "select":
        return Select(sub(), sub(), sub())
    f = draw(st.sampled_from(sorted(FUNCS)))
    return Call(f, tuple(sub() for _ in range(FUNCS[f])))


def _typed_consts(e: Expr, c: bool) -> Expr:
    from stencilmap.program.expr import map_expr

    def leaf(x: Expr) -> Expr | None:
        if isinstance(x, Const) and x.dtype == "":
            v = x.value
            if c:
                return (
                    Const(v, "float64" if isinstance(v, float) else "int32")
                    if abs(v) < 2**31
                    else Const(v, "float64")
                )
            return Const(v, "pyfloat" if isinstance(v, float) else "pyint")
        return None

    return map_expr(e, leaf)


def _acceptable(e: Expr, program: Program) -> str | None:
    """The expression's type, or None when the typing refuses it, it would reach a case that C and
    NumPy both leave undefined (an integer to a runtime power, float → 64-bit integer), or it raises to a
    power (``pow`` is not correctly rounded; every function drawn here is)."""
    from stencilmap.program.expr import postorder

    env = stencil_env(program)
    try:
        for node in postorder(e):
            t = infer(node, env)
            if isinstance(node, Binary) and node.op == "**":  # ints: a runtime negative power raises;
                return None  # floats: pow is libm's, ≤ 1 ulp from NumPy's (not bit-exact, documented)
            wide = isinstance(node, Cast) and dt.concrete(node.dtype) in ("int64", "uint64")
            if wide and dt.is_float(infer(node.operand, env)):  # type: ignore[union-attr]
                return None
            if isinstance(node, Call) and node.func in ("min", "max", "fmin", "fmax") and t == "bool":
                continue
        return dt.concrete(infer(e, env))
    except ExprTypeError:
        return None


@st.composite
def batches(draw: st.DrawFn) -> Program:
    c = draw(st.booleans())
    ta, tb = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    inputs = (Input("a", ta, (0,)), Input("b", tb, (0,)))
    base = Program(name="p", format="soda" if c else "stencilflow", semantics="c" if c else "numpy",
                   shape=(N,), inputs=inputs, stencils=(), outputs=())  # fmt: skip
    stencils: list[Stencil] = []
    for k in range(draw(st.integers(4, 10))):
        e = _typed_consts(draw(expressions(3)), c)
        t = _acceptable(e, base)
        if t is None:
            continue
        out = draw(st.sampled_from([t, *DTYPES]))
        if dt.is_float(t) and out in ("int64", "uint64"):
            out = t
        st_ = Stencil(f"s{k}", out, e, (), tuple((f, Boundary("shrink")) for f in ("a", "b")))
        try:
            lower(replace(base, stencils=(st_,), outputs=(st_.name,)), st_)
        except (Unsupported, ExprTypeError):
            continue
        stencils.append(st_)
    if not stencils:
        stencils.append(Stencil("s", ta, Ref("a", (0,)), (), (("a", Boundary("shrink")),)))
    return Program(name="p", format=base.format, semantics=base.semantics, shape=(N,), inputs=inputs,
                   stencils=tuple(stencils), outputs=tuple(s.name for s in stencils))  # fmt: skip


# ------------------------------------------------------------------------------------------ compiling


def _build(source: str, suffix: str, command: list[str], include: Path | None = None) -> ctypes.CDLL:
    folder = Path(tempfile.mkdtemp(prefix="sm-scalar-"))
    src = folder / f"unit{suffix}"
    src.write_text(source)
    lib = folder / "unit.so"
    extra = ["-I", str(include)] if include is not None else []
    done = subprocess.run([*command, *extra, "-shared", "-fPIC", "-o", str(lib), str(src), "-lm"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[:3000]
    return ctypes.CDLL(str(lib))


_PRELUDE = {
    "c99": "#include <stdint.h>\n#include <math.h>\n",
    "hls": "#include <cstdint>\n#include <cmath>\n#include <climits>\n",
    "opencl": '#include "opencl_emulation.h"\n',
}
_COMMAND = {
    "c99": ["gcc", "-O2", "-std=gnu11", "-fwrapv", "-ffp-contract=off", "-fexcess-precision=standard",
            "-fno-math-errno", "-fno-trapping-math"],
    "hls": ["g++", "-std=c++14", "-O0", "-ffp-contract=off", "-w"],
    "opencl": ["g++", "-std=c++14", "-O0", "-ffp-contract=off", "-w", "-pthread"],
}  # fmt: skip


def _storage(t: str) -> str:
    return "uint8" if t == "bool" else t


def run_dialect(
    dialect: Dialect, program: Program, kernels: list[ScalarKernel], values: dict[str, Array]
) -> dict[str, Array]:
    """Each kernel rendered in ``dialect``, compiled once, run over the inputs."""
    from stencilmap.scalar.ctypes_ import ctype

    extern = 'extern "C" ' if dialect != "c99" else ""
    used: set[tuple[str, str]] = set()
    bodies: list[str] = []
    for k, kernel in enumerate(kernels):
        if not supported(kernel, dialect):
            continue
        p = Printer(kernel, dialect, lambda r: f"{r.field}[i]")
        lines = []
        for j, tmp in enumerate(kernel.temps):
            lines.append(f"const {p.ctype(tmp.dtype)} t{j} = {p.expr(tmp.value)};")
            p.bind(tmp.value, f"t{j}")
        lines.append(f"out[i] = {p.expr(kernel.result)};")
        used |= p.helpers
        ta, tb, to = (
            ctype(x, dialect) for x in (program.field_dtype("a"), program.field_dtype("b"), kernel.dtype)
        )
        bodies.append(
            f"{extern}void run{k}(const {ta} *a, const {tb} *b, {to} *out, long n) {{\n"
            f"  for (long i = 0; i < n; i++) {{ {' '.join(lines)} }}\n}}\n"
        )
    source = _PRELUDE[dialect] + helpers_text(used, dialect) + "".join(bodies)
    include = (
        Path(str(resources.files("stencilmap.codegen").joinpath("include"))) if dialect == "opencl" else None
    )
    lib = _build(source, ".c" if dialect == "c99" else ".cpp", _COMMAND[dialect], include)
    outs: dict[str, Array] = {}
    a = np.ascontiguousarray(values["a"].astype(_storage(program.field_dtype("a"))))
    b = np.ascontiguousarray(values["b"].astype(_storage(program.field_dtype("b"))))
    for k, kernel in enumerate(kernels):
        if not supported(kernel, dialect):
            continue
        out = np.zeros(N, _storage(kernel.dtype))
        fn = getattr(lib, f"run{k}")
        fn.restype = None
        fn(
            ctypes.c_void_p(a.ctypes.data),
            ctypes.c_void_p(b.ctypes.data),
            ctypes.c_void_p(out.ctypes.data),
            ctypes.c_long(N),
        )
        outs[kernel.name] = out.astype(bool) if kernel.dtype == "bool" else out
    return outs


def run_bytecode(program: Program, values: dict[str, Array]) -> dict[str, Array]:
    """Each stencil as the simulator's bytecode, unrolled to straight-line C over ``arith.h`` (as the
    engine compiles it) and run over the inputs (values held as doubles, as in the engine)."""
    from stencilmap.design.common import port_name
    from stencilmap.sim.bytecode import compile_stencil
    from stencilmap.sim.engine import CFLAGS, _straight_line

    folder = Path(tempfile.mkdtemp(prefix="sm-scalar-"))
    (folder / "arith.h").write_text(resources.files("stencilmap.sim").joinpath("csrc", "arith.h").read_text())
    ports = (port_name("a", (0,)), port_name("b", (0,)))
    parts = ['#include "arith.h"\n']
    for k, s in enumerate(program.stencils):
        bc = compile_stencil(program, s, ports, {})
        consts = ", ".join(_c_double(float(x)) for x in bc.consts) or "0"
        parts.append(f"static const double K{k}[] = {{{consts}}};\n" + _straight_line(k, bc.code))
        parts.append(
            f"void run{k}(const double *a, const double *b, double *out, long n) {{\n"
            f"  double temps[64];\n  for (long i = 0; i < n; i++) {{ const double v[2] = {{a[i], b[i]}};"
            f" out[i] = ev{k}(v, K{k}, temps); }}\n}}\n"
        )
    (folder / "unit.c").write_text("".join(parts))
    lib_path = folder / "unit.so"
    cc = shutil.which("cc") or "gcc"
    flags = [f for f in CFLAGS if f != "-shared"]
    done = subprocess.run([cc, *flags, "-shared", "-I", str(folder), "-o", str(lib_path), str(folder / "unit.c"), "-lm"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[:3000]
    lib = ctypes.CDLL(str(lib_path))
    a = np.ascontiguousarray(values["a"].astype(np.float64))
    b = np.ascontiguousarray(values["b"].astype(np.float64))
    outs: dict[str, Array] = {}
    for k, s in enumerate(program.stencils):
        out = np.zeros(N, np.float64)
        fn = getattr(lib, f"run{k}")
        fn.restype = None
        fn(
            ctypes.c_void_p(a.ctypes.data),
            ctypes.c_void_p(b.ctypes.data),
            ctypes.c_void_p(out.ctypes.data),
            ctypes.c_long(N),
        )
        with np.errstate(all="ignore"):
            outs[s.name] = out != 0 if s.dtype == "bool" else out.astype(s.dtype)
    return outs


def _c_double(x: float) -> str:
    if np.isnan(x):
        return "NAN"
    if np.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    return x.hex()


# --------------------------------------------------------------------------------------------- checks


def same_bits(x: Array, y: Array) -> Array:
    """Elementwise: equal bits, or both NaN."""
    if x.dtype.kind == "f":
        both_nan = np.isnan(x) & np.isnan(y)
        return both_nan | (x.view(f"u{x.dtype.itemsize}") == y.astype(x.dtype).view(f"u{x.dtype.itemsize}"))
    return np.asarray(x == y.astype(x.dtype))


def _root_op(kernel: ScalarKernel) -> str:
    v = kernel.values[kernel.result]
    while (
        isinstance(v, Op)
        and v.op in ("convert", "to_bool", "f2i_wrap")
        and kernel.values[v.args[0]] is not None
    ):
        inner = kernel.values[v.args[0]]
        if not isinstance(inner, Op):
            break
        v = inner
    return (
        f"{v.op}{'(' + v.attr + ')' if isinstance(v, Op) and v.attr else ''} on {v.dtype}"
        if isinstance(v, Op)
        else "a read"
    )


def supported(kernel: ScalarKernel, dialect: str) -> bool:
    """Whether ``dialect`` promises bit-exactness for ``kernel``: only ``c99`` has float16; the
    simulator holds values as doubles (64-bit integers exact to 2**53) and rounds float16 as float32
    (documented in ``sim/bytecode.py``)."""
    types = {v.dtype for v in kernel.values} | {kernel.dtype}
    if dialect == "bytecode":
        return not types & {"int64", "uint64", "float16"}
    return dialect == "c99" or "float16" not in types


def _compilers() -> list[str]:
    return [
        d
        for d, exe in (("c99", "gcc"), ("hls", "g++"), ("opencl", "g++"), ("bytecode", "cc"))
        if shutil.which(exe)
    ]


@pytest.mark.skipif(not shutil.which("gcc") or not shutil.which("g++"), reason="needs gcc and g++")
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(batches(), st.integers(0, 2**31))
def test_every_dialect_equals_the_reference(program: Program, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = {i.name: edge_values(i.dtype, rng) for i in program.inputs}
    expected = run_reference(program, values).outputs
    kernels = [lower(program, s) for s in program.stencils]
    for dialect in _compilers():
        if dialect == "bytecode":
            got = run_bytecode(program, values)
        else:
            got = run_dialect(dialect, program, kernels, values)  # type: ignore[arg-type]
        for kernel, s in zip(kernels, program.stencils, strict=True):
            if not supported(kernel, dialect):
                continue
            ok = same_bits(np.asarray(expected[s.name]), got[s.name])
            if not ok.all():
                i = int(np.argmin(ok))
                pytest.fail(
                    f"{dialect}: {_root_op(kernel)} ({program.semantics} semantics) differs from the reference "
                    f"at a={values['a'][i]!r}, b={values['b'][i]!r}: {got[s.name][i]!r} != "
                    f"{np.asarray(expected[s.name])[i]!r}; expression {s.expr!r} as {s.dtype}"
                )


def _pair_program(t: str, semantics: str, exprs: dict[str, Expr], out: str) -> Program:
    bnd = (("a", Boundary("shrink")), ("b", Boundary("shrink")))
    stencils = tuple(Stencil(name, out, e, (), bnd) for name, e in exprs.items())
    return Program(name="p", format="soda" if semantics == "c" else "stencilflow", semantics=semantics,
                   shape=(N,), inputs=(Input("a", t, (0,)), Input("b", t, (0,))), stencils=stencils,
                   outputs=tuple(exprs))  # fmt: skip


@pytest.mark.skipif(not shutil.which("gcc") or not shutil.which("g++"), reason="needs gcc and g++")
@pytest.mark.parametrize(
    ("t", "exprs", "a", "b"),
    [
        # npy_divmod: 1 // 0.1 is 9 (the simulator said 10), -4 % 2 is +0 (it said -0)
        ("float64", {"fd": Binary("//", Ref("a", (0,)), Ref("b", (0,))), "md": Binary("%", Ref("a", (0,)), Ref("b", (0,)))},
         [1.0, -4.0, 7.0, np.nan], [0.1, 2.0, -0.0, 0.0]),
        ("float32", {"fd": Binary("//", Ref("a", (0,)), Ref("b", (0,))), "md": Binary("%", Ref("a", (0,)), Ref("b", (0,)))},
         [1.0, -4.0, 7.0, np.nan], [0.1, 2.0, -0.0, 0.0]),
        # NumPy's ~ of a bool is logical not (HLS/OpenCL and the simulator said true for both)
        ("bool", {"inv": Unary("~", Ref("a", (0,)))}, [True, False], [True, True]),
    ],
)  # fmt: skip
def test_known_drifts_stay_fixed(t: str, exprs: dict[str, Expr], a: list[float], b: list[float]) -> None:
    out = t
    program = _pair_program(t, "numpy", exprs, out)
    values = {"a": np.resize(np.asarray(a, dtype=t), N), "b": np.resize(np.asarray(b, dtype=t), N)}
    expected = run_reference(program, values).outputs
    kernels = [lower(program, s) for s in program.stencils]
    for dialect in _compilers():
        got = (
            run_bytecode(program, values)
            if dialect == "bytecode"
            else run_dialect(dialect, program, kernels, values)
        )  # type: ignore[arg-type]
        for name in exprs:
            assert same_bits(np.asarray(expected[name]), got[name]).all(), (dialect, name, got[name][:4])
