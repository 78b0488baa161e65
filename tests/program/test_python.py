"""Python front end: every SODA and StencilFlow program prints to Python and parses back to the same IR;
hostile files are refused with file:line:col and never run; a Python Jacobi runs bit for bit as SODA's."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import stencilmap as sm
import stencilmap.lang
from stencilmap.cli import main
from stencilmap.errors import StencilmapError
from stencilmap.program import dtypes as dt
from stencilmap.program import load_program
from stencilmap.program.expr import FUNCTIONS, Binary, Call, Cast, Const, Expr, Ref, Select, Unary, Var
from stencilmap.program.ir import Boundary, DataSource, Program
from stencilmap.program.python import parse_python
from stencilmap.program.python_expr import escape, unescape
from stencilmap.program.python_print import format_expr, print_python
from stencilmap.program.verify import verify
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, EXAMPLES, corpus_or_skip
from tests.strategies import programs

ALL_FILES = corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW) + EXAMPLE_FILES


def round_trip(program: Program) -> Program:
    return parse_python(print_python(program), f"{program.name}.py")


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name if p else "none")
def test_every_corpus_and_example_program_round_trips(path: Path) -> None:
    program = load_program(path)
    text = print_python(program)
    again = parse_python(text, f"{program.name}.py")
    verify(again)
    assert again == program  # the IR compares every field but name/path/locations; format follows semantics
    assert again.format == program.format and again.semantics == program.semantics
    assert print_python(again) == text


def test_the_corpus_is_there() -> None:
    if not CORPUS_SODA:
        pytest.skip("../shared/corpus absent")
    assert len(CORPUS_SODA) == 11 and len(CORPUS_STENCILFLOW) >= 27


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_round_trip(program: Program) -> None:
    assert round_trip(program) == program


# ----------------------------------------------------------------------------- expressions and precedence

_OPS_C = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "&", "|", "^"]
_OPS_NUMPY = [*_OPS_C, "//", "**"]
_CONSTS_C = [Const(1, "int32"), Const(3000000000, "int64"), Const(7, "uint32"), Const(5, "int64"),
             Const(0.5, "float32"), Const(0.25, "float64"), Const(-2, "int32"), Const(-0.5, "float32"),
             Const(float("inf"), "float64"), Const(4294967295, "uint32")]  # fmt: skip
_CONSTS_NUMPY = [Const(1, "pyint"), Const(0.5, "pyfloat"), Const(True, "pybool"), Const(-3, "pyint"),
                 Const(-0.0, "pyfloat"), Const(2.5, "float32"), Const(9, "uint8"), Const(False, "bool")]  # fmt: skip


@st.composite
def expressions(draw: st.DrawFn, semantics: dt.Semantics, depth: int = 4) -> Expr:
    """Every node kind and operator, nested at random: the printer's parentheses must rebuild the tree."""
    consts = _CONSTS_C if semantics == "c" else _CONSTS_NUMPY
    leaves = [Ref("a", (-1, 0)), Ref("a", (0, 2)), Ref("in", (0, 0)), Ref("s", ()), Var("k"), Var("c", (1, 0)),
              *consts]  # fmt: skip
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(leaves))
    sub = lambda: draw(expressions(semantics, depth - 1))  # noqa: E731
    kind = draw(st.sampled_from(["binary", "binary", "binary", "unary", "select", "cast", "call"]))
    if kind == "binary":
        return Binary(draw(st.sampled_from(_OPS_C if semantics == "c" else _OPS_NUMPY)), sub(), sub())
    if kind == "unary":
        return Unary(draw(st.sampled_from(["-", "+", "!", "~"])), sub())
    if kind == "select":
        return Select(sub(), sub(), sub())
    if kind == "cast":
        return Cast(draw(st.sampled_from(["int16", "float32", "uint8", "bool"])), sub())
    func = draw(st.sampled_from(["sqrt", "min", "max", "fma", "abs", "fabs", "pow", "round"]))
    arity = FUNCTIONS[func] or draw(st.integers(2, 3))
    return Call(func, tuple(sub() for _ in range(arity)))


