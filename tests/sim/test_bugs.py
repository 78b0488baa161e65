"""Simulator defects found so far, each as the smallest reproduction, kept as regression tests (all fixed;
a new open one goes here as a strict xfail, so its fix shows up as an unexpected pass)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest

from stencilmap.backends.reference import run_reference
from stencilmap.design.registry import BuildConfig
from stencilmap.errors import StencilmapError
from stencilmap.program.data import make_inputs
from stencilmap.program.expr import Binary, Call, Const, Expr, Ref
from stencilmap.program.ir import Boundary, Input, Program, Stencil
from stencilmap.program.verify import verify
from stencilmap.sim import simulate
from tests.sim.helpers import built, explain, run_design, simulated, soda
from tests.sim.test_timing import latency

SHRINK = Boundary("shrink")


def program_1d(
    stencils: tuple[Stencil, ...],
    n: int,
    dtype: str = "float32",
    border: Literal["ignore", "preserve"] = "ignore",
) -> Program:
    p = Program(
        name="repro", format="stencilflow", semantics="numpy", shape=(n,), inputs=(Input("in0", dtype, (0,)),),
        stencils=stencils, outputs=(stencils[-1].name,), iterate=1, border=border,
    )  # fmt: skip
    verify(p)
    return p


def test_soda_middle_tap_owing_placeholders_finishes() -> None:
    """Fixed. Taps −9, −7 and +9 (C order) on an 8 × 8 grid, k = 1. The middle tap −7 owes the PE 7
    placeholders before element 0; its output link (depth 2) fills while the PE waits for tap +9, and
    ``kernel._tap`` used to pop element 0 and forward it along ``next`` without ever sending it to the PE
    (only the *last* tap was kept from passing elements down while ``want < 0``): deadlock at cycle 35.
    Every SODA deadlock of the corpus had this shape (denoise3d, erosion, heat3d, jacobi3d, seidel2d, ...)."""
    program = soda(
        "kernel: t\ninput float: a(8, *)\noutput float: b(0, 0) = a(-1, -1) + a(1, -1) + a(1, 1)\n", (8, 8)
    )
    run = simulated(program, "soda", BuildConfig(unroll=1))
    assert run.result.status == "done" and run.validation.valid, explain(run)


def test_pe_lane_group_sustains_one_beat_per_cycle() -> None:
    """Fixed. SODA copy with k = 2 (λ = 0, so the PEs hold a beat 1 cycle): L + N/2 = 5 + 256 cycles; it
    used to take N + 5 = 517. ``kernel._pe``: the group leader checked ``_pe_ready`` of every lane before
    the other lanes retired this cycle's matured result (they retired when their own ``_pe`` ran, later in
    module order), so a lane whose pipeline was full blocked the whole group: it fired λ' times in every
    λ' + 1 cycles (II = 2 at λ' = 1, 1.25 at λ' = 4). SODA and PCM with k ≥ 2."""
    program, design = built(soda("kernel: c\ninput float: a(32, *)\noutput float: b(0, 0) = a(0, 0)\n", (16, 32)),
                            "soda", BuildConfig(unroll=2))  # fmt: skip
    run = run_design(program, design)
    assert run.validation.valid
    assert run.result.cycles == latency(design) + 512 // 2


