"""OpenCL FPGA platform (Waidyasooriya et al.): processing time eqs. 1–7 and resources eqs. 8–10.

Table 2: Laplace equation on DE5, 15,360 iterations at the lower frequency limit, 270 MHz, on the
4,096 × 32,768 grid of Table 1. The grid is N × M with N the row (the fast axis, Fig. 6): C-order shape
(32768, 4096). Assumptions (in the de5 device file): E_coef = 0.8, PCIe Gen3 x8 host link, 20 µs per
launch, ⌈I_total / d⌉ launches (eq. 1 writes I_total / d); the latency is the analysis's (reach of every
stage plus its compute latency), which is eq. 5's d((q−1)N + p + 1)/(2P) + d up to the PE's latency.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from stencilmap.analysis.timing import pipeline_timing
from stencilmap.cli.estimate import estimate_cmd
from stencilmap.design.registry import BuildConfig, build
from stencilmap.device.catalog import load_device
from stencilmap.errors import StencilmapError
from stencilmap.jobs.estimate import EstimateConfig, estimate
from stencilmap.model.performance import opencl_compute_cycles, opencl_latency_cycles
from stencilmap.model.resources import design_resources, pcm_resources, pe_cost
from stencilmap.point import DesignPoint
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape
from tests.model.helpers import example, run_json

SHAPE = "32768,4096"
#: OpenCL Table 2: P_cell, d, estimated seconds, and the measured logic / memory / register %.
TABLE2 = [
    (1, 146, 52.9, 90.0, 76.1, 40.7),
    (2, 80, 47.9, 89.9, 43.2, 40.2),
    (4, 40, 47.8, 87.6, 23.2, 38.8),
    (8, 21, 45.6, 89.7, 13.6, 39.4),
    (16, 10, 80.7, 85.7, 8.2, 38.4),
]


def laplace(p_cell: int, d: int) -> dict:  # type: ignore[type-arg]
    args = ["--device", "de5", "--arch", "pcm", "--unroll", str(p_cell), "--iterate", str(d)]
    args += ["--iterations", "15360", "--shape", SHAPE, "--clock-mhz", "270"]
    return run_json(estimate_cmd, str(example("laplace2d.soda")), *args)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("p_cell", "d", "seconds", "alm", "memory", "registers"), TABLE2)
def test_table2_processing_times(
    p_cell: int, d: int, seconds: float, alm: float, memory: float, registers: float
) -> None:
    r = laplace(p_cell, d)
    assert r["predicted_seconds"] == pytest.approx(seconds, rel=0.03)
    assert r["scenario"] == ("bandwidth" if p_cell == 16 else "compute")  # §5.1: P_cell = 16 is scenario 2
    assert r["launches"] == -(-15360 // d)
    # resources: the de5 coefficients are a least-squares fit to these rows (ALM is the binding resource)
    assert r["binding_resource"] == "alm"
    used = {k: 100 * v["used"] / v["available"] for k, v in r["resources"].items()}
    assert used["alm"] == pytest.approx(alm, abs=1.0)
    assert used["memory_bits"] == pytest.approx(memory, abs=1.0)
    assert used["register"] == pytest.approx(registers, abs=1.0)
    assert used["dsp"] == 0  # 0.25 × (…) is an exponent shift


def test_table2_optimum_is_p4_to_p8_not_p16() -> None:
    times = {(p, d): laplace(p, d)["predicted_seconds"] for p, d, *_ in TABLE2}
    assert min(times, key=lambda k: times[k]) == (8, 21)  # the fastest estimate of Table 2 (45.6 s)
    assert max(times, key=lambda k: times[k]) == (16, 10)  # bandwidth-bound: 80.7 s


def test_latency_agrees_with_eq5() -> None:
    """Eq. 5's latency term d((q−1)N + p + 1)/(2·P) + d against the analysis's L, on the Table 2 grid."""
    program = bind_shape(load_program(example("laplace2d.soda")), {}, (32768, 4096))
    lat = load_device("de5").operator_latencies()
    for p_cell, d, *_ in TABLE2:
        ours = pipeline_timing(replace(program, iterate=d), (32768, 4096), p_cell, lat)
        paper = opencl_latency_cycles(d, rows=3, row_length=4096, cols=3, p_cell=p_cell)
        # the paper delays each PCM by half its window; the analysis by the reach it waits for (N / P) plus
        # the PE latency: both ≪ N·M / P
        assert abs(ours.latency - paper) < d * (4096 / p_cell / 2 + 30)
        total = opencl_compute_cycles(d, 3, 4096, 3, p_cell, 32768 * 4096)
        assert (ours.latency + 32768 * 4096 / p_cell) == pytest.approx(total, rel=0.01)


def _pcm(program_name: str, p_cell: int, d: int) -> tuple[dict, float]:  # type: ignore[type-arg]
    args = ["--device", "de5", "--arch", "pcm", "--unroll", str(p_cell), "--iterate", str(d)]
    r = run_json(estimate_cmd, str(example(program_name)), *args, "--shape", SHAPE)
    return r, r["resources"]["dsp"]["used"]


@pytest.mark.parametrize(
    ("program", "p_cell", "d"),
    [("jacobi2d_9pt.soda", 1, 28)],  # OpenCL Table 4, DE5: 2-D 9-point Jacobi, DSP-constrained
)
def test_table4_dsp_bound_optimum(program: str, p_cell: int, d: int) -> None:
    r, dsp = _pcm(program, p_cell, d)
    assert dsp == 9 * p_cell * d  # one DSP per fp32 multiply: 252 of 256
    assert r["binding_resource"] == "dsp" and r["fits"]
    more, _ = _pcm(program, p_cell, d + 1)
    assert not more["fits"]  # d + 1 needs 261 DSPs


def test_table4_laplace_alm_bound_optimum() -> None:
    r, _ = _pcm("laplace2d.soda", 8, 21)  # Table 4, DE5: Laplace P_cell = 8, d = 21, ALM-bound
    assert r["binding_resource"] == "alm" and r["fits"]
    assert not _pcm("laplace2d.soda", 8, 22)[0]["fits"]  # over the 90% logic limit (§5.1)


def test_resources_are_eq_9_and_10() -> None:
    """For a PCM design the module sum is R = d(P_cell·R_PE + R_shift) + R_base, resource by resource."""
    device = load_device("de5")
    program = bind_shape(load_program(example("laplace2d.soda")), {}, (64, 4096))
    rm = device.resource_model
    assert rm is not None
    r_pe = pe_cost(program.stencils[0], device)
    r_shift = rm.module("shift_register").fixed
    for p_cell, d in ((1, 3), (4, 5)):
        design = build("pcm", program, BuildConfig(unroll=p_cell, iterate=d))
        usage = design_resources(design, replace(program, iterate=d), device)
        for name in ("alm", "register"):
            expected = pcm_resources(d, p_cell, r_pe[name], r_shift[name], rm.base[name])
            assert usage.used[name] == pytest.approx(expected)


def test_bandwidth_bound_time_does_not_depend_on_the_clock() -> None:
    """Eq. 7: in scenario 2 t_comp depends on f_mem, not on f_core."""
    times = []
    for clock in (270.0, 300.0):
        cfg = EstimateConfig(
            program=example("laplace2d.soda"),
            point=DesignPoint(device="de5", arch="pcm", unroll=16, iterate=10, vector=None),
            iterations=15360,
            shape=(32768, 4096),
            clock_mhz=clock,
        )
        r = estimate(cfg)
        assert r.scenario == "bandwidth"
        times.append(r.compute_seconds)
    assert times[0] == pytest.approx(times[1], rel=1e-3)


# ------------------------------------------------------------------ interleaved global memory (issue 11 §4)


def _without_banks(tmp_path: Path, name: str) -> Path:
    """``name`` as a new user writes it: no ``dram N`` bank annotations."""
    text = example(name).read_text(encoding="utf-8")
    stripped = re.sub(r"\b(input|output) dram \d+ ", r"\1 ", text)
    assert "dram" not in stripped
    path = tmp_path / name
    path.write_text(stripped, encoding="utf-8")
    return path


def _laplace_at(path: Path, p_cell: int, d: int, device: str = "de5") -> dict:  # type: ignore[type-arg]
    args = ["--device", device, "--arch", "pcm", "--unroll", str(p_cell), "--iterate", str(d)]
    args += ["--iterations", "15360", "--shape", SHAPE, "--clock-mhz", "270"]
    return run_json(estimate_cmd, str(path), *args)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("p_cell", "d", "seconds"), [(p, d, s) for p, d, s, *_ in TABLE2])
def test_unpinned_laplace_interleaves_over_both_de5_banks(
    tmp_path: Path, p_cell: int, d: int, seconds: float
) -> None:
    """The DE5's OpenCL BSP interleaves global memory across its two banks unless buffers are pinned:
    Laplace without bank annotations streams at both banks' B_prac, as the pinned one does (Table 2)."""
    plain = _laplace_at(_without_banks(tmp_path, "laplace2d.soda"), p_cell, d)
    pinned = laplace(p_cell, d)
    # equal in the steady state; in scenario 2 the interleaved fill (reads alone, on both banks) is a
    # little shorter than the pinned one (reads on bank 0 only): 21 ms of 80.7 s at P_cell = 16
    assert plain["predicted_seconds"] == pytest.approx(pinned["predicted_seconds"], rel=1e-3)
    assert plain["predicted_seconds"] <= pinned["predicted_seconds"]
    assert plain["scenario"] == pinned["scenario"]
    if (p_cell, d) == (8, 21):
        assert plain["predicted_seconds"] == pytest.approx(45.6, rel=0.01)  # Table 2, not 76.9 s
        assert plain["scenario"] == "compute"


