"""The CGRA worker mapping (CGRA §III, §IV, §VI): workers, MUL/MAC chains, filters, buffering, strips,
layers, placement on the grid, the assembly and the DFG, refusals."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from stencilmap.codegen.cgra import COLOURS, assembly, cgra_dot
from stencilmap.design.cgra.mapping import CgraMapping, cgra_json, map_cgra
from stencilmap.design.cgra.plan import queue_depths, split_strips
from stencilmap.design.cgra.terms import Term, linear_stencil
from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError
from stencilmap.model.cgra import roofline_workers_of
from stencilmap.program import Program, load_program
from stencilmap.program.data import bind_shape
from stencilmap.program.soda import parse_soda
from tests.conftest import EXAMPLES

S1D = EXAMPLES / "stencil1d_r8.json"
S2D = EXAMPLES / "stencil2d_r12.json"


def program(path: Path, shape: tuple[int, ...] | None = None, iterate: int = 1) -> Program:
    p = bind_shape(load_program(path), {}, shape)
    return replace(p, iterate=iterate)


def mapping(path: Path, shape: tuple[int, ...] | None = None, iterate: int = 1, **kw: int) -> CgraMapping:
    return map_cgra(program(path, shape, iterate), BuildConfig(**kw), roofline_workers_of)  # type: ignore[arg-type]


def soda(body: str, input_type: str = "float", border: str = "ignore") -> Program:
    text = (
        "kernel: k\nburst width: 512\nunroll factor: 1\n"
        f"input dram 0 {input_type}: a(32, *)\noutput dram 1 {input_type}:\n  b(0, 0) = {body}\n"
        f"iterate: 1\nborder: {border}\ncluster: none\n"
    )
    return bind_shape(parse_soda(text, "k.soda"), {}, (24, 32))


def test_paper_1d_six_workers_of_one_mul_and_sixteen_macs() -> None:
    """§VI: r = 8 on 194,400 doubles → 6 workers, each 1 MUL + 16 MACs, each fed through a filter."""
    m = mapping(S1D)
    ops = m.op_counts()
    assert m.workers == 6 and m.roofline_workers == 6
    assert (ops["MUL"], ops["MAC"], ops["FILTER"]) == (6, 6 * 16, 6 * 17)
    assert (ops["AGEN"], ops["LOAD"], ops["STORE"], ops["COUNT"], ops["DONE"]) == (6, 6, 6, 6, 1)
    assert len(m.strips) == 1 and m.layers == 1


def test_paper_2d_five_workers_of_one_mul_and_48_macs() -> None:
    """§VI: r = 12 on 960 × 449 → 5 workers of 1 MUL + 48 MACs (the y chain adds onto the x chain)."""
    m = mapping(S2D)
    ops = m.op_counts()
    assert m.workers == 5 and (ops["MUL"], ops["MAC"]) == (5, 5 * 48)
    assert m.grid[1] == 32 and m.grid[0] <= 32


def test_chain_takes_products_in_arrival_order_fed_by_the_right_reader() -> None:
    """Fig. 5 / §III-B: MUL first, then MACs in row-major offset order; the MAC of offset dx of worker c
    listens to reader (c + dx) mod w; a y product to the reader owning the column (dx = 0: reader c)."""
    m = mapping(EXAMPLES / "laplace2d.soda", (20, 30), workers=3)
    into = {q.dst: q for q in m.queues if q.port == "x"}
    for p in m.pes:
        if p.op in ("MUL", "MAC"):
            flt = into[p.name].src
            reader = into[flt].src
            assert reader == f"rd.v.{(p.worker + p.offset[2]) % 3}.load"
    offsets = [p.offset for p in m.pes if p.op in ("MUL", "MAC") and p.worker == 0]
    assert offsets == sorted(offsets) and offsets[0] == (0, -1, 0)


def test_row_changes_buffer_a_row_per_worker_in_the_accumulator_queue() -> None:
    """§III-B's mandatory buffering: a MAC whose operand is dy rows below its predecessor's holds ≈ dy
    rows of the worker's partial sums; over the chain, about 2·r_y·x_dim words in all."""
    width, w = 900, 3
    terms = (Term("u", (0, -1, 0), 1.0), Term("u", (0, 0, 0), 1.0), Term("u", (0, 1, 0), 1.0))
    depths = queue_depths(terms, width, 100, w, 4, 8)
    assert depths[1][1] >= width // w and depths[2][1] >= width // w
    m = mapping(S2D)
    assert m.buffered_words >= 2 * 12 * 960 * 0.95
    assert m.buffered_words <= m.storage_words


def test_strips_when_the_buffering_exceeds_the_scratchpad() -> None:
    """§III-B / Fig. 10: a 3,000-wide grid needs 2·12·3000 = 72,000 words > 32,768: strips, each fitting."""
    m = mapping(S2D, (60, 3000))
    assert len(m.strips) >= 3 and m.buffered_words <= m.storage_words
    assert m.strips[0][0] == 12 and m.strips[-1][1] == 3000 - 12
    assert all(a[1] == b[0] for a, b in zip(m.strips, m.strips[1:], strict=False))


