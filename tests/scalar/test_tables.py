"""The tables that tie the scalar semantics together: the simulator's instruction set and ``arith.h``
agree, every op the lowering emits is in ``scalar.ops.OPS``, every helper op has a definition."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from stencilmap.program.expr import FUNCTIONS
from stencilmap.scalar import helpers, ops
from stencilmap.scalar.ctypes_ import DIALECTS
from stencilmap.sim import bytecode as B


def _arith() -> str:
    return resources.files("stencilmap.sim").joinpath("csrc", "arith.h").read_text()


def test_arith_h_carries_the_bytecode_tables() -> None:
    text = _arith()
    block = re.search(r"/\* BEGIN bytecode\.c_defines\(\).*?\*/\n(.*?)/\* END", text, re.S)
    assert block is not None, "arith.h lost its generated block"
    assert block.group(1) == B.c_defines(), "regenerate arith.h's block from bytecode.c_defines()"


@pytest.mark.parametrize("name", ["arith.h", "engine.c"])
def test_the_c_side_has_no_magic_opcodes(name: str) -> None:
    text = resources.files("stencilmap.sim").joinpath("csrc", name).read_text()
    body = text.split("/* END bytecode.c_defines() */")[-1]
    if name == "engine.c":  # the stack machine
        body = body[body.index("static double evaluate") : body.index("return s[0];")]
    assert not re.search(r"case \d+\s*:", body), "switch on a named SM_* code, not a number"
    assert not re.search(r"\b(t|op|arg|f) (==|<=|>=) \d", body), "compare codes with their SM_* names"


def test_every_program_function_has_a_bytecode_code() -> None:
    for f in FUNCTIONS:
        assert f == "round" or f in B.FUNC_CODES
    assert set(ops.LIBM) <= set(B.FUNC_CODES)


def test_bytecode_names_are_scalar_ops() -> None:
    for name in [*B.BINARY_CODES, *B.UNARY_CODES, *B.FUNC_CODES]:
        assert name in ops.OPS or name in ops.LIBM or name in B.FUNC_ALIASES or name in ("pow", "round_even")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_helper_is_defined_in_every_dialect(dialect: str) -> None:
    for t in ("int8", "int32", "uint16", "uint64", "float32", "float64"):
        kinds = helpers._FLOAT if t.startswith("float") else helpers._INT
        for op in kinds:
            assert f"{helpers.helper_name(op, t)}(" in helpers.define(op, t, dialect)  # type: ignore[arg-type]
