"""SODA front end: the corpus and examples load, print back and re-parse to an equal IR; errors say where."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.errors import StencilmapError
from stencilmap.program.expr import Binary, Cast, Const, Ref, Unary
from stencilmap.program.soda import load_soda, parse_soda, print_soda
from stencilmap.program.verify import verify
from tests.conftest import CORPUS_SODA, EXAMPLE_FILES, corpus_or_skip

SODA_FILES = corpus_or_skip(CORPUS_SODA) + [p for p in EXAMPLE_FILES if p.suffix == ".soda"]


@pytest.mark.parametrize("path", SODA_FILES, ids=lambda p: p.name if p else "none")
def test_loads_verifies_and_round_trips(path: Path) -> None:
    program = load_soda(path)
    verify(program)
    again = parse_soda(print_soda(program))
    assert again == program


def test_corpus_has_all_eleven_kernels() -> None:
    if not CORPUS_SODA:
        pytest.skip("../shared/corpus absent")
    assert len(CORPUS_SODA) == 11


JACOBI = """
kernel: j
burst width: 64
unroll factor: 2
input dram 0 float: t1(32, *)
output dram 1 float: t0(0, 0) = (t1(0, 1) + t1(1, 0)) * 0.2f
iterate: 2
border: ignore
cluster: none
"""


def test_axes_are_reversed_to_c_order() -> None:
    p = parse_soda(JACOBI)
    assert p.shape == (None, 32)
    assert p.hints.tile == (32,)
    assert p.iterate == 2 and p.hints.unroll == 2 and p.hints.burst_width == 64
    expr = p.stencils[0].expr
    assert isinstance(expr, Binary) and isinstance(expr.lhs, Binary)
    # t1(0, 1) is x + 0, y + 1: C order (y, x) = (1, 0)
    assert expr.lhs.lhs == Ref("t1", (1, 0))
    assert expr.lhs.rhs == Ref("t1", (0, 1))
    assert expr.rhs == Const(0.2, "float32")


def test_lhs_offset_is_normalised_to_a_centred_stencil() -> None:
    src = """kernel: k