def test_one_pinned_bank_gets_one_banks_bandwidth(tmp_path: Path) -> None:
    """Pinning turns interleaving off: both streams pinned to bank 0 share that bank's B_prac / 2 and
    P_cell = 8 becomes bandwidth-bound (B_req 17.3 GB/s > 10.24 GB/s)."""
    text = example("laplace2d.soda").read_text(encoding="utf-8").replace("output dram 1", "output dram 0")
    path = tmp_path / "one_bank.soda"
    path.write_text(text, encoding="utf-8")
    r = _laplace_at(path, 8, 21)
    assert r["scenario"] == "bandwidth"
    assert r["predicted_seconds"] > 1.6 * 45.6


def test_interleaving_is_a_device_property() -> None:
    """The Intel OpenCL boards interleave; the Xilinx KU060 (per-bank AXI ports) does not."""
    for name in ("de5", "395-d8", "395-ab", "stratix10"):
        device = load_device(name)
        assert device.memory_interleaved and device.interleaved_banks(pinned=False) == device.dram_banks
        assert device.bank_rate(pinned=True) == pytest.approx(device.bytes_per_cycle_per_bank())
    ku060 = load_device("ku060")
    assert not ku060.memory_interleaved
    assert ku060.bank_rate(pinned=False) == pytest.approx(ku060.bytes_per_cycle_per_bank())