def _parsed_expr(e: Expr, semantics: dt.Semantics) -> Expr:
    text = f"""semantics = "{semantics}"
shape = (4, 4)
k = 2
c: int16 = Param(2, 2)
def w(a: float32, in_: int16, s: float32) -> float32:
    return a[0, 0] + in_[0, 0] + s + ({format_expr(e, semantics)})
"""
    body = parse_python(text, "e.py").stencils[0].expr
    assert isinstance(body, Binary)
    return body.rhs


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["c", "numpy"]).flatmap(lambda s: st.tuples(st.just(s), expressions(s))))
def test_printed_expressions_parse_to_the_same_tree(case: tuple[dt.Semantics, Expr]) -> None:
    semantics, e = case
    assert _parsed_expr(e, semantics) == e


@pytest.mark.parametrize(
    ("expr", "text"),
    [(Binary("-", Ref("a", (0, 0)), Binary("-", Var("k"), Var("k"))), "a[0, 0] - (k - k)"),
     (Binary("**", Unary("-", Var("k")), Var("k")), "(-k) ** k"),
     (Unary("-", Binary("**", Var("k"), Var("k"))), "-k ** k"),
     (Binary("<", Binary("<", Var("k"), Var("k")), Var("k")), "(k < k) < k"),
     (Binary("&", Binary("==", Var("k"), Var("k")), Var("k")), "(k == k) & k"),
     (Unary("!", Binary("&&", Var("k"), Var("k"))), "not (k and k)"),
     (Select(Var("k"), Const(1, "pyint"), Select(Var("k"), Const(2, "pyint"), Const(3, "pyint"))),
      "1 if k else (2 if k else 3)")],
)  # fmt: skip
def test_parentheses_follow_python_precedence(expr: Expr, text: str) -> None:
    assert format_expr(expr, "numpy") == text


@pytest.mark.parametrize(
    ("source", "semantics", "const"),
    [("1", "c", Const(1, "int32")), ("3000000000", "c", Const(3000000000, "int64")), ("0.5", "c", Const(0.5, "float64")),
     ("literal(0.5, float32)", "c", Const(0.5, "float32")), ("literal(7, uint32)", "c", Const(7, "uint32")),
     ("literal(-2)", "c", Const(-2, "int32")), ("1", "numpy", Const(1, "pyint")),
     ("0.5", "numpy", Const(0.5, "pyfloat")), ("True", "numpy", Const(True, "pybool")),
     ("literal(3, float32)", "numpy", Const(3.0, "float32"))],
)  # fmt: skip
def test_literals_take_the_semantics_type(source: str, semantics: str, const: Const) -> None:
    text = f'semantics = "{semantics}"\nshape = (4,)\ndef w(a: float64) -> float64:\n    return a[0] + {source}\n'
    expr = parse_python(text).stencils[0].expr
    assert isinstance(expr, Binary) and expr.rhs == const
    assert type(expr.rhs.value) is type(const.value)


@pytest.mark.parametrize("name", ["in", "in_", "in__", "lambda", "None", "x", "x_", "_", "match", "True_"])
def test_keyword_names_escape_and_unescape(name: str) -> None:
    spelt = escape(name)
    assert not __import__("keyword").iskeyword(spelt) and unescape(spelt) == name


# ------------------------------------------------------------------------------------------ the features

