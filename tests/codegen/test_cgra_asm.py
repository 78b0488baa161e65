"""The CGRA assembly as a program (``codegen.cgra_asm``): written, parsed back into the mapping the simulator
runs (write → parse → write identical on every example and corpus program that maps), simulated from the
text with ``simulate --from-asm`` (an edited coefficient shows as a mismatch), malformed text refused with
one ``FILE:LINE`` line."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.cli import analyze_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.codegen.cgra_asm import canonical, parse_asm, print_asm
from stencilmap.design.cgra.mapping import CgraMapping, map_cgra
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.model.cgra import roofline_workers_of
from stencilmap.point import DesignPoint
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim.cgra import TYPED_OPS, simulate_cgra
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES, EXAMPLES, corpus_or_skip

runner = CliRunner()
LAPLACE = EXAMPLES / "laplace2d.soda"


def _mapping(path: Path, **point: int) -> CgraMapping | None:
    program = load_program(path)
    program = bind_shape(program, {}, tuple(n or 48 for n in program.shape))
    try:
        return map_cgra(program, DesignPoint(**point), roofline_workers_of)
    except StencilmapError as exc:
        assert "cannot serve" in str(exc) or "vector" in str(exc), exc
        return None


@pytest.mark.parametrize(
    "path",
    EXAMPLE_FILES + corpus_or_skip(CORPUS_SODA + CORPUS_STENCILFLOW),
    ids=lambda p: p.name if p else "-",
)
def test_write_parse_write_is_identical(path: Path) -> None:
    m = _mapping(path)
    if m is None:
        return
    text = print_asm(m)
    parsed = parse_asm(text, path.name, TYPED_OPS)
    assert parsed == canonical(m)  # every field the simulator reads, the coefficients included
    assert print_asm(parsed) == text


@pytest.mark.parametrize(
    "name", ["laplace2d.soda", "heat3d.json", "jacobi2d.soda", "dag_listing1.json", "jacobi3d.soda"]
)
def test_the_parsed_text_simulates_as_the_mapping(name: str) -> None:
    """Linear chains, DAGs with copy boundaries, ``border: preserve`` with layers: same cycles, same values."""
    program = load_program(EXAMPLES / name)
    program = bind_shape(program, {}, tuple(n or 24 for n in program.shape))
    m = map_cgra(program, DesignPoint(), roofline_workers_of)
    values = make_inputs(program, {}, 0)
    device = load_device(m.device)
    a = simulate_cgra(m, values, device, 1.0)
    b = simulate_cgra(parse_asm(print_asm(m)), values, device, 1.0)
    assert a.status == b.status == "done" and a.cycles == b.cycles and a.fires == b.fires
    for k, v in a.outputs.items():
        np.testing.assert_array_equal(v, b.outputs[k])


def _write(tmp_path: Path, *args: str) -> Path:
    asm = tmp_path / "l.asm"
    shape = ["--shape", "32,20"]
    result = runner.invoke(
        analyze_cmd, [str(LAPLACE), "--arch", "cgra", "--workers", "3", *shape, "--asm", str(asm)]
    )
    assert result.exit_code == 0, result.output
    return asm


def _simulate(asm: Path, tmp_path: Path, *extra: str) -> tuple[int, str]:
    args = [
        str(LAPLACE),
        "--arch",
        "cgra",
        "--shape",
        "32,20",
        "--from-asm",
        str(asm),
        "--out",
        str(tmp_path),
    ]
    result = runner.invoke(simulate_cmd, [*args, *extra])
    return result.exit_code, result.output


def test_from_asm_runs_the_text_and_an_edited_coefficient_shows(tmp_path: Path) -> None:
    asm = _write(tmp_path)
    code, out = _simulate(asm, tmp_path, "--json")
    assert code == 0 and json.loads(out)["valid"] and json.loads(out)["cgra"]["workers"] == 3
    text = asm.read_text()
    # worker 1's MUL multiplies by 0.5 instead of 0.25: a third of the points (x ≡ 1 mod 3) go wrong
    edited = re.sub(r"^(MUL +L0\.w1\.k0\.mul .*ops=x,)0\.25 ", r"\g<1>0.5 ", text, count=1, flags=re.M)
    assert edited != text
    asm.write_text(edited)
    code, out = _simulate(asm, tmp_path, "--json")
    report = json.loads(out)
    assert code == 1 and not report["valid"]
    assert report["validation"]["w"]["mismatches"] == 180  # of 540: the points x ≡ 1 (mod 3)
    # written again from the parsed text, its comment says what runs (comments are regenerated)
    again = print_asm(parse_asm(edited))
    assert "ops=x,0.5 " in again and "# x * 0.5\n" in again and print_asm(parse_asm(again)) == again


def test_a_deeper_queue_runs_the_same_values(tmp_path: Path) -> None:
    """A hand-tuned queue depth (§V) is honoured: still valid, the peak may change, never the values."""
    asm = _write(tmp_path)
    text = asm.read_text()
    asm.write_text(text.replace("acc<-L0.w0.k0.mul[10]", "acc<-L0.w0.k0.mul[40]"))
    code, out = _simulate(asm, tmp_path, "--json")
    assert code == 0 and json.loads(out)["valid"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace(".program laplace2d", ".programme laplace2d"),
            ":5: unknown directive '.programme'",
        ),
        (
            lambda t: t.replace("acc<-L0.w0.k0.mul[10]", "acc<-L0.w0.k9.mul[10]"),
            "no PE is called 'L0.w0.k9.mul'",
        ),
        (lambda t: t.replace("ops=x,0.25 x<-L0.w1", "ops=x,zero x<-L0.w1"), "operand 'zero' is neither"),
        (lambda t: t.replace("rd.v.0.agen[8]", "rd.v.0.agen[0]"), "depth: must be ≥ 1"),
        (lambda t: t.replace("@1,3 ", "@1,1 "), "already holds PE"),
        (lambda t: t.replace("@1,3 ", "@99,3 "), "outside the 3×32 grid"),
        (lambda t: t.replace(".shape 1,32,20", ".shape 1,32"), ".shape: expected 3 comma-separated"),
        (lambda t: t.replace("strides=0,20,1", "strides=0,21,1"), "do not walk a C-order array"),
        (lambda t: t.replace(".box 0 0,1,1,31,1,19", ".box 0 0,1,1,31,1,99"), "outside the grid"),
        (lambda t: t.replace("MUL    L0.w1.k0.mul", "MULX   L0.w1.k0.mul"), "unknown op 'MULX'"),
        (lambda t: t.replace("worker=1 stage=0", "worker=7 stage=0", 1), "worker=7"),
        (lambda t: t.replace("x<-L0.w0.k3.flt[8]", "x<-L0.w0.k3.flt[8"), "keys come before"),
        (
            lambda t: "\n".join(t.splitlines()[:-1]) + "\n" + t.splitlines()[-1].split(" ")[0],
            "an instruction is OP",
        ),
        (lambda t: t.replace(".kind linear", ".kind lineal"), ".kind: expected"),
    ],
)
def test_malformed_text_is_one_file_line_error(tmp_path: Path, edit: object, message: str) -> None:
    asm = _write(tmp_path)
    text = asm.read_text()
    assert callable(edit)
    bad = edit(text)
    assert bad != text
    asm.write_text(bad)
    code, out = _simulate(asm, tmp_path)
    err = out.strip()
    assert code == 2 and "Traceback" not in out and "\n" not in err, out
    assert re.match(rf"error: {re.escape(str(asm))}:\d+: ", err), err
    assert message in err, err


def test_a_text_of_another_program_or_architecture_is_refused(tmp_path: Path) -> None:
    asm = _write(tmp_path)
    args = [str(LAPLACE), "--arch", "cgra", "--shape", "32,24", "--from-asm", str(asm)]
    result = runner.invoke(simulate_cmd, args)
    assert result.exit_code == 2 and "not a mapping of laplace2d: its grid is 32×20" in result.output
    result = runner.invoke(simulate_cmd, [str(LAPLACE), "--arch", "soda", "--from-asm", str(asm)])
    assert result.exit_code == 2 and "--arch soda has none to read" in result.output
    result = runner.invoke(
        simulate_cmd, [str(LAPLACE), "--arch", "cgra", "--from-asm", str(tmp_path / "no.asm")]
    )
    assert result.exit_code == 2 and "no such file" in result.output


def test_roofline_count_is_not_part_of_the_text() -> None:
    m = _mapping(EXAMPLES / "stencil2d_r12.json", workers=2)
    assert m is not None and m.roofline_workers != m.workers
    assert parse_asm(print_asm(m)) == replace(canonical(m), roofline_workers=2)


@pytest.mark.parametrize("name", ["x\\", 'q"); system(0); #', "1e5", "a b", "ünï", "%41", ""])
def test_any_name_round_trips_and_never_appears_raw(name: str) -> None:
    m = _mapping(LAPLACE)
    assert m is not None
    m = replace(m, program=name, device=name or "cgra-tia")
    text = print_asm(m)
    assert parse_asm(text) == canonical(m) and print_asm(parse_asm(text)) == text
    if name not in ("1e5", ""):
        assert name not in text.split("\n", 5)[5]  # the header's directives onwards
