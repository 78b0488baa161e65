"""``verify_design``: the invariants every design keeps, and hand-made designs that break them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from stencilmap.design.ir import Channel, Design, Module, params, verify_design
from stencilmap.errors import StencilmapError


def small() -> Design:
    """read.a -> pe (port a@(0)) -> write.b"""
    return Design(
        "small",
        "test",
        (
            Module("read.a", "reader", params(field="a")),
            Module("pe", "pe", params(stencil="b", inputs=("a@(0)",)), latency=3),
            Module("write.b", "writer", params(field="b")),
        ),
        (
            Channel("in", "read.a", "pe", 2, dst_port="a@(0)"),
            Channel("out", "pe", "write.b", 2),
        ),
    )


def two_ports(pe: Module) -> Module:
    return replace(pe, params=params(stencil="b", inputs=("a@(0)", "a@(1)")))


def test_a_well_formed_design_passes() -> None:
    verify_design(small())
    assert small().kinds() == {"pe": 1, "reader": 1, "writer": 1}
    assert small().module("pe").param("latency") is None and small().module("pe").latency == 3


def test_params_are_sorted_and_drop_none() -> None:
    assert params(z=1, a="x", m=None) == (("a", "x"), ("z", 1))


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (lambda d: replace(d, channels=(replace(d.channels[0], depth=0), d.channels[1])), "depth 0"),
        (lambda d: replace(d, channels=(replace(d.channels[0], width=0), d.channels[1])), "width 0"),
        (
            lambda d: replace(d, channels=(replace(d.channels[0], dst_port="a@(1)"), d.channels[1])),
            "fed by 0",
        ),
        (lambda d: replace(d, channels=(*d.channels, replace(d.channels[0], name="again"))), "fed by 2"),
        (lambda d: replace(d, channels=(*d.channels, Channel("x", "pe", "nowhere", 1))), "unknown modules"),
        (
            lambda d: replace(d, channels=(*d.channels, Channel("x", "ghost", "pe", 1, dst_port="a@(0)"))),
            "unknown",
        ),
        (lambda d: replace(d, channels=(d.channels[0],)), "has no output"),
        (
            lambda d: replace(d, modules=(d.modules[0], two_ports(d.modules[1]), d.modules[2])),
            r"'a@\(1\)' is fed by 0",
        ),
        (lambda d: replace(d, channels=(*d.channels, Channel("x", "pe", "pe", 1))), "loops"),
        (
            lambda d: replace(d, channels=(*d.channels, Channel("in", "pe", "write.b", 1))),
            "duplicate channel",
        ),
        (lambda d: replace(d, modules=(*d.modules, d.modules[0])), "duplicate module"),
        (
            lambda d: replace(d, channels=(*d.channels, Channel("x", "pe", "read.a", 1))),
            "reader 'read.a' has input",
        ),
        (
            lambda d: replace(
                d, modules=d.modules[::-1], channels=(*d.channels, Channel("x", "write.b", "pe", 1))
            ),
            "writer 'write.b' has output",
        ),
        (
            lambda d: replace(d, channels=(*d.channels, Channel("x", "read.a", "pe", 1, dst_port="v"))),
            "undeclared",
        ),
        (
            lambda d: replace(d, modules=(*d.modules[:1], replace(d.modules[1], latency=-1), d.modules[2])),
            "negative",
        ),
    ],
)
def test_broken_designs_are_rejected(broken: Callable[[Design], Design], message: str) -> None:
    with pytest.raises(StencilmapError, match=message):
        verify_design(broken(small()))


def test_a_fifo_without_input_is_dangling() -> None:
    d = small()
    d = replace(
        d,
        modules=(*d.modules, Module("f", "fifo", params(depth=2))),
        channels=(*d.channels, Channel("dangle", "f", "write.b", 1, dst_port="x")),
    )
    with pytest.raises(StencilmapError, match="'f' \\(fifo\\) has no input"):
        verify_design(d)


def test_a_pe_without_declared_inputs_is_a_generator() -> None:
    d = Design(
        "gen",
        "test",
        (Module("pe", "pe", params(stencil="c", inputs=())), Module("write.c", "writer")),
        (Channel("out", "pe", "write.c", 2),),
    )
    verify_design(d)
    with pytest.raises(StencilmapError, match="no input"):
        verify_design(replace(d, modules=(Module("pe", "forward"), d.modules[1])))