FEATURES = '''"""Every declaration and setting."""
from stencilmap.lang import Input, Param, constant, copy, float32, int16, random, shrink, sqrt

shape = (8, 16, 4)
iterate = 2
feedback = {"out": "u"}
outputs = ["out", "aux"]
vectorization = 4
dram = {"u": (0, 1), "c": 2, "out": 3}
alpha = 0.5
n: int16 = 3
c: float32 = Param(3)
u: float32
row: float32 = Input(axes=(1,), data="row.dat")
s: float32 = Input(axes=(), data=2.5)
coef: float32 = Input(axes=(0, 2), data=random(-1, 1))


def aux(u: float32, row: float32 = constant(-1.5)) -> float32:
    """A docstring is allowed."""
    t: float32 = u[0, 0, 0] * row[1]
    return t + c[2]


def out(u: float32, aux: float32 = copy, s: float32 = shrink, coef: float32 = constant(0)) -> float32:
    return sqrt(u[0, -1, 0] * alpha) + aux[1, 0, 0] * s + coef[0, -1] * n if u[0, 0, 0] > 0 else aux[0, 0, 0]
'''


def test_declarations_settings_and_boundaries() -> None:
    p = parse_python(FEATURES, "features.py")
    verify(p)
    assert p.shape == (8, 16, 4) and p.iterate == 2 and p.feedback == (("out", "u"),)
    assert p.outputs == ("out", "aux") and p.hints.vectorization == 4
    assert [(i.name, i.axes, i.banks) for i in p.inputs] == [
        ("u", (0, 1, 2), (0, 1)), ("row", (1,), ()), ("s", (), ()), ("coef", (0, 2), ())
    ]  # fmt: skip
    assert p.input("row").source == DataSource("file", path="row.dat")  # type: ignore[union-attr]
    assert p.input("s").source == DataSource("scalar", value=2.5)  # type: ignore[union-attr]
    assert p.input("coef").source == DataSource("random", low=-1.0, high=1.0)  # type: ignore[union-attr]
    assert [(c.name, c.value, c.dtype) for c in p.constants] == [("alpha", 0.5, "pyfloat"), ("n", 3, "int16")]
    assert p.params[0].shape == (3,) and p.params[0].banks == (2,)
    aux, out = p.stencils
    assert aux.boundary == (("row", Boundary("constant", -1.5)),)
    assert aux.temps[0].dtype == "float32" and aux.temps[0].expr == Binary(
        "*", Ref("u", (0, 0, 0)), Ref("row", (1,))
    )
    assert out.boundary == (
        ("aux", Boundary("copy")), ("coef", Boundary("constant", 0.0)), ("s", Boundary("shrink"))
    )  # fmt: skip
    assert out.banks == (3,) and isinstance(out.expr, Select)
    assert round_trip(p) == replace(p, name="features")


def test_inputs_are_inferred_from_parameters_in_order() -> None:
    text = "shape = (4, 4)\ndef a(y: float32, s: float32) -> float32:\n    return y[0, 1] * s\n"
    text += "def b(x: int16, a: float32) -> float32:\n    return a[0, 0] + x[0, 0]\n"
    p = parse_python(text)
    assert [(i.name, i.dtype, i.axes) for i in p.inputs] == [
        ("y", "float32", (0, 1)),
        ("s", "float32", ()),
        ("x", "int16", (0, 1)),
    ]
    assert p.outputs == ("b",) and p.semantics == "numpy" and p.format == "stencilflow"


def test_rank_comes_from_the_offsets_without_a_shape() -> None:
    p = parse_python("def w(v: float32) -> float32:\n    return v[0, 1, -1]\n")
    assert p.shape == (None, None, None)


def test_example_is_the_soda_program() -> None:
    py = load_program(EXAMPLES / "jacobi2d.py")
    soda = load_program(EXAMPLES / "jacobi2d.soda")
    assert py == soda and py.name == "jacobi2d"
    assert sm.load(str(EXAMPLES / "jacobi2d.py"), shape=(8, 64)).shape == (8, 64)


NUMPY_JACOBI = """from stencilmap.lang import float32
shape = (None, 64)
iterate = 4
border = "preserve"
def w(v: float32) -> float32:
    return (v[-1, 0] + v[0, -1] + v[0, 0] + v[0, 1] + v[1, 0]) * 0.2
"""


