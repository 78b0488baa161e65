"""The linear form EMAX and CGRA share (``analysis.linear``): constants folded, temporaries and local
stencils substituted, and the node that is not linear named with its reason."""

from __future__ import annotations

import pytest

from stencilmap.analysis.linear import NotLinear, linear_form
from stencilmap.program.expr import Binary, Call
from stencilmap.program.ir import Program
from stencilmap.program.soda import parse_soda


def program(body: str, local: str = "") -> Program:
    text = (
        "kernel: k\nburst width: 512\nunroll factor: 1\ninput dram 0 float: a(16, *)\n"
        + (f"local float:\n  t(0, 0) = {local}\n" if local else "")
        + f"output dram 1 float:\n  b(0, 0) = {body}\niterate: 1\nborder: ignore\ncluster: none\n"
    )
    return parse_soda(text)


def form(p: Program) -> tuple[float, dict[tuple[str, tuple[int, int, int]], float]]:
    st = p.stencil(p.outputs[0])
    assert st is not None
    return linear_form(p, st)


def test_constants_fold_and_terms_add_up() -> None:
    const, coeff = form(program("0.5f * (a(0, 1) + a(0, 1)) - a(0, 0) / 4.0f + 3.0f"))
    assert const == 3.0 and coeff == {("a", (0, 1, 0)): 1.0, ("a", (0, 0, 0)): -0.25}  # SODA: a(x, y)


def test_a_local_stencil_is_substituted_at_the_reads_offset() -> None:
    const, coeff = form(program("2.0f * t(1, 0)", local="a(0, -1) + 1.0f"))
    assert const == 2.0 and coeff == {("a", (0, -1, 1)): 2.0}  # t(x + 1) of a(y - 1)


@pytest.mark.parametrize(
    ("body", "reason", "node"),
    [
        ("a(0, 0) * a(0, 1)", "product", Binary),
        ("a(0, 0) / 0.0f", "product", Binary),
        ("sqrt(a(0, 0))", "node", Call),
    ],
)
def test_what_is_not_linear_is_named(body: str, reason: str, node: type) -> None:
    with pytest.raises(NotLinear) as info:
        form(program(body))
    assert info.value.reason == reason and isinstance(info.value.node, node)