def test_preserve_with_constant_or_copy_boundaries_simulates_where_the_kept_region_is_a_box() -> None:
    """``border: preserve`` with a constant boundary: s0 = in0[-1] + in0[0] + in0[1] on 6 points. The
    simulator keeps the input outside the box where the pass's output is defined; it used to refuse every
    constant/copy boundary (the box was the whole window's). Only shrink reads shrink the box
    (``analysis.halos.defined_halo``): here it is the whole grid, simulated bit-exact. A constant read away
    from the point of a field not defined everywhere (s1 = s0[1], s0 shrunk) leaves an undefined band
    inside the grid, not a box: still refused with a clear error instead of computing something else."""
    expr = Binary("+", Binary("+", Ref("in0", (-1,)), Ref("in0", (0,))), Ref("in0", (1,)))
    stencil = Stencil("s0", "float32", expr, (), (("in0", Boundary("constant", 1.5)),))
    run = simulated(program_1d((stencil,), 6, border="preserve"), "stencilflow")
    assert run.validation.valid and run.validation.bit_exact, explain(run)
    shrunk = Stencil("s0", "float32", expr, (), (("in0", Boundary("shrink")),))
    after = Stencil("s1", "float32", Ref("s0", (1,)), (), (("s0", Boundary("constant", 1.5)),))
    with pytest.raises(StencilmapError, match="border: preserve is not supported where a constant or copy"):
        simulated(program_1d((shrunk, after), 6, border="preserve"), "stencilflow")


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_backward_only_window_next_to_a_broadcast_sibling(arch: str) -> None:
    """s0 = in0[i − 1, j] (a window wholly behind the point), s2 = in0 + s0 on a 4 × 16 grid, k = W = 1:
    deadlock at cycle 15–19 under every builder. The analysis assumes a unit never runs ahead of its input
    streams (reach r = max(0, f), ``analysis.timing``), so nothing is buffered for f < 0; but the
    simulator's tap and window buffer emit their |f| = 16 placeholders before they need element 0, so s0
    runs 16 elements ahead of s2's direct in0 input. The only room for that skew is s0's window storage
    (StencilFlow ``internal_buffer`` size 0, PCM ``shift_register`` size 2, SODA: one tap, no FIFO) and the
    links, so in0's broadcast stalls and everything waits. With the centre also read (in0[i − 1, j] +
    in0[i, j]) the window spans [f, 0], gets |f| + 1 elements, and it runs. The deadlock report misses the
    culprit: a window buffer waiting on its own capacity waits on no channel, so it is not listed and
    ``cycle_of_waits`` is empty (StencilFlow, PCM)."""
    s0 = Stencil("s0", "float32", Ref("in0", (-1, 0)), (), (("in0", SHRINK),))
    expr = Binary("+", Ref("in0", (0, 0)), Ref("s0", (0, 0)))
    s2 = Stencil("s2", "float32", expr, (), (("in0", SHRINK), ("s0", SHRINK)))
    p = Program(
        name="back", format="soda", semantics="c", shape=(4, 16), inputs=(Input("in0", "float32", (0, 1)),),
        stencils=(s0, s2), outputs=("s2",),
    )  # fmt: skip
    verify(p)
    run = simulated(p, arch, BuildConfig(unroll=1) if arch != "stencilflow" else BuildConfig(vector=1))
    assert run.result.status == "done", explain(run)


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_integer_products_wrap_exactly(arch: str) -> None:
    """int32 s0 = in0 * in0 with in0 = 123456789 and 2³¹ − 1: the reference wraps the exact product
    (-1757895751 and 1); the simulator multiplies in float64, which keeps only 53 bits of the 2⁵⁴-sized
    product, and wraps that (-1757895752 and 0). The project's semantics say integers wrap (C's signed
    overflow is undefined); any product beyond 2⁵³ is affected, int64 fields for most products."""
    expr = Binary("*", Ref("in0", (0,)), Ref("in0", (0,)))
    p = Program(
        name="mul", format="soda", semantics="c", shape=(4,), inputs=(Input("in0", "int32", (0,)),),
        stencils=(Stencil("s0", "int32", expr, (), (("in0", SHRINK),)),), outputs=("s0",),
    )  # fmt: skip
    verify(p)
    program, design = built(p, arch)
    values = {"in0": np.array([123456789, 3, 2**31 - 1, 46341], np.int32)}
    result = simulate(program, design, values)
    expected = run_reference(program, values).outputs["s0"]
    assert np.array_equal(result.outputs["s0"], expected), (result.outputs["s0"], expected)


def test_out_of_range_float_to_int_conversion() -> None:
    """C semantics, int32 s0 = in0 * 1e8f: 58e8 does not fit int32. C leaves the conversion undefined;
    the reference (NumPy on x86) gives INT_MIN, the simulator wraps modulo 2³² (1505032704). The project
    should state one rule (ARCHITECTURE.md says only "floats truncate toward zero")."""
    expr = Binary("*", Ref("in0", (0,)), Const(1e8, "float32"))
    p = Program(
        name="ovf", format="soda", semantics="c", shape=(4,), inputs=(Input("in0", "int32", (0,)),),
        stencils=(Stencil("s0", "int32", expr, (), (("in0", SHRINK),)),), outputs=("s0",),
    )  # fmt: skip
    verify(p)
    run = simulated(p, "stencilflow")
    assert run.validation.valid, explain(run)


def test_supplied_scalar_input_keeps_its_shape() -> None:
    """``make_inputs`` returns ``np.ascontiguousarray(arr)``, which is at least 1-d; the simulator's reader
    then fails (``zip(inp.axes, arr.shape, strict=True)``). ``stencilmap.jobs.simulate.bind`` reshapes every
    input to its field's shape as a workaround; so do these tests' helpers."""
    p = Program(
        name="s", format="stencilflow", semantics="numpy", shape=(4,),
        inputs=(Input("a", "float32", (0,)), Input("c", "float32", ())),
        stencils=(Stencil("s0", "float32", Binary("+", Ref("a", (0,)), Ref("c", ())), (), ()),), outputs=("s0",),
    )  # fmt: skip
    verify(p)
    values = make_inputs(p, {"c": np.asarray(2.0, np.float32)})
    assert values["c"].shape == ()


