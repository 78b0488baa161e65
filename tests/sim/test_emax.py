"""The EMAX simulator (sim/emax.py): values through LMMs and FIFOs validated against the reference; the
streams it moves against formulas (1)–(5) (§4.5); its five-state timeline against the model (§5.1);
Fig. 13/14's trend at 320³ in double precision from ``estimate``."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import stencilmap.device as device_package
from stencilmap.backends.reference import run_reference
from stencilmap.cli.estimate import estimate_cmd
from stencilmap.cli.simulate import simulate_cmd
from stencilmap.design.emax import EmaxMapping, map_emax
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import load_device
from stencilmap.model import emax as model
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from stencilmap.sim.emax import EmaxRun, Execution, schedule_states, simulate_emax
from stencilmap.sim.validate import Validation, validate
from tests.conftest import EXAMPLES

runner = CliRunner()
STARS = {1: "jacobi3d.soda", 2: "star3d_degree2.soda", 3: "star3d_degree3.soda"}
DEVICE = load_device("emax")


def run(path: Path, p: int, shape: tuple[int, ...]) -> tuple[EmaxMapping, EmaxRun, Validation]:
    program = bind_shape(load_program(path), {}, shape)
    values = make_inputs(program, {}, 0)
    m = map_emax(program, BuildConfig(unroll=p))
    r = simulate_emax(m, values[m.field], DEVICE)
    ref = run_reference(program, values)
    out = {m.output: r.output.reshape(ref.outputs[m.output].shape)}
    return m, r, validate("done", out, ref.outputs, ref.defined)


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize(
    ("p", "shape"), [(1, (8, 12, 20)), (2, (8, 12, 20)), (4, (9, 12, 20)), (2, (8, 8, 4100))]
)
def test_stars_simulate_valid(degree: int, p: int, shape: tuple[int, int, int]) -> None:
    """Degree 1, 2, 3 × p = 1, 2, 4 (one group partial when 9 planes) and X split into 3 chunks."""
    m, r, v = run(EXAMPLES / STARS[degree], p, shape)
    assert v.valid, v.first_mismatch
    assert m.x_chunks == (3 if shape[2] == 4100 else 1)
    assert r.lmm_streams == model.mapped_streams(degree, p, shape[1], shape[0], m.x_chunks)
    assert v.outputs[0].points > 0


def test_two_dimensional_program_simulates_valid() -> None:
    _, r, v = run(EXAMPLES / "laplace2d.soda", 1, (16, 32))
    assert v.valid and r.lmm_streams == 16  # one stream per Y row: the Y column reuses the rest


def test_a_wrong_coefficient_is_caught() -> None:
    """The validation sees the ALU program: change one RGI constant and the result is invalid."""
    program = bind_shape(load_program(EXAMPLES / STARS[1]), {}, (6, 8, 16))
    values = make_inputs(program, {}, 0)
    m = map_emax(program, BuildConfig(unroll=2))
    k = next(n for n, i in enumerate(m.instructions) if i.op == "FMA" and i.coeff != 0)
    changed = replace(m.instructions[k], coeff=m.instructions[k].coeff * 1.01)
    bad = (*m.instructions[:k], changed, *m.instructions[k + 1 :])
    ref = run_reference(program, values)
    for mm, ok in ((m, True), (replace(m, instructions=bad), False)):
        out = simulate_emax(mm, values[m.field], DEVICE).output
        assert validate("done", {m.output: out}, ref.outputs, ref.defined).valid is ok


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("p", [1, 2, 4])
def test_streams_moved_follow_formulas_1_to_4(degree: int, p: int) -> None:
    """Inside the grid every further step moves (2) = 2d + p streams and a whole Y sweep (3) = y(2d + p);
    the first step moves the group's Y columns from y = 0 and its 2d neighbour planes; (4) adds its
    (1) term per group on top of (3), which the paper neglects (p < y)."""
    d, (z, y, x) = degree, (4 * p + 2 * degree, 32, 8)
    _, r, v = run(EXAMPLES / STARS[degree], p, (z, y, x))
    assert v.valid
    groups = [r.executions[g * y : (g + 1) * y] for g in range(len(r.executions) // y)]
    interior = [g for n, g in enumerate(groups) if d <= n * p and n * p + p + d <= z]
    assert interior
    for g in interior:
        assert g[0].streams == p * (d + 1) + 2 * d  # y − d .. −1 lie outside the grid
        assert [e.streams for e in g[1 : y - d]] == [model.next_streams(d, p)] * (y - d - 1)  # (2)
        assert [e.streams for e in g[y - d :]] == [2 * d] * d  # the Y column's last streams are in
        assert sum(e.streams for e in g) == model.sweep_streams(d, p, y)  # (3), exactly
    # (4) = z((1) + (3))/p for whole groups, against what the grid's interior groups move
    total4 = model.total_streams(d, p, y, p * len(interior))
    moved = sum(e.streams for g in interior for e in g)
    assert total4 - moved == pytest.approx(len(interior) * model.first_streams(d, p))


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_packing_reduces_transfers_as_the_paper_says(degree: int) -> None:
    """Simulated streams per output plane at p against p = 1: (2d + p) / (p(2d + 1)) (§4.5), exactly on
    interior groups; → 1/3, 1/5, 1/7 as p grows."""
    y = 16
    per_plane = {}
    for p in (1, 2, 4):
        z = 2 * degree + 3 * p
        _, r, _ = run(EXAMPLES / STARS[degree], p, (z, y, 8))
        groups = [r.executions[g * y : (g + 1) * y] for g in range(len(r.executions) // y)]
        interior = [g for n, g in enumerate(groups) if degree <= n * p and n * p + p + degree <= z]
        per_plane[p] = sum(e.streams for g in interior for e in g) / (p * len(interior))
    for p in (2, 4):
        ratio = (2 * degree + p) / (p * (2 * degree + 1))
        assert per_plane[p] / per_plane[1] == pytest.approx(ratio)
        assert ratio == pytest.approx(
            model.approx_streams(degree, p, y, 64) / model.approx_streams(degree, 1, y, 64)
        )


# ------------------------------------------------------------------------------------------ timeline


def test_schedule_of_identical_executions_is_the_closed_form() -> None:
    """One execution: every state once, Σ t_s. Many: the busiest exclusive path sets the interval; the
    list schedule lies within one execution's middle states of Σ t_s + (E − 1)·max(paths)."""
    e = Execution(bytes_in=8_000, bytes_out=2_000, streams=3, cycles=500)
    rates = (4e8, 8e8, 2e8)
    one = schedule_states([e], *rates)
    closed1 = model.timeline(8_000, 2_000, 500, 1, *rates)
    assert one.total_s == pytest.approx(closed1.seconds)
    many = schedule_states([e] * 500, *rates)
    closed = model.timeline(8_000, 2_000, 500, 500, *rates)
    assert closed.bottleneck == "host"
    assert closed.seconds - sum(closed.states[1:4]) - 1e-12 <= many.total_s <= closed.seconds + 1e-12
    assert many.state_seconds == pytest.approx(tuple(500 * t for t in closed.states))
    # shared memory (no host copies): the LMM port (states 2 and 3) is the bottleneck
    shared = schedule_states([e] * 500, None, 8e8, 2e8)
    assert shared.total_s == pytest.approx(500 * (closed.states[1] + closed.states[2]), rel=0.01)


