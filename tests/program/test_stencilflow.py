"""StencilFlow front end: every corpus program loads; errors name the JSON path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from stencilmap.errors import StencilmapError
from stencilmap.program import load_program
from stencilmap.program.expr import Binary, Call, Const, Ref, Select, Var
from stencilmap.program.ir import Boundary
from stencilmap.program.stencilflow import parse_stencilflow
from stencilmap.program.verify import verify
from tests.conftest import CORPUS_STENCILFLOW, EXAMPLE_FILES, corpus_or_skip

JSON_FILES = corpus_or_skip(CORPUS_STENCILFLOW) + [p for p in EXAMPLE_FILES if p.suffix == ".json"]


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: p.name if p else "none")
def test_every_program_loads(path: Path) -> None:
    program = load_program(path)
    assert program.format == "stencilflow" and program.semantics == "numpy"
    assert program.outputs


def base(**over: Any) -> dict[str, Any]:
    prog: dict[str, Any] = {
        "inputs": {"a": {"data": "constant:1.0", "data_type": "float32"}},
        "outputs": ["b"],
        "dimensions": [4, 5],
        "program": {
            "b": {
                "computation_string": "b = a[j-1, k] + a[j, k+2]",
                "boundary_conditions": {"a": {"type": "constant", "value": 0.5}},
                "data_type": "float32",
            }
        },
    }
    prog.update(over)
    return prog


def parse(prog: dict[str, Any]):  # type: ignore[no-untyped-def]
    return parse_stencilflow(json.dumps(prog), "p.json")


def test_offsets_and_boundary() -> None:
    p = parse(base())
    st = p.stencils[0]
    assert st.expr == Binary("+", Ref("a", (-1, 0)), Ref("a", (0, 2)))
    assert st.boundary == (("a", Boundary("constant", 0.5)),)
    assert p.shape == (4, 5)


def test_statements_ternary_logic_functions_and_tuple_indices() -> None:
    prog = base()
    prog["constants"] = {"w": 2.0}
    prog["program"]["b"]["computation_string"] = (
        "t = a[(j, k)] * w; b = sqrt(t) if 0.0 < t <= 4.0 and not t == 1.0 else min(t, a[(j + 1), k])"
    )
    st = parse(prog).stencils[0]
    assert [t.name for t in st.temps] == ["t"]
    assert st.temps[0].expr == Binary("*", Ref("a", (0, 0)), Var("w"))
    assert isinstance(st.expr, Select)
    assert st.expr.then == Call("sqrt", (Var("t"),))
    assert st.expr.else_ == Call("min", (Var("t"), Ref("a", (1, 0))))
    cond = st.expr.cond
    assert isinstance(cond, Binary) and cond.op == "&&"


def test_lower_dimensional_and_scalar_inputs() -> None:
    prog = {
        "inputs": {
            "s": {"data": 2.0, "data_type": "float64", "input_dims": []},
            "row": {"data": "constant:1", "data_type": "float64", "input_dims": ["k"]},
            "plane": {"data": "constant:1", "data_type": "float64", "dimensions": ["i", "k"]},
        },
        "outputs": ["o"],
        "dimensions": [2, 3, 4],
        "program": {
            "o": {"computation_string": "o = s + row[k+1] + plane[i-1, k]", "data_type": "float64",
                  "boundary_conditions": {"row": {"type": "copy"}, "plane": {"type": "constant", "value": 0}}},
        },
    }  # fmt: skip
    p = parse(prog)
    assert p.input("s").axes == () and p.input("row").axes == (2,) and p.input("plane").axes == (0, 2)  # type: ignore[union-attr]
    assert p.stencils[0].expr == Binary(
        "+", Binary("+", Ref("s", ()), Ref("row", (1,))), Ref("plane", (-1, 0))
    )


def test_shrink_forms_are_accepted() -> None:
    prog = base()
    prog["program"]["b"]["boundary_conditions"] = "shrink"
    assert parse(prog).stencils[0].boundary == (("a", Boundary("shrink")),)
    prog["program"]["b"]["boundary_conditions"] = {"a": {"btype": "shrink", "halo": ["halo", 0, 0, "halo"]}}
    assert parse(prog).stencils[0].boundary == (("a", Boundary("shrink")),)


def test_literals_are_weak() -> None:
    prog = base()
    prog["program"]["b"]["computation_string"] = "b = 0.25 * a[j, k] + 1"
    expr = parse(prog).stencils[0].expr
    assert isinstance(expr, Binary) and expr.rhs == Const(1, "pyint")


@pytest.mark.parametrize(
    ("change", "path", "what"),
    [
        (lambda p: p.update(extra=1), "extra", "unknown field"),
        (lambda p: p["inputs"]["a"].update(colour="red"), "inputs.a.colour", "unknown field"),
        (lambda p: p["program"]["b"].pop("data_type"), "program.b.data_type", "required field is missing"),
        (lambda p: p["inputs"]["a"].update(data_type="float31"), "inputs.a.data_type", "bad dtype 'float31'"),
        (lambda p: p.update(dimensions=[4, 0]), "dimensions[1]", "must be at least 1, got 0"),
        (lambda p: p.update(dimensions=[1, 2, 3, 4]), "dimensions", "at most 3"),
        (lambda p: p["inputs"]["a"].update(input_dims=["x"]), "inputs.a.input_dims", "unknown dimension 'x'"),
        (lambda p: p["program"]["b"].update(computation_string="b = a[j, k"),
         "program.b.computation_string", "syntax error"),
        (lambda p: p["program"]["b"].update(computation_string="b = c[j, k]"),
         "program.b.computation_string", "undefined field 'c'"),
        (lambda p: p["program"]["b"].update(computation_string="b = a[k, j]"),
         "program.b.computation_string", "index of 'a' must be 'j'"),
        (lambda p: p["program"]["b"].update(computation_string="b = foo(a[j, k])"),
         "program.b.computation_string", "unknown function 'foo'"),
        (lambda p: p["program"]["b"].update(computation_string="b = a"),
         "program.b.computation_string", "used without an index"),
        (lambda p: p["program"]["b"]["boundary_conditions"]["a"].pop("value"),
         "program.b.boundary_conditions.a", "needs a 'value'"),
        (lambda p: p["inputs"]["a"].update(data="random:5-1"), "inputs.a.data", "empty"),
        (lambda p: p["inputs"]["a"].update(data="a.h5"), "inputs.a.data", "unsupported data"),
    ],
)  # fmt: skip
def test_bad_input_names_the_json_path(change: Any, path: str, what: str) -> None:
    _refused_at(change, path, what)


def _refused_at(change: Any, path: str, what: str) -> None:
    """``change`` made to the base program is refused with a message at JSON ``path`` saying ``what``."""
    prog = base()
    change(prog)
    with pytest.raises(StencilmapError) as info:
        parse(prog)
    message = str(info.value)
    assert message.startswith(f"p.json: {path}"), message
    assert what in message


def test_invalid_json_gives_line_and_column() -> None:
    with pytest.raises(StencilmapError, match=r"^p.json:2:\d+: invalid JSON"):
        parse_stencilflow('{\n "inputs": ,\n}', "p.json")


def test_unused_or_missing_boundary_conditions_warn() -> None:
    prog = base()
    prog["program"]["b"]["boundary_conditions"] = {"zz": {"type": "copy"}}
    p = parse(prog)
    assert len(p.warnings) == 2
    assert p.stencils[0].boundary == (("a", Boundary("shrink")),)


def fdtd(**over: Any) -> dict[str, Any]:
    """The bundled 2-D FDTD with by-name feedback, small, with the given top-level keys replaced."""
    prog: dict[str, Any] = json.loads(
        (Path(__file__).parents[2] / "examples" / "fdtd2d_iterate.json").read_text()
    )
    prog.update(over)
    return prog


def test_iterate_and_feedback_load_by_name() -> None:
    p = parse(fdtd())
    assert p.iterate == 4
    assert p.feedback == (("ez", "Ez"), ("hx", "Hx"), ("hy", "Hy"))
    assert p.feeds() == (("Ez", "ez"), ("Hx", "hx"), ("Hy", "hy"))  # the coefficients C1..C4 in no pair
    assert parse(base()).feedback == () and parse(base()).iterate == 1


@pytest.mark.parametrize(
    ("feedback", "what"),
    [
        ({"ex": "Ez"}, "feedback from 'ex': not an output"),
        ({"ez": "E"}, "into 'E': not an input"),
        ({"ez": "Ez", "hx": "Ez"}, "input 'Ez' is fed by more than one output"),
    ],
)
def test_bad_feedback_names_its_json_path(feedback: dict[str, str], what: str) -> None:
    from stencilmap.program.verify import verify

    with pytest.raises(StencilmapError) as info:
        verify(parse(fdtd(feedback=feedback)))
    message = str(info.value)
    assert message.startswith("p.json: feedback."), message
    assert what in message


def test_feedback_type_and_dimensions_must_match() -> None:
    from stencilmap.program.verify import verify

    prog = fdtd()
    prog["inputs"]["C1"]["data_type"] = "float64"
    prog["inputs"]["Z"] = {"data": "constant:0", "data_type": "float32", "input_dims": ["k"]}
    for pair, what in (({"ez": "C1"}, "float64"), ({"ez": "Z"}, "1-D")):
        with pytest.raises(StencilmapError, match="type and dimensions must match") as info:
            verify(parse({**prog, "feedback": pair}))
        assert what in str(info.value) and str(info.value).startswith("p.json: feedback.ez")


def test_positional_iterate_still_needs_matching_inputs() -> None:
    from stencilmap.program.verify import verify

    prog = fdtd()
    del prog["feedback"]
    with pytest.raises(StencilmapError, match="name the pairs with a feedback mapping"):
        verify(parse(prog))


def test_bad_feedback_is_a_one_line_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from stencilmap.cli import main

    bad = tmp_path / "f.json"
    bad.write_text(json.dumps(fdtd(feedback={"ez": "Ez", "hy": "Ez"})))
    result = CliRunner().invoke(main, ["analyze", str(bad)])
    assert result.exit_code == 2
    assert "feedback.hy" in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------ strict types, duplicate keys, locations


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"inputs": {}, "inputs": {}}', "inputs"),
        ('{"dimensions": [4, 5], "dimensions": [4, 5]}', "dimensions"),
        ('{"program": {"b": {}, "b": {}}}', "program.b"),
        ('{"constants": {"c": 1, "c": 2}}', "constants.c"),
    ],
)
def test_a_key_given_twice_is_refused_at_its_json_path(text: str, path: str) -> None:
    with pytest.raises(StencilmapError) as info:
        parse_stencilflow(text, "p.json")
    assert str(info.value) == f"p.json: {path}: key '{path.rsplit('.', 1)[-1]}' is given twice in one object"


@pytest.mark.parametrize(
    ("change", "path", "what"),
    [
        (lambda p: p.update(iterate="4"), "iterate", "must be an integer, got '4'"),
        (lambda p: p.update(iterate=4.0), "iterate", "must be an integer, got 4.0"),
        (lambda p: p.update(vectorization=True), "vectorization", "must be an integer, got True"),
        (lambda p: p.update(dimensions=[True, 5]), "dimensions[0]", "must be an integer, got True"),
        (lambda p: p.update(dimensions=[4.0, 5]), "dimensions[0]", "must be an integer, got 4.0"),
        (lambda p: p.update(constants={"c": "0.1"}), "constants.c", "expected a number or an object"),
        (lambda p: p.update(constants={"c": True}), "constants.c", "expected a number or an object"),
        (lambda p: p.update(constants={"c": {"value": "0.1"}}), "constants.c.value", "must be a number, got '0.1'"),
        (lambda p: p["inputs"]["a"].update(data_type=32), "inputs.a.data_type", "must be a string, got 32"),
        (lambda p: p["inputs"]["a"].update(data=True), "inputs.a.data", "expected a string"),
        (lambda p: p["program"]["b"].update(boundary_conditions=[]), "program.b.boundary_conditions",
         "expected an object or 'shrink'"),
        (lambda p: p["program"]["b"]["boundary_conditions"]["a"].update(value="0.5"),
         "program.b.boundary_conditions.a.value", "must be a number, got '0.5'"),
        (lambda p: p["program"]["b"]["boundary_conditions"]["a"].update(halo=[1.5]),
         "program.b.boundary_conditions.a.halo[0]", "expected an integer or 'halo'"),
    ],
)  # fmt: skip
def test_a_wrong_type_is_not_coerced(change: Any, path: str, what: str) -> None:
    _refused_at(change, f"{path}: ", what)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda p: p.update(constants={"c": "HUGE"}), "constants.c"),
        (lambda p: p.update(constants={"c": {"value": "HUGE"}}), "constants.c.value"),
        (lambda p: p["inputs"]["a"].update(data="HUGE"), "inputs.a.data"),
        (lambda p: p["program"]["b"]["boundary_conditions"]["a"].update(value="HUGE"),
         "program.b.boundary_conditions.a.value"),
    ],
)  # fmt: skip
def test_a_number_that_overflows_to_infinity_is_refused(change: Any, path: str) -> None:
    prog = base()
    change(prog)
    text = json.dumps(prog).replace('"HUGE"', "-1e400")
    with pytest.raises(StencilmapError, match=rf"^p.json: {re.escape(path)}: .*finite"):
        parse_stencilflow(text, "p.json")


def test_integers_are_numbers() -> None:
    prog = base(constants={"c": 2, "d": {"value": 3}})
    prog["program"]["b"]["boundary_conditions"]["a"]["value"] = 1
    program = parse(prog)
    assert [c.value for c in program.constants] == [2, 3]


@pytest.mark.parametrize(
    ("change", "path", "what"),
    [
        (lambda p: p.update(iterate=5000), "iterate", "iterate must be between 1 and 4,096"),
        (lambda p: p.update(vectorization=5000), "vectorization", "vectorization must be between"),
        (lambda p: p.update(outputs=["b", "b"]), r"outputs\[1\]", "output 'b' is listed twice"),
        (lambda p: p.update(outputs=["b", "z"]), "outputs", "output 'z' is not computed"),
        (lambda p: p.update(constants={"a": 1}), "constants.a", "duplicate name 'a'"),
        (lambda p: p["inputs"].update(b={"data_type": "float32"}), "program.b", "duplicate name 'b'"),
        (lambda p: p["program"]["b"].update(computation_string="b = b[j, k]"), "program.b",
         "cyclic program: b -> b"),
        (lambda p: p["inputs"].update({"x" * 200: {"data_type": "float32"}}), "inputs.x{37}\\.\\.\\.",
         "is not an identifier of at most 128"),
    ],
)  # fmt: skip
def test_program_checks_name_the_json_path(change: Any, path: str, what: str) -> None:
    prog = base()
    change(prog)
    with pytest.raises(StencilmapError) as info:
        verify(parse(prog))
    message = str(info.value)
    assert re.match(rf"p.json: {path}: ", message), message
    assert what in message and len(message) < 300