def two_inputs(name: str, expr: Expr, dtype: str) -> Program:
    """A verified 1-D NumPy-semantics program of six points: ``s0 = expr`` over inputs ``in0`` and ``in1``."""
    p = Program(
        name=name, format="stencilflow", semantics="numpy", shape=(6,),
        inputs=(Input("in0", dtype, (0,)), Input("in1", dtype, (0,))),
        stencils=(Stencil("s0", dtype, expr, (), (("in0", SHRINK), ("in1", SHRINK))),), outputs=("s0",),
    )  # fmt: skip
    verify(p)
    return p


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_integer_powers_are_exact_and_wrap(arch: str) -> None:
    """NumPy semantics, int32 s0 = in0 ** in1 (found by ``benchmarks/difffuzz.py``): the simulator raised in
    float64 (``pow``), which keeps 53 bits of 5⁴⁰ and wrapped that, and gave 1 ** -1 = 1 where the
    reference and the generated code give 0 for any negative exponent."""
    program, design = built(two_inputs("pw", Binary("**", Ref("in0", (0,)), Ref("in1", (0,))), "int32"), arch)
    values = {
        "in0": np.array([5, 3, 1, -1, 2, -7], np.int32),
        "in1": np.array([40, 21, -1, -3, 31, 11], np.int32),
    }
    result = simulate(program, design, values)
    expected = run_reference(program, values).outputs["s0"]
    assert expected.tolist()[2:4] == [0, 0]
    assert np.array_equal(result.outputs["s0"], expected), (result.outputs["s0"], expected)


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_float16_values_are_rounded_to_half(arch: str) -> None:
    """SODA, float s0 = half(in0) * in0 (found by ``benchmarks/difffuzz.py``): ``round_to`` (``csrc/arith.h``)
    rounded float16 as float32, so the cast kept in0's float32 value and s0 was in0², not half(in0)·in0;
    a half stencil's operations (computed as float, C semantics) were not rounded to half either."""
    text = (
        "kernel: h\ninput float: in0(8, *)\ninput half: in1(8, *)\n"
        "local float: s0(0, 0) = half(in0(0, 0)) * in0(0, 0)\n"
        "output half: s1(0, 0) = s0(0, 0) + in1(0, 0) * in1(0, 0) + in1(0, 0)\n"
    )
    program, design = built(soda(text, (8, 8)), arch)
    rng = np.random.default_rng(1)
    values = {
        "in0": (rng.random((8, 8)) * 100).astype(np.float32),
        "in1": (rng.random((8, 8)) * 30).astype(np.float16),
    }
    values["in0"][0, :3] = [2049.0, 65519.0, 65520.0]  # a tie (2048 + 2 is even), the last finite half, inf
    result = simulate(program, design, values)
    expected = run_reference(program, values).outputs["s1"]
    assert np.isinf(expected[0, 2]) and not np.isinf(values["in0"][0, 2] ** 2)
    assert result.outputs["s1"].tobytes() == expected.tobytes()


@pytest.mark.parametrize("arch", ["soda", "stencilflow", "pcm"])
def test_fdim_propagates_nan(arch: str) -> None:
    """NumPy semantics, float64 s0 = fdim(in0, in1) (seed 31, case 179 of ``benchmarks/difffuzz.py``): the
    reference computes max_nan(a − b, 0), NaN for a NaN operand and for inf − inf; the simulators' ``call2``
    (``csrc/arith.h``) gave 0 there (d > 0 ? d : 0), and a later conversion made any value of it."""
    program, design = built(
        two_inputs("fd", Call("fdim", (Ref("in0", (0,)), Ref("in1", (0,)))), "float64"), arch
    )
    values = {
        "in0": np.array([np.nan, 1.0, np.inf, 3.0, -np.inf, 2.0]),
        "in1": np.array([1.0, np.nan, np.inf, 1.0, -np.inf, 5.0]),
    }
    result = simulate(program, design, values).outputs["s0"]
    expected = run_reference(program, values).outputs["s0"]
    assert np.isnan(expected[[0, 1, 2, 4]]).all() and expected[[3, 5]].tolist() == [2.0, 0.0]
    assert np.array_equal(result, expected, equal_nan=True), (result, expected)