def test_unpinned_program_on_a_non_interleaved_device_stays_on_bank_0(tmp_path: Path) -> None:
    path = _without_banks(tmp_path, "laplace2d.soda")
    args = ["--device", "ku060", "--arch", "pcm", "--unroll", "16", "--iterate", "2", "--shape", SHAPE]
    r = run_json(estimate_cmd, str(path), *args)
    assert r["scenario"] == "bandwidth"  # 2 × 4 B × 16 × 250 MHz = 32 GB/s on one 10.75 GB/s bank
    assert any("bank(s) [0] of 2" in n for n in r["notes"])


# ------------------------------------------------------------------- DSPs of a PE (issue 11 §4, Table 4)

#: OpenCL Table 1's 2-D 5-point Jacobi with five coefficients c1..c5 (9 flops: 5 multiplies, 4 adds)
JACOBI5 = """kernel: jacobi2d_5pt
input dram 0 float: v(128, *)
output dram 1 float:
  w(0, 0) = 0.15f * v(0, -1) + 0.2f * v(-1, 0) + 0.3f * v(0, 0) + 0.2f * v(1, 0) + 0.15f * v(0, 1)
iterate: 1
"""


def _dsp_totals(path: Path, p_cell: int, d: int) -> tuple[float, str, bool]:
    args = ["--device", "de5", "--arch", "pcm", "--unroll", str(p_cell), "--iterate", str(d)]
    r = run_json(estimate_cmd, str(path), *args, "--shape", SHAPE)
    return r["resources"]["dsp"]["used"], r["binding_resource"], r["fits"]


@pytest.mark.parametrize(
    ("program", "p_cell", "d", "dsps"),
    [("jacobi5", 2, 25, 250), ("jacobi2d_9pt.soda", 1, 28, 252)],  # Table 4, DE5: both DSP-constrained
)
def test_table4_de5_dsp_totals(tmp_path: Path, program: str, p_cell: int, d: int, dsps: int) -> None:
    """One DSP per fp32 multiply by a general constant, none per add (§5.4: additions are done in ALMs):
    5 a PE for the 5-point Jacobi, 9 for the 9-point; the next d needs more than the DE5's 256."""
    path = example(program)
    if program == "jacobi5":
        path = tmp_path / "jacobi5.soda"
        path.write_text(JACOBI5, encoding="utf-8")
    used, binding, fits = _dsp_totals(path, p_cell, d)
    assert (used, binding, fits) == (dsps, "dsp", True)
    more, _, fits_more = _dsp_totals(path, p_cell, d + 1)
    assert more == dsps + dsps // d and not fits_more