def test_strip_option_cuts_the_columns() -> None:
    m = mapping(S2D, (60, 300), strip=100)
    assert m.strips == split_strips(12, 288, 100) and len(m.strips) == 3
    with pytest.raises(StencilmapError, match="--strip must be"):
        mapping(S2D, (60, 300), strip=0)


def test_iterate_chains_layers_without_readers_between() -> None:
    """§IV: q layers of compute workers; layer t + 1's filters listen to layer t's last PEs."""
    m = mapping(EXAMPLES / "laplace2d.soda", (40, 40), iterate=3, workers=2)
    assert m.layers == 3 and m.count("MUL") == 3 * 2 and m.count("LOAD") == 2
    sources = {q.src for q in m.queues if q.dst.startswith("L1.") and q.dst.endswith(".flt")}
    assert sources == {"L0.w0.k3.mac", "L0.w1.k3.mac"}
    assert m.boxes[0][0][2:4] == (1, 39) and m.boxes[2][0][2:4] == (3, 37)


def test_workers_option_and_fit() -> None:
    assert mapping(S1D, (5000,), workers=2).workers == 2
    with pytest.raises(StencilmapError, match=r"need .* MACs"):
        mapping(S1D, (5000,), workers=20)  # 20 × 17 > 256 MACs
    with pytest.raises(StencilmapError, match="--workers must be"):
        mapping(S1D, (5000,), workers=0)


def test_placement_one_pe_per_grid_place_blocks_share_reader_columns() -> None:
    """Fig. 4: every PE on its own place inside the grid; within a product's block, the column says
    which reader the pair listens to."""
    m = mapping(S2D)
    places = Counter((p.row, p.col) for p in m.pes)
    assert max(places.values()) == 1
    assert all(0 <= p.row < m.grid[0] and 0 <= p.col < m.grid[1] for p in m.pes)
    block = 2 * m.workers
    for p in m.pes:
        if p.op == "FILTER":
            assert (p.col % block) // 2 == (p.worker + p.offset[2]) % m.workers


def test_assembly_one_line_per_pe_and_dot_coloured_by_op() -> None:
    m = mapping(EXAMPLES / "laplace2d.soda", (16, 20), workers=3)
    text = assembly(m)
    body = [line for line in text.splitlines() if not line.startswith(("#", "."))]
    assert len(body) == len(m.pes)
    mac = next(line for line in body if line.startswith("MAC "))
    assert "acc<-" in mac and "x<-" in mac and "* 0.25 + acc" in mac
    flt = next(line for line in body if line.startswith("FILTER "))
    assert "per row 0^" in flt and "1^" in flt
    dot = cgra_dot(m)
    assert dot.count("fillcolor=orange") == m.count("MUL") and dot.count("fillcolor=red") == m.count("MAC")
    assert COLOURS["MUL"] == "orange" and dot.count(" -> ") == len(m.queues)
    assert dot.count("{") == dot.count("}") == 1  # one graph, closed
    if shutil.which("dot"):  # Graphviz reads it
        subprocess.run(["dot", "-Tsvg"], input=dot, text=True, capture_output=True, check=True)
    j = cgra_json(m)
    assert j["workers"] == 3 and j["pes"] == m.op_counts() and j["grid"] == list(m.grid)


def test_builder_makes_a_verified_design() -> None:
    d = build("cgra", program(S1D, (3000,)), BuildConfig(), roofline=roofline_workers_of)
    assert d.arch == "cgra" and d.count("cgra_pe") == len(mapping(S1D, (3000,)).pes)


def test_linear_form_folds_constants_and_local_stages() -> None:
    lin = linear_stencil(soda("0.25f * (a(0, -1) + a(1, 0)) - 2.0f * a(0, 0) + 1.0f"))
    assert lin.constant == 1.0
    assert [(t.offset, t.coeff) for t in lin.terms] == [
        ((0, -1, 0), 0.25),
        ((0, 0, 0), -2.0),
        ((0, 0, 1), 0.25),
    ]


@pytest.mark.parametrize(
    ("body", "input_type", "border", "why"),
    [
        ("a(0, 0) + a(40, 0)", "float", "ignore", "leave no point"),
        ("a(0, 0) + sqrt(2.0f)", "float", "ignore", "constant sub-expression (SQRT)"),
    ],
)
def test_refusals_say_why_in_one_line(body: str, input_type: str, border: str, why: str) -> None:
    with pytest.raises(StencilmapError, match="cannot serve") as info:
        map_cgra(soda(body, input_type, border), BuildConfig(), roofline_workers_of)
    assert why in str(info.value) and "\n" not in str(info.value)


def stencilflow(tmp: Path, expr: str, boundary: str = '{"type": "shrink"}') -> Program:
    text = (
        '{"inputs": {"a": {"data": "random:0-1", "data_type": "float64"}}, "outputs": ["b"], '
        f'"dimensions": [24, 32], "program": {{"b": {{"computation_string": "b = {expr}", '
        f'"boundary_conditions": {{"a": {boundary}}}, "data_type": "float64"}}}}}}'
    )
    (tmp / "p.json").write_text(text)
    return bind_shape(load_program(tmp / "p.json"), {}, None)


