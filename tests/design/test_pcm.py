"""The PCM builder (OpenCL FPGA platform): d chained PCMs, shift registers of (q − 1)N + p + 1 cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from stencilmap.analysis.windows import access_sets, linear_offsets, reuse_distance
from stencilmap.design.common import port_name
from stencilmap.design.pcm import shift_register_size
from stencilmap.design.registry import BuildConfig, build
from stencilmap.errors import StencilmapError
from stencilmap.program.expr import Ref
from stencilmap.program.ir import Input, Program, Stencil
from tests.analysis.helpers import total
from tests.sim.helpers import explain, run_design

from .helpers import JACOBI_M9, PROGRAM_FILES, bound, feeder, ident, modules, reads, soda, source


def window(p: int, q: int, n: int, rows: int = 10) -> Program:
    """A p×q box stencil (p cells along a row, q rows) over rows of n cells."""
    offsets = [(dy, dx) for dy in range(-(q // 2), q - q // 2) for dx in range(-(p // 2), p - p // 2)]
    st = Stencil("out", "float32", total([Ref("v", o) for o in offsets]))
    return Program(
        name="box",
        format="stencilflow",
        semantics="numpy",
        shape=(rows, n),
        inputs=(Input("v", "float32", (0, 1)),),
        stencils=(st,),
        outputs=("out",),
    )


def test_shift_register_of_a_3x3_window_on_64_wide_rows() -> None:
    d = build("pcm", window(3, 3, 64), BuildConfig(unroll=1))
    (sr,) = modules(d, "shift_register")
    assert sr.param("size") == 2 * 64 + 3 + 1 == 132  # OpenCL paper Fig. 6: (q − 1)N + p + 1
    assert sr.param("taps") == (-65, -64, -63, -1, 0, 1, 63, 64, 65)
    # P_cell lanes: D_r + P_cell, the paper's formula at P_cell = 1
    (sr4,) = modules(build("pcm", window(3, 3, 64), BuildConfig(unroll=4)), "shift_register")
    assert sr4.param("size") == 131 + 4 == shift_register_size(131, 4)


@pytest.mark.parametrize(("p", "q", "n"), [(3, 3, 64), (5, 5, 100), (3, 1, 7), (1, 3, 9)])
def test_size_formula(p: int, q: int, n: int) -> None:
    prog = window(p, q, n)
    d_r = reuse_distance(linear_offsets(prog, prog.stencils[0], "v", (10, n)))
    assert shift_register_size(d_r) == (q - 1) * n + p + 1


def test_pe_lanes_read_their_taps() -> None:
    p = soda(JACOBI_M9, (20, 9))
    d = build("pcm", p, BuildConfig(iterate=2))  # P_cell = 3 from the unroll factor
    assert dict(d.parameters)["d"] == 2 and dict(d.parameters)["P_cell"] == 3
    c = feeder(d, "pcm2.b.pe2", port_name("a", (-1, 0)))
    assert (c.src, c.src_port) == ("pcm2.b.a.sr", "tap-7")  # −M + lane 2
    assert source(d, "pcm2.b.a.sr", "lane1") == ("pcm1.b.pe1", "out")  # PCM 1's outputs feed PCM 2
    assert source(d, "pcm1.b.a.sr", "lane0") == ("read.a", "lane0")
    assert source(d, "write.b", "lane2") == ("pcm2.b.pe2", "out")


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=ident)
@pytest.mark.parametrize("p_cell", [1, 4])
def test_structure_on_every_program(path: Path, p_cell: int) -> None:
    p = bound(path)
    d = build("pcm", p, BuildConfig(unroll=p_cell))
    q = p.iterate
    assert d.count("pe") == p_cell * len(p.stencils) * q
    # one shift register per field a PCM reads (§3), however many of its stencils read it
    assert d.count("shift_register") == fields_read(p) * q <= reads(p) * q
    assert d.count("reader") == len(p.inputs) and d.count("writer") == len(p.outputs)
    shape = tuple(int(n or 0) for n in p.shape)
    for sr in modules(d, "shift_register"):
        readers = sr.param("readers", (sr.param("stencil"),))
        assert isinstance(readers, tuple) and readers[0] == sr.param("stencil")
        union: set[int] = set()
        for name in readers:
            st = p.stencil(str(name))
            assert st is not None and str(sr.param("field")) in access_sets(st)
            union |= set(linear_offsets(p, st, str(sr.param("field")), shape))
        taps = tuple(sorted(union))
        assert sr.param("taps") == taps and sr.param("size") == reuse_distance(taps) + p_cell
    for pe in modules(d, "pe"):
        st = p.stencil(str(pe.param("stencil")))
        assert st is not None
        for f, offsets in access_sets(st).items():
            for a in offsets:
                c = feeder(d, pe.name, port_name(f, a))
                assert d.module(c.src).kind == "shift_register" and c.src_port.startswith("tap")


def fields_read(program: Program) -> int:
    """Fields one pass reads (a field several stencils read counts once)."""
    return len({f for s in program.stencils for f in access_sets(s)})


def test_fdtd_pcm_shares_ez_among_its_three_readers() -> None:
    """2-D FDTD: hx, hy and ez all read Ez; each PCM holds one Ez register (9 registers, not 11) with the
    union of their taps, and ez, which fires a row after hy, gets the rest of its delay on its channel."""
    from dataclasses import replace

    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape
    from tests.conftest import EXAMPLES

    program = bind_shape(replace(load_program(EXAMPLES / "fdtd2d_iterate.json"), iterate=2), {}, (16, 32))
    d = build("pcm", program, BuildConfig(unroll=1))
    assert d.count("shift_register") == 2 * 9
    (ez,) = [
        m for m in modules(d, "shift_register") if m.name.startswith("pcm2.") and m.param("field") == "Ez"
    ]
    assert ez.param("readers") == ("hx", "hy", "ez") and ez.param("taps") == (0, 1, 32)
    assert ez.param("size") == 33 + 1  # Fig. 6: cells 0…32 of the union window plus the one read
    into = {c.dst: c.depth for c in d.channels if c.src == ez.name}
    assert into["pcm2.ez.pe0"] > into["pcm2.hx.pe0"] + 32  # ez waits for hy, a row behind Ez


def test_errors() -> None:
    two = soda(JACOBI_M9.replace("output float: b", "output double: b"), (20, 9))
    with pytest.raises(StencilmapError, match="cannot chain 3 iterations"):
        build("pcm", two, BuildConfig(iterate=3))
    with pytest.raises(StencilmapError, match="P_cell"):
        build("pcm", two, BuildConfig(unroll=-2))


def _fdtd_channel_slots(d: int) -> int:
    """Channel slots (tokens) of the PCM design of 2-D FDTD with d PCMs, P_cell = 1."""
    from dataclasses import replace

    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape
    from tests.conftest import EXAMPLES

    program = bind_shape(replace(load_program(EXAMPLES / "fdtd2d_iterate.json"), iterate=1), {}, (64, 256))
    design = build("pcm", program, BuildConfig(unroll=1, iterate=d))
    return sum(c.depth for c in design.channels)


def test_replayed_coefficients_are_relayed_pcm_to_pcm() -> None:
    """C1–C4 (fed by no output) reach PCM t through the relay of PCM t − 1: the channels grow linearly
    in d (what ``explore``'s affine resource model assumes), not as d² with one delay line per PCM."""
    one, two = _fdtd_channel_slots(1), _fdtd_channel_slots(2)
    step = two - one
    for d in (4, 8):
        assert _fdtd_channel_slots(d) <= one + (d - 1) * step * 1.05


SHARED_AHEAD = """kernel: k
input float: in0({x}, {y}, *)
local double:
  s0(0, 0, 0) = in0(0, 0, 0)
local double:
  s1(0, 0, 0) = s0(-1, 1, 1)
output double:
  s3(0, 0, 0) = in0(0, 0, 0) * s0(0, 0, 0)
output float:
  s5(0, 0, 0) = s1(0, 0, 0)
"""


@pytest.mark.parametrize("p_cell", [1, 2, 3])
@pytest.mark.parametrize("shape", [(1, 2, 4), (3, 4, 4), (5, 8, 8)])
def test_a_shared_register_delays_its_shorter_reader_s_other_inputs_too(
    shape: tuple[int, int, int], p_cell: int
) -> None:
    """Found by ``benchmarks/difffuzz.py``: s0's register is shared by s1 (whose window reaches a plane and a
    row ahead) and s3 (the centre); it emits once s1's window is in, so s3 gets s0 that many beats later than
    from a register of its own, and its other input (in0, sized for its own register) filled: deadlock."""

    program = soda(SHARED_AHEAD.format(x=shape[2], y=shape[1]), shape)
    design = build("pcm", program, BuildConfig(unroll=p_cell))
    run = run_design(program, design)
    assert run.validation.valid, explain(run)


LATE_CHAIN = """kernel: k
input float: in0({x}, {y}, *)
local float:
  s0(0, 0, 0) = in0(0, 0, 0)
local float:
  s1(0, 0, 0) = s0(0, 0, 0)
local float:
  s2(0, 0, 0) = s1(0, 0, 0)
output float:
  s3(0, 0, 0) = s1(-1, 0, 1) + s2(1, -1, 1) + in0(0, 0, 0)
"""


@pytest.mark.parametrize("p_cell", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 2, 5), (4, 4, 5), (8, 8, 8)])
def test_a_late_reader_makes_its_consumers_late_too(shape: tuple[int, int, int], p_cell: int) -> None:
    """Found by ``benchmarks/difffuzz.py`` (seed 11, case 173): s1's register is shared by s2 (the centre)
    and s3 (a plane ahead), so s2 gets s1 late; s2's output is then late for s3, whose in0 channel held
    only what its own timing needed (the fix of a shared register held the late reader's own other inputs,
    not its consumers'): deadlock."""

    program = soda(LATE_CHAIN.format(x=shape[2], y=shape[1]), shape)
    design = build("pcm", program, BuildConfig(unroll=p_cell))
    run = run_design(program, design)
    assert run.validation.valid, explain(run)