def test_states_never_share_a_path() -> None:
    """§5.1: states 1 & 5 and 2 & 3 never overlap; each state follows the previous state of its execution;
    different executions' states do overlap (Fig. 12)."""
    _, r, _ = run(EXAMPLES / STARS[2], 2, (8, 16, 64))
    s = schedule_states(list(r.executions), 4e8, 8e8, 2e8, keep_intervals=True)
    assert s.total_s == r.schedule.total_s and len(s.intervals) == 5 * len(r.executions)
    for path in ({1, 5}, {2, 3}, {4}):
        spans = sorted((a, b) for st, _, a, b in s.intervals if st in path)
        assert all(b0 <= a1 + 1e-15 for (_, b0), (a1, _) in pairwise(spans))
    when = {(st, e): (a, b) for st, e, a, b in s.intervals}
    assert all(when[(st - 1, e)][1] <= a + 1e-15 for (st, e), (a, _) in when.items() if st > 1)
    t1, t2, t3, t4, t5 = s.state_seconds
    assert max(t1 + t5, t2 + t3, t4) <= s.total_s < 0.8 * (t1 + t2 + t3 + t4 + t5)  # overlapped


def _estimate(path: Path, p: int, shape: str) -> dict[str, float]:
    result = runner.invoke(
        estimate_cmd, [str(path), "--device", "emax", "--unroll", str(p), "--shape", shape, "--json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("degree", [1, 3])
@pytest.mark.parametrize(
    ("p", "shape"), [(1, (8, 48, 64)), (2, (8, 48, 64)), (4, (8, 48, 64)), (2, (4, 8, 4100))]
)
def test_simulator_agrees_with_estimate_within_5_percent(
    degree: int, p: int, shape: tuple[int, int, int]
) -> None:
    m, r, v = run(EXAMPLES / STARS[degree], p, shape)
    assert v.valid
    predicted = _estimate(EXAMPLES / STARS[degree], p, ",".join(map(str, shape)))
    assert predicted["transfer_streams"] == r.lmm_streams
    assert r.schedule.total_s == pytest.approx(predicted["predicted_seconds"], rel=0.05)
    assert model.mapping_timeline(m, DEVICE).seconds == pytest.approx(
        predicted["predicted_seconds"], rel=1e-9
    )


def test_simulate_cli_reports_emax(tmp_path: Path) -> None:
    args = [str(EXAMPLES / STARS[3]), "--arch", "emax", "--unroll", "2", "--shape", "8,12,4100"]
    result = runner.invoke(simulate_cmd, [*args, "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["valid"] and report["arch"] == "emax"
    emax = report["emax"]
    assert emax["x_chunks"] == 3 and emax["lmm_streams"] == model.mapped_streams(3, 2, 12, 8, 3)
    assert set(emax["timeline"]) == {
        "host_to_ddr",
        "ddr_to_lmm",
        "execute",
        "lmm_to_ddr",
        "ddr_to_host",
        "total_s",
    }
    assert report["offchip_bytes_read"]["v"] == emax["bytes_ddr_to_lmm"]


@pytest.mark.parametrize(
    ("degree", "columns", "rows"), [(2, 16, 6 + 1 + 9), (3, 16, 8 + 1 + 11), (1, 6, 7 * 4)]
)
def test_a_device_of_other_columns_maps_simulates_and_estimates_alike(
    tmp_path: Path, degree: int, columns: int, rows: int
) -> None:
    """Wider than 8 columns, degrees 2 and 3 pair mirrored patterns (§4.6's degree-1 construction); narrower,
    degree 1 stacks them. The simulation is valid and estimate reports the rows the mapping places."""
    spec = json.loads((Path(device_package.__file__).parent / "files" / "emax.json").read_text())
    spec["name"], spec["resources"]["pe_columns"] = f"emax{columns}", columns
    spec["resources"]["mac"] = spec["resources"]["pe_rows"] * columns
    device = tmp_path / "wide.json"
    device.write_text(json.dumps(spec))
    args = [str(EXAMPLES / STARS[degree]), "--arch", "emax", "--unroll", "4", "--shape", "8,12,20"]
    args += ["--device", str(device)]
    sim = runner.invoke(simulate_cmd, [*args, "--out", str(tmp_path / "sim"), "--json"])
    assert sim.exit_code == 0, sim.output
    report = json.loads(sim.stdout)
    assert report["valid"] and report["emax"]["rows"] == rows == model.rows(degree, 4, columns)
    est = runner.invoke(estimate_cmd, [*args, "--json"])
    assert est.exit_code == 0, est.output
    assert json.loads(est.stdout)["parameters"]["rows"] == rows


# ------------------------------------------------------------------------------------ Fig. 13 / 14


def _double(tmp_path: Path, degree: int) -> Path:
    text = (EXAMPLES / STARS[degree]).read_text().replace(" float:", " double:")
    path = tmp_path / f"d{degree}.soda"
    path.write_text(re.sub(r"(\d)f\b", r"\1", text))
    return path


@pytest.mark.parametrize(("degree", "ps"), [(1, (1, 2, 3, 4, 8, 16, 30)), (3, (1, 2, 3, 4, 5))])
def test_fig_13_14_time_falls_with_stage_count(tmp_path: Path, degree: int, ps: tuple[int, ...]) -> None:
    """320³ doubles: execution time against stage count (rows) falls monotonically (Fig. 13, 14); the
    model's fall is bounded by the host link, which moves every output too: (2d + 1 + 1) → (1 + 1)
    streams per point at best, so 48% (degree 1) and 60% (degree 3) at 64 rows, not the paper's > 90%."""
    path = _double(tmp_path, degree)
    runs = [_estimate(path, p, "320,320,320") for p in ps]
    rows = [r["parameters"]["rows"] for r in runs]
    times = [r["predicted_seconds"] for r in runs]
    assert rows == sorted(rows) and rows[0] == (7 if degree == 1 else 11)
    assert times == sorted(times, reverse=True)
    saved = 1 - times[-1] / times[0]
    bound = 1 - 2 / (2 * degree + 2)  # host streams per point: (2d + 1) in + 1 out, at best 1 + 1
    assert 0.4 < saved < bound < 0.9


# ------------------------------------------------------------------------------------------ properties


@settings(max_examples=12, deadline=None)
@given(
    degree=st.integers(1, 3),
    p=st.integers(1, 4),
    zyx=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 24)),
    coeffs=st.lists(st.integers(-9, 9), min_size=19, max_size=19),
    dtype=st.sampled_from(["float", "double"]),
)
def test_random_stars_simulate_valid(
    tmp_path_factory: pytest.TempPathFactory,
    degree: int,
    p: int,
    zyx: tuple[int, int, int],
    coeffs: list[int],
    dtype: str,
) -> None:
    """Any symmetric degree-d star with any coefficients, any p ≤ Z, any small grid: valid, and the
    streams moved are the mapping's count."""
    z, y, x = zyx
    p = min(p, z)
    offsets = [(0, 0, 0)] + [
        tuple(s * k if a == axis else 0 for a in range(3))
        for k in range(1, degree + 1)
        for axis in range(3)
        for s in (-1, 1)
    ]
    terms = " + ".join(f"{c / 8}f * v({o[2]}, {o[1]}, {o[0]})" for c, o in zip(coeffs, offsets, strict=False))
    path = tmp_path_factory.mktemp("star") / "s.soda"
    path.write_text(
        f"kernel: s\nburst width: 512\nunroll factor: 1\ninput dram 0 {dtype}: v(16, 16, *)\n"
        f"output dram 1 {dtype}:\n  w(0, 0, 0) = 1.5f + {terms}\niterate: 1\nborder: ignore\ncluster: none\n"
    )
    m, r, v = run(path, p, (z, y, x))
    assert v.valid, v.first_mismatch
    assert m.degree == degree and m.rows == model.rows(degree, p, 8)
    assert r.lmm_streams == model.mapped_streams(degree, p, y, z, 1)