input int16: a(16, *)
local int16: t(0, 9) = a(0, 0) + a(0, 18)
output int16: o(0, 0) = t(0, 0)
"""
    t = parse_soda(src).stencils[0]
    # t(x, y + 9) = a(x, y) + a(x, y + 18)  ⇔  t(x, y) = a(x, y − 9) + a(x, y + 9)
    assert t.expr == Binary("+", Ref("a", (-9, 0)), Ref("a", (9, 0)))


@pytest.mark.parametrize(
    ("text", "dtype", "value"),
    [("1", "int32", 1), ("3000000000", "int64", 3000000000), ("7u", "uint32", 7), ("0x10", "int32", 16),
     ("0xFFFFFFFF", "uint32", 4294967295), ("5l", "int64", 5), ("0.5f", "float32", 0.5), ("0.5", "float64", 0.5),
     (".125f", "float32", 0.125), ("1e3", "float64", 1000.0), ("010", "int32", 8)],
)  # fmt: skip
def test_c_literal_types(text: str, dtype: str, value: float) -> None:
    p = parse_soda(f"kernel: k\ninput float: a(4, *)\noutput double: o(0, 0) = a(0, 0) + {text}\n")
    expr = p.stencils[0].expr
    assert isinstance(expr, Binary)
    assert expr.rhs == Const(value, dtype)


def test_casts_calls_select_and_unary() -> None:
    p = parse_soda(
        "kernel: k\ninput int16: a(4, *)\n"
        "output int32: o(0, 0) = select(a(0, 0) > 0, int32(a(0, 0)), -a(0, 0)) + max(a(0, 0), a(1, 0), 3)\n"
    )
    verify(p)
    text = print_soda(p)
    assert "select(" in text and "int32(" in text and "max(" in text
    assert parse_soda(text) == p


def test_let_temporaries() -> None:
    p = parse_soda(
        "kernel: k\ninput float: a(4, *)\noutput float: float s = a(0, 0) * 2.0f o(0, 0) = s + s\n"
    )
    st = p.stencils[0]
    assert [t.name for t in st.temps] == ["s"]
    assert parse_soda(print_soda(p)) == p


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (
            "kernel: k\ninput float: a(4, *)\noutput float: o(0, 0) = a(0, 0) +\n",
            ":3:",
            "unexpected end of file",
        ),
        (
            "kernel: k\ninput float: a(4, *)\noutput float: o(0, 0) = a(0, 0) $ 1\n",
            ":3:33",
            "unexpected character",
        ),
        (
            "kernel: k\ninput flaot: a(4, *)\noutput float: o(0, 0) = a(0, 0)\n",
            ":2:7",
            "unknown type 'flaot'",
        ),
        (
            "kernel: k\nkernel: k\ninput float: a(4, *)\noutput float: o(0,0) = a(0,0)\n",
            ":2:1",
            "given twice",
        ),
        ("kernel: k\ninput float: a(4, *)\noutput float: o(0, 0) = a(0.5, 0)\n", ":3:", "integer constants"),
        ("input float: a(4, *)\noutput float: o(0, 0) = a(0, 0)\n", ":1:1", "missing 'kernel:'"),
    ],
)
def test_syntax_and_semantic_errors_name_file_line_column(text: str, where: str, what: str) -> None:
    with pytest.raises(StencilmapError) as info:
        parse_soda(text, "bad.soda")
    message = str(info.value)
    assert message.startswith("bad.soda" + where), message
    assert what in message
    assert "\n" not in message


def test_syntax_error_says_what_was_expected() -> None:
    with pytest.raises(StencilmapError, match="expected"):
        parse_soda("kernel: k\ninput float a(4, *)\n", "x.soda")


def test_unary_minus_literals_round_trip() -> None:
    p = parse_soda("kernel: k\ninput float: a(4, *)\noutput float: o(0, 0) = a(0, 0) * -106 - -(2)\n")
    expr = p.stencils[0].expr
    assert isinstance(expr, Binary) and expr.rhs == Unary("-", Const(2, "int32"))
    assert parse_soda(print_soda(p)) == p


def test_cast_node_is_built_for_type_names() -> None:
    p = parse_soda("kernel: k\ninput int16: a(4, *)\noutput double: o(0, 0) = double(a(0, 0))\n")
    assert p.stencils[0].expr == Cast("float64", Ref("a", (0, 0)))


FDTD_SODA = """\
kernel: fdtd
unroll factor: 1
input float: Ez(16, *)
input float: Hx
input float: Hy
input float: C
output float: hx(0, 0) = Hx(0, 0) - C(0, 0) * (Ez(1, 0) - Ez(0, 0))
output float: hy(0, 0) = Hy(0, 0) - C(0, 0) * (Ez(0, 1) - Ez(0, 0))
output float: ez(0, 0) = Ez(0, 0) - C(0, 0) * (hx(0, 0) - hx(-1, 0)) + C(0, 0) * (hy(0, 0) - hy(0, -1))
iterate: 3
feedback: ez -> Ez, hx -> Hx, hy -> Hy
"""


def test_feedback_parses_and_round_trips() -> None:
    p = parse_soda(FDTD_SODA, "f.soda")
    verify(p)
    assert p.feedback == (("ez", "Ez"), ("hx", "Hx"), ("hy", "Hy"))
    assert p.feeds()[0] == ("Ez", "ez") and "C" not in dict(p.feeds())
    assert parse_soda(print_soda(p), "f.soda") == p


def test_feedback_into_an_unknown_input_is_refused() -> None:
    p = parse_soda(FDTD_SODA.replace("hy -> Hy", "hy -> H"), "f.soda")
    with pytest.raises(StencilmapError, match="into 'H': not an input") as err:
        verify(p)
    line = FDTD_SODA[: FDTD_SODA.index("feedback:")].count("\n") + 1
    assert str(err.value).startswith(f"f.soda:{line}:1: ")  # the feedback statement's line and column


def test_feedback_given_twice_is_an_error() -> None:
    with pytest.raises(StencilmapError, match="'feedback' is given twice"):
        parse_soda(FDTD_SODA + "feedback: ez -> Ez\n", "f.soda")


def test_parser_is_kept_in_the_cache_and_loaded_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser built once is saved under the compile cache; a later process loads it, and it parses and
    reports errors (with line and column) exactly as a freshly built one."""
    from stencilmap.program import soda

    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "cache"))
    path = next(p for p in SODA_FILES if p is not None)
    text = path.read_text()
    bad = text.replace("=", "= =", 1)

    def outcome() -> tuple[object, str]:
        soda._parser.cache_clear()
        with pytest.raises(StencilmapError) as err:
            parse_soda(bad, "x.soda")
        return parse_soda(text, "x.soda"), str(err.value)

    built = outcome()
    (saved,) = (tmp_path / "cache" / "parsers").iterdir()  # no temporary left beside it
    assert saved.name.startswith("soda-") and saved.suffix == ".lark"
    build = soda._build_parser
    with monkeypatch.context() as m:
        m.setattr(soda, "_build_parser", lambda: pytest.fail("built again"))
        assert outcome() == built  # loaded from the file
    assert "x.soda:" in built[1]
    saved.write_bytes(b"not a parser")  # a damaged file is rebuilt and rewritten
    assert outcome() == built
    assert saved.read_bytes() != b"not a parser"
    assert soda._build_parser is build
    soda._parser.cache_clear()