def test_replayed_input_read_alike_by_two_stencils_shares_its_relay() -> None:
    """Found by ``benchmarks/difffuzz.py`` (seed 11, case 150): in1, fed by no output, reaches s0 and s1 of
    PCM 2 with the same delay; the second edge made a relay of the same name ('duplicate module
    pcm2.in1.relay33.lane0', an internal error the fuzzer counted as a refusal). It reuses the relay."""

    text = (
        "kernel: k\ninput float: in0(16, *)\ninput float: in1(16, *)\n"
        "local float:\n  s0(0, 0) = in0(0, 0) + in1(0, 0)\nlocal float:\n  s1(0, 0) = in0(0, 0) - in1(0, 0)\n"
        "output float:\n  s2(0, 0) = s0(0, 1) * s1(0, 1)\niterate: 3\nfeedback: s2 -> in0\n"
    )
    program = soda(text, (8, 16))
    design = build("pcm", program, BuildConfig(unroll=1))
    assert [m.name for m in design.modules if m.name.endswith("relay33.lane0")] == ["pcm2.in1.relay33.lane0"]
    run = run_design(program, design)
    assert run.validation.valid, explain(run)


SHARED_TAIL = """{{"inputs": {{"in1": {{"data_type": "float64", "input_dims": ["j", "k"]}}}}, "outputs": ["s4"],
 "dimensions": {shape}, "program": {{
 "s0": {{"computation_string": "s0 = in1[j, k]", "boundary_conditions": {{"in1": {{"type": "copy"}}}},
         "data_type": "float64"}},
 "s2": {{"computation_string": "s2 = s0[i, j+3, k]", "data_type": "float64",
         "boundary_conditions": {{"s0": {{"type": "constant", "value": -0.25}}}}}},
 "s4": {{"computation_string": "s4 = s2[i+2, j+2, k+3] + s0[i+3, j, k+1]", "data_type": "float64",
         "boundary_conditions": {{"s0": {{"type": "constant", "value": 1.5}}, "s2": {{"type": "shrink"}}}}}}}}}}"""