@pytest.mark.parametrize("source", ["example", "numpy"])
def test_python_jacobi_runs_bit_exactly_as_soda(source: str) -> None:
    soda = load_program(EXAMPLES / "jacobi2d.soda")
    py = load_program(EXAMPLES / "jacobi2d.py") if source == "example" else parse_python(NUMPY_JACOBI, "j.py")
    assert py.semantics == ("c" if source == "example" else "numpy")
    v = np.random.default_rng(7).standard_normal((48, 64)).astype(np.float32)
    want = sm.run(soda, {"v": v}).outputs["w"]
    got = sm.run(py, {"v": v}).outputs["w"]
    assert got.dtype == want.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_stencilmap_run_takes_a_py_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", str(EXAMPLES / "jacobi2d.py"), "--out", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["program"] == "jacobi2d" and np.load(tmp_path / "w.npy").shape == (64, 64)


# ------------------------------------------------------------------------------------- functions (sm.load)


def jacobi(v: stencilmap.lang.float32) -> stencilmap.lang.float32:
    return (v[-1, 0] + v[0, -1] + v[0, 0] + v[0, 1] + v[1, 0]) * 0.2


def smooth(jacobi: stencilmap.lang.float32 = stencilmap.lang.copy) -> stencilmap.lang.float32:
    return (jacobi[0, -1] + jacobi[0, 1]) * 0.5


def broken(v: stencilmap.lang.float32) -> stencilmap.lang.float32:
    return v[0, 0] + undefined[0, 0]  # type: ignore[name-defined]  # noqa: F821


def test_sm_load_reads_functions() -> None:
    p = sm.load(jacobi, shape=(16, 16))
    assert p.shape == (16, 16) and p.name == "jacobi" and p.outputs == ("jacobi",)
    assert p.stencils[0].expr == parse_python(NUMPY_JACOBI.replace("def w", "def jacobi")).stencils[0].expr
    two = sm.load([jacobi, smooth], shape=(8, 8))
    assert two.name == "smooth" and two.outputs == ("smooth",)
    assert two.stencils[1].boundary == (("jacobi", Boundary("copy")),)
    assert sm.run(two).outputs["smooth"].shape == (8, 8)


def test_sm_load_names_the_functions_file_line_and_column() -> None:
    with pytest.raises(StencilmapError) as err:
        sm.load(broken, shape=(4, 4))
    line = broken.__code__.co_firstlineno + 1
    assert err.value.where == f"{__file__}:{line}:22" and "undefined field 'undefined'" in err.value.message
    with pytest.raises(StencilmapError, match="lambda"):
        sm.load(lambda v: v)


# ------------------------------------------------------------------------------------------- hostile input


