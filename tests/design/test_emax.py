"""The EMAX library's mapping (EMAX §3.3, §4.3–§4.6): rows, packing, loads shared, mnemonics, bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from stencilmap.cli.analyze import analyze_cmd
from stencilmap.codegen.emax import mnemonics
from stencilmap.design.emax import EmaxMapping, map_emax, origins, verify_mapping
from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError
from stencilmap.model import emax as model
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.conftest import EXAMPLES

runner = CliRunner()
STARS = {1: "jacobi3d.soda", 2: "star3d_degree2.soda", 3: "star3d_degree3.soda"}


def mapping(degree: int, p: int | None, shape: tuple[int, ...] = (16, 24, 40)) -> EmaxMapping:
    program = bind_shape(load_program(EXAMPLES / STARS[degree]), {}, shape)
    return map_emax(program, BuildConfig(unroll=p))


def paper_rows(d: int, p: int) -> int:
    """§4.6, written out independently of ``model.emax.rows``."""
    if d == 1:
        return 8 + 4 * ((p // 2) + (p % 2) - 1) - (p % 2)
    assert d == 3
    return 11 * p


@pytest.mark.parametrize(("degree", "ps"), [(1, range(1, 9)), (3, range(1, 6))])
def test_placed_rows_are_the_papers(degree: int, ps: range) -> None:
    """The rows the placement actually occupies equal §4.6's formulas (7, 8, 11, 12, … and 11p)."""
    for p in ps:
        m = mapping(degree, p)
        assert max(i.row for i in m.instructions) + 1 == m.rows == paper_rows(degree, p)


def test_degree_two_by_the_same_construction() -> None:
    """Degree 2: a 9 × 6 pattern; two do not fit 8 columns side by side, so patterns stack: 9p rows."""
    assert [mapping(2, p).rows for p in (1, 2, 3, 4)] == [9, 18, 27, 36]
    assert mapping(2, 1).columns == 6
    assert (mapping(1, 1).rows, mapping(1, 1).columns) == (7, 4)  # Fig. 11 (1): seven rows
    assert (mapping(1, 2).rows, mapping(1, 2).columns) == (8, 8)  # Fig. 11 (2): mirrored beside it
    assert (mapping(3, 1).rows, mapping(3, 1).columns) == (11, 8)


def test_mirrored_pairs_and_stacking() -> None:
    """Degree 1 on 8 columns: plane 1 mirrored one row lower, pairs 4 rows apart (Fig. 11 (3))."""
    assert origins(1, 4, 8) == [(0, 0, False), (1, 4, True), (4, 0, False), (5, 4, True)]
    assert origins(3, 2, 8) == [(0, 0, False), (11, 0, False)]
    assert origins(1, 2, 7) == [(0, 0, False), (7, 0, False)]  # 7 columns: no room to mirror


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("p", [1, 2, 4])
def test_loads_are_shared_in_z_and_reused_in_y(degree: int, p: int) -> None:
    """Each plane loads its Y column (2d + 1 streams, dist = 1); the 2d neighbour planes beyond the
    group are loaded once; inside the group a plane's Z neighbours are the other planes' centres."""
    m = mapping(degree, p)
    loads = m.loads()
    y_loads = [i for i in loads if i.dist == 1]
    z_loads = [i for i in loads if i.dist == 0]
    assert len(y_loads) == p * (2 * degree + 1)
    assert sorted(i.dz for i in z_loads) == [*range(-degree, 0), *range(p, p + degree)]
    assert len({i.dst for i in loads}) == len(loads) == p * (2 * degree + 1) + 2 * degree  # (1) without halo
    # per step only the newest Y stream of each plane is new: 2d + p streams (formula (2))
    assert len([i for i in y_loads if i.dy == degree]) + len(z_loads) == model.next_streams(degree, p)
    fifo = [i for i in m.instructions if i.op == "FIFO"]
    assert sorted(i.dx for i in fifo if i.plane == 0) == [*range(-degree, 0), *range(1, degree + 1)]
    assert len({(i.row, i.plane) for i in fifo}) == p  # the X taps of a plane share one row


def test_no_pe_unit_is_used_twice_and_registers_flow() -> None:
    m = mapping(1, 6)
    assert len({(i.row, i.col, i.unit) for i in m.instructions}) == len(m.instructions)
    clash = m.instructions[0]
    bad = EmaxMapping(**{**_fields(m), "instructions": (*m.instructions, clash)})
    with pytest.raises(StencilmapError, match="twice"):
        verify_mapping(bad)


def _fields(m: EmaxMapping) -> dict[str, object]:
    return {k: getattr(m, k) for k in m.__dataclass_fields__}


def test_the_most_mappings_that_fit_the_rows() -> None:
    big = (64, 8, 16)
    assert mapping(1, None, big).p == 30 and mapping(1, None, big).rows == 64  # 64-row device
    assert mapping(3, None, big).p == 5 and mapping(3, None, big).rows == 55
    assert mapping(1, None, (4, 24, 40)).p == 4  # no more than the Z planes