def test_which_multiplies_take_a_dsp(tmp_path: Path) -> None:
    """Field × field and × a general constant take a DSP; × a constant folding to ±2ⁿ does not."""
    program = """kernel: k
input float: v(128, *)
output float:
  w(0, 0) = v(0, -1) * v(0, 1) + (0.5f * 0.5f) * v(0, 0) + v(-1, 0) * 3.0f + 2.0f * v(1, 0)
    - (1.0f / 3.0f) * v(0, 0) + -0.25f * v(0, 1) + (0.1f + 0.9f) * v(1, 1)
iterate: 1
"""
    path = tmp_path / "k.soda"
    path.write_text(program, encoding="utf-8")
    used, _, _ = _dsp_totals(path, 1, 1)
    assert used == 3  # v·v, v·3, v·(1/3); 0.25, 2, −0.25 and 1.0 are exponent shifts
    used, _, _ = _dsp_totals(path, 4, 2)
    assert used == 3 * 4 * 2


# -------------------------------------------------------------- the clock from utilization (Fig. 10, §5.1)


def _clocked(p_cell: int, d: int, *clock: str) -> dict:  # type: ignore[type-arg]
    args = ["--device", "de5", "--arch", "pcm", "--unroll", str(p_cell), "--iterate", str(d)]
    args += ["--iterations", "15360", "--shape", SHAPE, *clock]
    return run_json(estimate_cmd, str(example("laplace2d.soda")), *args)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("p_cell", "d", "alm", "mhz"),
    [(4, 20, 0.582, 300.0), (4, 35, 0.803, 284.0), (8, 20, 0.864, 270.0), (8, 21, 0.893, 270.0)],
)
def test_de5_clock_follows_alm_utilization(p_cell: int, d: int, alm: float, mhz: float) -> None:
    """Fig. 10: ~300 MHz below 75% of the logic, 300 → 270 MHz from 75% to 85%, ~270 MHz to 90%."""
    r = _clocked(p_cell, d)
    used = r["resources"]["alm"]["used"] / r["resources"]["alm"]["available"]
    assert used == pytest.approx(alm, abs=0.001)
    assert r["clock_mhz"] == pytest.approx(mhz, abs=0.1)
    assert any("clock model" in n for n in r["notes"])
    fixed = _clocked(p_cell, d, "--clock-mhz", "270")  # a given clock wins over the model
    assert fixed["clock_mhz"] == 270.0 and not any("clock model" in n for n in fixed["notes"])
    # scenario 1: the time scales with 1 / f
    expected = fixed["compute_seconds_per_launch"] * 270.0 / r["clock_mhz"]
    assert r["compute_seconds_per_launch"] == pytest.approx(expected, rel=1e-3)


def test_clock_model_is_piecewise_linear_and_flat_outside() -> None:
    cm = load_device("de5").clock_model
    assert cm is not None and cm.resource == "alm"
    assert [cm.mhz(u) for u in (0.0, 0.6, 0.75, 0.8, 0.85, 0.88, 0.9, 0.97)] == pytest.approx(
        [300, 300, 300, 285, 270, 270, 270, 270]
    )
    ku = load_device("ku060").clock_model  # SODA §5.2: 250 MHz target, the slowest at 229.1 MHz
    assert ku is not None and ku.resource == "lut"
    assert [ku.mhz(u) for u in (0.0, 0.7, 0.75, 0.8, 0.9)] == pytest.approx([250, 250, 239.55, 229.1, 229.1])


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"resource": "lut", "points": [[0, 300], [1, 200]]}, "counts no 'lut'"),
        ({"resource": "alm", "points": [[0.5, 300], [0.5, 200]]}, "increase strictly"),
        ({"resource": "alm", "points": [[0.5, 300], [1.5, 200]]}, "increase strictly"),
        ({"resource": "alm", "points": [[0, 300], [1, 0]]}, "positive numbers of MHz"),
        ({"resource": "alm", "points": [[0, 300]]}, "clock_model.points: must hold at least 2 items, got 1"),
        ({"resource": "alm", "points": [[0, 300], [1, 200]], "x": 1}, "clock_model.x: unknown field"),
    ],
)
def test_clock_model_is_validated(tmp_path: Path, model: dict, message: str) -> None:  # type: ignore[type-arg]
    import json

    doc = json.loads(example("../src/stencilmap/device/files/de5.json").read_text())
    doc["clock_model"] = model
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(StencilmapError, match=message):
        load_device(str(path))