def test_integer_programs_map_with_their_typing() -> None:
    """int16 data: operands converted and results rounded (wrapped) as C's typing says, per PE."""
    m = map_cgra(soda("(a(0, 0) & a(1, 0)) / 3", "int16"), BuildConfig(workers=2), roofline_workers_of)
    band = next(pe for pe in m.pes if pe.op == "BAND")
    div = next(pe for pe in m.pes if pe.op == "IDIV")  # C integer division: truncating
    assert (band.dtype, band.cast, div.dtype) == ("int32", "int32", "int32")
    assert m.count("ROUND") == 2 and next(pe for pe in m.pes if pe.op == "ROUND").dtype == "int16"


def test_non_linear_maps_one_operation_per_pe(tmp_path: Path) -> None:
    """A ternary, a min, a sqrt and a product of two reads: one PE per operation, a FILTER per read."""
    p = stencilflow(tmp_path, "sqrt(a[j, k+1]) if a[j, k] > 0.5 else min(a[j+1, k], a[j, k-1] * a[j-1, k])")
    m = map_cgra(p, BuildConfig(workers=2), roofline_workers_of)
    assert m.linear is None and [s.name for s in m.stages] == ["b"]
    ops = m.op_counts()
    assert (ops["GT"], ops["SQRT"], ops["MIN"], ops["MUL"], ops["SEL"], ops["FILTER"]) == (2, 2, 2, 2, 2, 10)
    sel = next(pe for pe in m.pes if pe.op == "SEL")
    assert sel.operands == ("a0", "a1", "a2") and len(sel.inputs) == 3
    gt = next(pe for pe in m.pes if pe.op == "GT")
    assert gt.operands == ("a0", 0.5)


def test_several_stages_feed_each_other_through_worker_streams() -> None:
    """A local stencil's workers feed the output's filters directly (no memory between)."""
    text = (
        "kernel: k\nburst width: 512\nunroll factor: 1\ninput dram 0 float: a(32, *)\n"
        "local float: t(0, 0) = a(0, 0) * a(1, 0)\noutput dram 1 float:\n  b(0, 0) = t(0, -1) + t(0, 1)\n"
        "iterate: 1\nborder: ignore\ncluster: none\n"
    )
    m = map_cgra(
        bind_shape(parse_soda(text, "k.soda"), {}, (20, 32)), BuildConfig(workers=3), roofline_workers_of
    )
    assert [s.name for s in m.stages] == ["t", "b"] and m.count("LOAD") == 3
    fed = {q.src for q in m.queues if ".b.w" in q.dst and q.dst.endswith(".flt")}
    assert fed and all(".t.w" in src for src in fed)


def test_only_cgra_devices() -> None:
    with pytest.raises(StencilmapError, match="not a CGRA of workers"):
        map_cgra(program(S1D, (3000,)), BuildConfig(device="ku060"), roofline_workers_of)


def test_the_roofline_workers_are_the_callers_input() -> None:
    """design.cgra calls no model: the caller's count (model.cgra.roofline_workers) maps the same mapping
    the registry's no-choice build does, and another count maps another one."""
    from stencilmap.model.cgra import roofline_workers

    prog = program(S1D, (3000,))
    chosen = roofline_workers(prog, BuildConfig())
    assert map_cgra(prog, BuildConfig(), chosen) == map_cgra(prog, BuildConfig(), roofline_workers_of)
    fewer = map_cgra(prog, BuildConfig(), 1)
    assert fewer.workers == fewer.roofline_workers == 1 < chosen


@pytest.mark.parametrize(
    "constant",
    ["(5 * 65535)", "(7 // 2)", "(-7 // 2)", "(7.5 % 2.0)", "(-7.5 % 2.0)", "(7.5 // 2.0)", "(1.0 / 0.0)"],
)
def test_constant_sub_expressions_fold_as_the_reference_computes_them(tmp_path: Path, constant: str) -> None:
    """Found by ``benchmarks/difffuzz.py``: the folder evaluated ``a ** b`` for every float and weak-typed
    operation (the dict's default, computed eagerly): ``5 * 65535`` overflowed, ``7 // 2`` gave 49 and
    ``7.5 % 2.0`` gave 56.25. The folded immediate must be the reference's value."""
    from stencilmap.backends.reference import run_reference
    from stencilmap.codegen.registry import emit
    from stencilmap.jobs.codegen_checks import run_here
    from stencilmap.program.data import make_inputs

    p = stencilflow(tmp_path, f"min(a[j, k], a[j, k+1]) * {constant}")  # not linear: the PE graph
    design = build("cgra", p, BuildConfig(), roofline=roofline_workers_of)
    values = make_inputs(p, {}, 0)
    ran = run_here(emit("cgra", design, p, values), design, p, values)
    ref = run_reference(p, values)
    assert not isinstance(ran, str) and ran.status == "done"
    got = ran.outputs["b"][ref.defined["b"]]
    assert got.tolist() == ref["b"][ref.defined["b"]].tolist()