@pytest.mark.parametrize("shape", [(2, 1, 4), (3, 1, 4), (4, 1, 4), (2, 1, 8), (8, 1, 8)])
def test_a_shared_register_s_later_reader_holds_the_stream_it_starts_after(
    tmp_path: Path, shape: tuple[int, int, int]
) -> None:
    """Found by ``benchmarks/difffuzz.py`` (seed 21, case 36): s0's register is shared by s2 and s4, which
    starts only once s2's whole stream is in (its reach 4X + 3 passes the grid). A register of s4's own
    would hold s0's stream, so the analysis caps s4's delay at the stream less its window (0 here); the
    shared one emits at s2's pace, and s4's tap channel must hold what comes before s4 starts: deadlock."""
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape

    (tmp_path / "p.json").write_text(SHARED_TAIL.format(shape=list(shape)))
    program = bind_shape(load_program(tmp_path / "p.json"), {}, None)
    design = build("pcm", program, BuildConfig(unroll=1))
    run = run_design(program, design)
    assert run.validation.valid, explain(run)


RELAYED_LATE = """{"inputs": {"in0": {"data_type": "float64", "input_dims": ["i", "j", "k"]},
            "in1": {"data_type": "float64", "input_dims": ["j", "k"]}},
 "outputs": ["s1", "s4"], "dimensions": [2, 2, 3], "iterate": 2, "feedback": {"s4": "in0"}, "program": {
 "s0": {"computation_string": "t = in0[i, j, k]; s0 = in1[j, k]", "data_type": "float64",
        "boundary_conditions": {"in0": {"type": "shrink"}, "in1": {"type": "copy"}}},
 "s1": {"computation_string": "s1 = s0[i+3, j, k-3] * in1[j, k]", "data_type": "float64",
        "boundary_conditions": {"in1": {"type": "shrink"}, "s0": {"type": "shrink"}}},
 "s2": {"computation_string": "s2 = s0[i, j, k]", "data_type": "float64",
        "boundary_conditions": {"s0": {"type": "constant", "value": -0.25}}},
 "s4": {"computation_string": "s4 = s2[i, j, k]", "data_type": "float64",
        "boundary_conditions": {"s2": {"type": "shrink"}}}}}"""


