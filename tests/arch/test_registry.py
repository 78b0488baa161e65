"""The architecture registry (``stencilmap.arch``): one place for what varies with the microarchitecture,
agreeing with the builders, the code generators, the models and the devices that name architectures."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from stencilmap.arch import ARCHS, arch, archs, check_options, default_arch
from stencilmap.codegen.registry import target, targets
from stencilmap.design.common import check_parameters
from stencilmap.design.registry import BuildConfig, build, builders
from stencilmap.device.catalog import device_names, load_device
from stencilmap.errors import StencilmapError, api_naming, input_param, param
from stencilmap.point import BUILT_ARCHS, DesignPoint, point_options
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import EXAMPLES

SRC = Path(__file__).resolve().parents[2] / "src" / "stencilmap"


def test_every_builder_is_an_architecture_and_back() -> None:
    assert set(archs(builds=True)) == set(builders()) == set(BUILT_ARCHS)
    assert set(ARCHS) - set(builders()) == {"roofline"}


def test_every_device_architecture_is_registered() -> None:
    for name in device_names():
        assert set(load_device(name).archs) <= set(ARCHS), name


def test_targets_are_read_from_codegen() -> None:
    for a in ARCHS.values():
        assert a.targets == tuple(t for t in targets() if a.name in target(t).archs)
    assert arch("soda").targets and "pcm" in target("opencl").archs


def test_streamed_architectures_are_timed_with_a_lanes_parameter() -> None:
    assert archs(streamed=True) == ("soda", "stencilflow", "pcm")
    for name in archs(timed=True):
        assert arch(name).lanes is not None and arch(name).simulator == "dataflow"


@pytest.mark.parametrize(
    ("name", "point", "lanes"),
    [
        ("jacobi2d.soda", DesignPoint(arch="soda", unroll=2), 2),
        ("jacobi2d.soda", DesignPoint(arch="pcm", unroll=4), 4),
        ("heat3d.json", DesignPoint(arch="stencilflow", vector=4), 4),
    ],
)
def test_lanes_are_read_from_the_built_design(name: str, point: DesignPoint, lanes: int) -> None:
    program = bind_shape(load_program(EXAMPLES / name), {}, None)
    assert point.arch is not None
    a = arch(point.arch)
    design = a.build(program, point)
    assert a.lanes_of(design) == lanes and design.arch == a.name


def test_default_architecture_follows_the_format_then_the_device() -> None:
    soda = load_program(EXAMPLES / "jacobi2d.soda")
    flow = load_program(EXAMPLES / "heat3d.json")
    assert (default_arch(soda), default_arch(flow)) == ("soda", "stencilflow")
    assert default_arch(soda, ("pcm", "soda")) == "soda"
    assert default_arch(soda, ("roofline",)) == "roofline"


def test_options_an_architecture_ignores_are_refused() -> None:
    check_options("soda", DesignPoint(unroll=2, tile=(8,)))
    with pytest.raises(StencilmapError, match="--vector does not apply to the soda design"):
        check_options("soda", DesignPoint(vector=2))
    with pytest.raises(StencilmapError, match="--tile does not apply to the pcm design"):
        arch("pcm").check(DesignPoint(tile=(8,)))
    with pytest.raises(StencilmapError, match="--delay-buffers does not apply to the soda design"):
        arch("soda").check(DesignPoint(delay_buffers="min"))
    with pytest.raises(
        StencilmapError, match=r"unknown architecture 'x' \(known: cgra, emax, pcm, soda, stencilflow\)"
    ):
        arch("x")


def test_the_builder_and_the_registry_name_unknown_architectures_alike() -> None:
    program = bind_shape(load_program(EXAMPLES / "jacobi2d.soda"), {}, None)
    with pytest.raises(StencilmapError) as built:
        build("x", program, BuildConfig())
    with pytest.raises(StencilmapError) as looked_up:
        arch("x")
    assert built.value.message == looked_up.value.message


def test_a_design_point_is_frozen_and_keyword_only() -> None:
    with pytest.raises(TypeError):
        DesignPoint(4)  # type: ignore[misc]
    point = DesignPoint(unroll=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.unroll = 2  # type: ignore[misc]
    assert BuildConfig is DesignPoint and not point.split and DesignPoint(devices=2).split


def test_the_command_line_offers_the_fields_of_a_design_point() -> None:
    offered = point_options()
    names = {f.name for f in dataclasses.fields(DesignPoint)}
    assert set(offered) <= names and {"parts", "link"} == names - set(offered)


def test_parameters_are_named_by_the_front_end_without_rewriting() -> None:
    assert (param("clock_mhz"), input_param("v"), input_param("v", "FILE.npy")) == (
        "--clock-mhz",
        "--input v",
        "--input v=FILE.npy",
    )
    with api_naming():
        assert (param("clock_mhz"), input_param("v"), input_param("v", "FILE.npy")) == (
            "clock_mhz",
            "inputs['v']",
            "inputs={'v': array}",
        )
        with pytest.raises(StencilmapError, match=r"^unroll must be between 1 and 1,024, got 0$"):
            check_parameters(0, None, None)
    with pytest.raises(StencilmapError, match=r"^--unroll must be between 1 and 1,024, got 0$"):
        check_parameters(0, None, None)


def test_no_architecture_is_tested_as_a_string_outside_the_registry() -> None:
    """``arch == "soda"`` and the like: what varies with the architecture is a fact of ``arch``."""
    literal = re.compile(
        r"""(?<!format )(==|!=|\bin|not in) \(?["'](soda|stencilflow|pcm|emax|cgra|roofline)["']"""
    )
    found = []
    for path in sorted((SRC / "jobs").glob("*.py")) + sorted((SRC / "explore").glob("*.py")):
        found += [
            f"{path.name}: {line.strip()}" for line in path.read_text().splitlines() if literal.search(line)
        ]
    found += [
        f"{path.name}: {line.strip()}"
        for path in [
            SRC / "api.py",
            *sorted((SRC / "cli").glob("*.py")),
            *sorted((SRC / "model").glob("*.py")),
        ]
        for line in path.read_text().splitlines()
        if literal.search(line) and "device.kind" not in line
    ]
    assert not found


def test_jobs_never_import_the_api_and_models_never_import_jobs() -> None:
    for path in (SRC / "jobs").glob("*.py"):
        assert not re.search(r"stencilmap\.api\b|from stencilmap import api\b", path.read_text()), path.name
    for path in (SRC / "model").glob("*.py"):
        assert "stencilmap.jobs" not in path.read_text(), path.name