def test_x_split_when_a_stream_exceeds_the_lmm() -> None:
    m = mapping(1, 2, (4, 8, 4100))  # 4102 floats > 2048 words of 8 KB
    assert m.x_chunks == 3 and m.chunk == 1367 and m.stream_words * 4 <= 8192


def test_design_is_verified_and_registered() -> None:
    program = bind_shape(load_program(EXAMPLES / STARS[2]), {}, (8, 8, 16))
    design = build("emax", program, BuildConfig(unroll=2))
    assert design.arch == "emax" and dict(design.parameters)["rows"] == 18
    assert design.kinds()["reader"] == 1 and design.kinds()["writer"] == 1


# ---------------------------------------------------------------------------------------- CLI


def test_analyze_json_and_asm(tmp_path: Path) -> None:
    asm = tmp_path / "fd6.asm"
    args = [str(EXAMPLES / STARS[3]), "--arch", "emax", "--unroll", "2", "--shape", "16,32,64"]
    result = runner.invoke(analyze_cmd, [*args, "--asm", str(asm), "--json"])
    assert result.exit_code == 0, result.output
    emax = json.loads(result.stdout)["emax"]
    assert emax == {
        "degree": 3, "p": 2, "rows": 22, "columns": 8, "dist": 1, "x_chunks": 1,
        "instructions": emax["instructions"], "lmm_streams": model.mapped_streams(3, 2, 32, 16, 1),
    }  # fmt: skip
    lines = asm.read_text().splitlines()
    body = [ln for ln in lines if not ln.startswith("#")]
    assert len(body) == emax["instructions"]
    ops = Counter(ln.split()[3] for ln in body)
    assert ops["LD"] == 2 * 7 + 6 and ops["FIFO"] == 2 * 6 and ops["ST"] == 2
    first = body[0].split()
    assert first[:6] == ["0", "0", "EAG", "LD", "A[z][y-3]", "<-"] and first[-1] == "1"  # dist 1


def test_mnemonic_lines_are_deterministic() -> None:
    text = mnemonics(mapping(1, 1, (8, 8, 16)))
    assert text == mnemonics(mapping(1, 1, (8, 8, 16)))
    assert "    1   1 EX1  FIFO  p0.x-1 <- A[z][y] @x-1" in text
    assert "    6   2 EAG  ST    p0.out <- lmm[0:+16] <- p0.sum" in text


def _write(tmp_path: Path, expr: str, dtype: str = "float") -> Path:
    path = tmp_path / "k.soda"
    path.write_text(
        f"kernel: k\nburst width: 512\nunroll factor: 1\ninput dram 0 {dtype}: v(16, 16, *)\n"
        f"output dram 1 {dtype}:\n  w(0, 0, 0) = {expr}\niterate: 1\nborder: ignore\ncluster: none\n"
    )
    return path


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("v(0, 0, 0) + v(1, 0, 0)", "asymmetric"),
        ("v(1, 1, 0) + v(-1, -1, 0)", "off the axes"),
        ("v(1, 0, 0) * v(-1, 0, 0)", "constant-coefficient"),
        ("v(4, 0, 0) + v(-4, 0, 0)", "PE columns"),
        ("2.0f * v(0, 0, 0)", "degree 0"),
    ],
)
def test_programs_the_mapping_cannot_serve(tmp_path: Path, expr: str, reason: str) -> None:
    result = runner.invoke(analyze_cmd, [str(_write(tmp_path, expr)), "--arch", "emax", "--shape", "8,8,8"])
    assert result.exit_code == 2 and reason in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["dag_listing1.json", "--shape", "8,16,16"], "stencils"),
        (["star3d_degree3.soda", "--unroll", "6", "--shape", "8,16,16"], "66 rows"),
        (["jacobi3d.soda", "--unroll", "9", "--shape", "8,16,16"], "Z planes"),
        (["jacobi3d.soda", "--iterate", "2", "--shape", "8,16,16"], "one time step"),
        (["jacobi2d.soda", "--iterate", "1", "--shape", "16,16"], "border"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], reason: str) -> None:
    result = runner.invoke(analyze_cmd, [str(EXAMPLES / args[0]), *args[1:], "--arch", "emax"])
    assert result.exit_code == 2 and reason in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_asm_needs_the_emax_arch(tmp_path: Path) -> None:
    result = runner.invoke(analyze_cmd, [str(EXAMPLES / "laplace2d.soda"), "--asm", str(tmp_path / "a")])
    assert result.exit_code == 2 and "--arch emax" in result.output


def test_two_dimensional_stars_map_as_one_plane() -> None:
    program = bind_shape(load_program(EXAMPLES / "laplace2d.soda"), {}, (16, 32))
    m = map_emax(program, BuildConfig())
    assert m.shape == (1, 16, 32) and m.degree == 1 and m.p == 1 and m.rows == 7