def test_a_relay_holds_what_the_earlier_pcm_s_consumer_takes_first(tmp_path: Path) -> None:
    """Found by ``benchmarks/difffuzz.py`` (seed 21, case 36): in1 (fed by no output) reaches s0 of PCM 2
    through relay9 and s1 of PCM 2, which starts 14 cycles later (a plane ahead of s0), through relay11
    continued from relay9 (s0 reads in0, fed by PCM 1, only in a temporary: it still waits for it). The continuation held the difference of the two edges' capped delays (11 − 9);
    on a 12-point grid s0 takes all of in1 before s1 starts, so the line must hold the stream (what
    ``analysis.delays.relay_delay`` says, as the StencilFlow builder uses): deadlock."""
    from stencilmap.program import load_program
    from stencilmap.program.data import bind_shape

    (tmp_path / "p.json").write_text(RELAYED_LATE)
    program = bind_shape(load_program(tmp_path / "p.json"), {}, None)
    design = build("pcm", program, BuildConfig(unroll=1))
    assert {m.name for m in design.modules if ".relay" in m.name and "bcast" not in m.name} == {
        "pcm2.in1.relay9.lane0",
        "pcm2.in1.relay11.lane0",
    }
    run = run_design(program, design)
    assert run.validation.valid, explain(run)