def test_an_unusable_cache_only_costs_the_parser_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compile cache that cannot be used (here a file) does not stop a program from parsing."""
    from stencilmap.program import soda

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("STENCILMAP_CACHE_DIR", str(tmp_path / "file"))
    path = next(p for p in SODA_FILES if p is not None)
    soda._parser.cache_clear()
    try:
        assert parse_soda(path.read_text(), "x.soda") == parse_soda(path.read_text(), "x.soda")
    finally:
        soda._parser.cache_clear()


_OUT = "output float: w(0, 0) = v(0, 0) + 1\n"


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("kernel: k\ninput float: v(64, *)\ninput float: v(64, *)\n" + _OUT, ":3:1", "duplicate name 'v'"),
        ("kernel: k\niterate: 5000\ninput float: v(64, *)\n" + _OUT, ":2:1", "iterate must be between 1 and 4,096"),
        ("kernel: k\nunroll factor: 5000\ninput float: v(64, *)\n" + _OUT, ":2:1", "unroll factor and vectorization"),
        (f"kernel: k\ninput float: v{'x' * 130}(64, *)\noutput float: w(0, 0) = 1\n", ":2:1",
         "is not an identifier of at most 128"),
        ("kernel: k\ninput float: v(64, *)\nlocal float: w(0, 0) = w(0, 0) + 1\n"
         "output float: z(0, 0) = w(0, 0)\n", ":3:1", "cyclic program: w -> w"),
        ("kernel: k\ninput float: v(64, *)\niterate: 2\ninput float: u(64, *)\n" + _OUT, ":3:1",
         "iterate/preserve need outputs matching inputs"),
        ("kernel: k\nborder: preserve\ninput float: v(64, *)\ninput float: u(64, *)\n" + _OUT, ":2:1",
         "iterate/preserve need outputs matching inputs"),
        ("kernel: k\ninput float: v(4, 4, 64, *)\noutput float: w(0, 0, 0, 0) = v(0, 0, 0, 0)\n", ":2:1",
         "iteration space must have 1 to 3 dimensions, got 4"),
        ("kernel: k\ninput float: max(64, *)\noutput float: w(0, 0) = max(0, 0)\n", ":2:1",
         "name 'max' is a function's name"),
    ],
)  # fmt: skip
def test_program_checks_name_line_and_column(text: str, where: str, what: str) -> None:
    with pytest.raises(StencilmapError) as info:
        verify(parse_soda(text, "bad.soda"))
    message = str(info.value)
    assert message.startswith("bad.soda" + where + ": "), message
    assert what in message


PARAM_PROGRAM = "kernel: k\ninput float: a(4, *)\nparam float{attrs}: c[3][4]\noutput float: o(0, 0) = a(0, 0) * c[1][2]\n"


def test_param_attributes_are_kept_and_print_back() -> None:
    attrs = ", dup 2, partition cyclic factor=3 dim=1, partition complete dim=2"
    p = parse_soda(PARAM_PROGRAM.format(attrs=attrs))
    (param,) = p.params
    assert param.dup == 2
    assert [(q.strategy, q.factor, q.dim) for q in param.partitions] == [
        ("cyclic", 3, 1),
        ("complete", None, 2),
    ]
    assert attrs in print_soda(p)
    assert parse_soda(print_soda(p)) == p
    assert parse_soda(PARAM_PROGRAM.format(attrs="")).params[0].dup == 1


@pytest.mark.parametrize(
    ("attrs", "what"),
    [
        (", dup 0", "'dup' must be between 1 and 1024, got 0"),
        (", dup 2, dup 3", "'dup' is given twice"),
        (", partition banana factor=0 dim=9", "'complete' or 'cyclic', not 'banana'"),
        (", partition cyclic dim=1", "needs 'factor=N'"),
        (", partition complete factor=2", "'factor' applies to 'cyclic'"),
        (", partition cyclic factor=4 dim=1", "'factor=4' must be between 1 and the size partitioned, 3"),
        (", partition cyclic factor=4", "'factor=4' must be between 1 and the size partitioned, 3"),
        (", partition complete dim=3", "'dim=3' is not one of the param's 2 dimension(s)"),
        (", partition complete dim=0", "'dim=0' is not one of"),
        (", partition complete, partition cyclic factor=2 dim=1", "partitioned twice"),
    ],
)
def test_absurd_param_attributes_are_refused_where_they_stand(attrs: str, what: str) -> None:
    with pytest.raises(StencilmapError) as info:
        parse_soda(PARAM_PROGRAM.format(attrs=attrs), "bad.soda")
    assert str(info.value).startswith("bad.soda:3:"), info.value
    assert what in str(info.value)