def _hostile(sentinel: Path) -> list[tuple[str, str, str]]:
    touch = f"open({str(sentinel)!r}, 'w')"
    head = "from stencilmap.lang import float32\nshape = (4, 4)\n"
    body = "def w(v: float32) -> float32:\n"
    return [
        (f"import os\nos.system('touch {sentinel}')\n", "h.py:1:1", "import of 'os'"),
        (f"{head}__import__('os').system('touch {sentinel}')\n", "h.py:3:1", "expression statement"),
        (f"{head}while True:\n    {touch}\n", "h.py:3:1", "'while' statement"),
        (f"{head}{body}    return {touch}\n", "h.py:4:12", "unknown function 'open'"),
        (f"{head}{body}    return (lambda: v[0, 0])()\n", "h.py:4:12", "unsupported call"),
        (f"{head}{body}    return (lambda: v)[0, 0]\n", "h.py:4:12", "unsupported access"),
        (f"{head}@{touch.replace('open', 'print')}\n{body}    return v[0, 0]\n", "h.py:3:2", "no decorator"),
        (f"{head}class A:\n    x = {touch}\n", "h.py:3:1", "a class"),
        (f"{head}{body}    {touch}\n    return v[0, 0]\n", "h.py:4:5", "expression statement"),
        (
            f"{head}def w(v: float32 = {touch}) -> float32:\n    return v[0, 0]\n",
            "h.py:3:20",
            "boundary condition",
        ),
        (f"{head}def w(v: float32) -> {touch}:\n    return v[0, 0]\n", "h.py:3:22", "expected a dtype"),
        (f"{head}x = {touch}\n", "h.py:3:1", "must be a number"),
        (f"{head}shape2: float32 = Input(data={touch})\n", "h.py:3:30", "data is"),
        (f"{head}{body}    return v.__class__\n", "h.py:4:12", "unsupported expression"),
        (f"{head}{body}    if v[0, 0]:\n        {touch}\n    return v[0, 0]\n", "h.py:4:5", "'if' statement"),
        (f"{head}{body}    return v[0, 0] + u[0, 0]\n", "h.py:4:22", "undefined field 'u'"),
        (f"{head}{body}    return v[0, x]\n", "h.py:4:17", "integer constant"),
        (f"{head}def w(v: float32, u: float32) -> float32:\n    return v[0, 0]\n", "h.py:3:19", "not read"),
        (f"{head}def w(v: float32) -> float32:\n    x = v[0, 0]\n", "h.py:3:1", "does not return"),
        (f"{head}def w(v: float) -> float32:\n    return v[0, 0]\n", "h.py:3:10", "ambiguous"),
        (f"{head}{body}    return v[0]\n", "h.py:4:12", "spans 2 dimension(s)"),
        (
            f'{head}semantics = "c"\n{body}    return v[0, 0] if True else 0.0\n',
            "h.py:5:23",
            "no boolean literal",
        ),
        (f"{head}shape = (2, 2)\n", "h.py:3:1", "set twice"),
        (f"{head}{body}    return v[0, 0]\n{body}    return v[0, 0]\n", "h.py:5:1", "defined twice"),
        (f"{head}{body}    return v[0, 0\n", "h.py:4:13", "syntax error"),
    ]


def test_hostile_files_are_refused_where_they_go_wrong_and_never_run(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    for text, where, what in _hostile(sentinel):
        with pytest.raises(StencilmapError) as err:
            verify(parse_python(text, "h.py"))
        assert str(err.value.where) == where, (text, str(err.value))
        assert what in err.value.message, (text, err.value.message)
        assert not sentinel.exists()


def test_hostile_file_on_the_command_line_is_one_line_exit_2(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    prog = tmp_path / "evil.py"
    prog.write_text(f"import os\nos.system('touch {sentinel}')\n")
    result = CliRunner().invoke(main, ["run", str(prog), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and not sentinel.exists()
    assert result.output.strip().count("\n") == 0 and f"{prog}:1:1" in result.output


# ------------------------------------------------------------------------------------------ stencilmap.lang


def test_lang_holds_every_name_the_printer_imports() -> None:
    names = set(stencilmap.lang.__all__)
    assert {d for d in dt.DTYPES if d != "bool"} <= names
    assert set(FUNCTIONS) - {"min", "max", "abs", "round", "pow"} <= names
    assert {"Input", "Param", "literal", "constant", "copy", "shrink", "random"} <= names
    for path in ALL_FILES:
        if path is None or not isinstance(path, Path):
            continue
        tree = ast.parse(print_python(load_program(path)))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert {a.name for a in node.names} <= names


def test_mutated_python_programs_load_or_fail_with_one_located_error() -> None:
    """Issue 13's mutator over printed programs: every outcome is a Program or a StencilmapError."""
    import random

    from tests.fuzz import mutate_text

    rng = random.Random(25)
    texts = [(EXAMPLES / "jacobi2d.py").read_text(), FEATURES]
    texts += [print_python(load_program(p)) for p in ALL_FILES if isinstance(p, Path)][::4]
    for n in range(400):
        text = mutate_text(rng, texts[n % len(texts)])
        try:
            verify(parse_python(text, "m.py"))
        except StencilmapError as exc:
            assert str(exc.where).startswith("m.py") and "\n" not in str(exc), (text, str(exc))
