"""benchmarks/fidelity.py and its published rows (benchmarks/published/rows.csv): the schema, unique ids,
the calibration split declared in the device files, and the JSON the script prints. No accuracy
thresholds: how close the models are is the script's output, not a test."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmarks.scripts import load
from tests.conftest import CORPUS, ROOT


def fidelity() -> ModuleType:
    return load("fidelity")


def test_rows_follow_the_schema() -> None:
    fid = fidelity()
    rows = fid.load_rows()
    assert rows and all(tuple(r) == fid.COLUMNS for r in rows)
    for r in rows:
        assert r["paper"] in fid.PAPERS, r["id"]
        assert r["id"].startswith(r["paper"] + "-"), r["id"]
        assert r["kind"] in ("measured", "model"), r["id"]
        assert math.isfinite(float(r["measured"])), r["id"]
        assert r["source"] and r["quantity"] and r["unit"] and r["rounding"] and r["device"], r["id"]
        if r["program"] != "-":
            path = r["program"]
            # a bundled example, the compatibility corpus, or a paper's own form of a benchmark kept beside
            # the rows (benchmarks/published/<paper>/)
            assert path.startswith(("examples/", "corpus:", f"benchmarks/published/{r['paper']}/")), r["id"]
            if not path.startswith("corpus:"):
                assert (ROOT / path).is_file(), r["id"]


def test_row_ids_are_unique() -> None:
    ids = [r["id"] for r in fidelity().load_rows()]
    assert len(ids) == len(set(ids))


def test_fitted_rows_are_exactly_those_the_device_files_name() -> None:
    fid = fidelity()
    ids = {r["id"] for r in fid.load_rows()}
    fitted = fid.fitted_rows()
    assert fitted, "no device declares what it was fitted on"
    assert set(fitted) <= ids, sorted(set(fitted) - ids)  # every declared row exists
    named = set()
    for path in sorted(fid.DEVICES.glob("*.json")):
        for line in json.loads(path.read_text(encoding="utf-8"))["sources"]:
            if "fitted:" in line:
                assert line.startswith("fitted: "), (path.name, line)
                named.add(line.removeprefix("fitted: ").split()[0])
    assert named == set(fitted)


def test_a_row_not_declared_is_held_out(tmp_path: Path) -> None:
    fid = fidelity()
    rows = [r for r in fid.load_rows() if r["paper"] == "cgra"]
    results = fid.predict(rows, tmp_path)
    fitted = fid.fitted_rows()
    assert [r.fitted for r in results] == [r["id"] in fitted for r in rows]


def test_json_output_shape(capsys: pytest.CaptureFixture[str]) -> None:
    fid = fidelity()
    assert fid.main(["--json", "--paper", "cgra"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"rows", "summary"}
    rows = out["rows"]
    expected = [r["id"] for r in fid.load_rows() if r["paper"] == "cgra"]
    assert [r["item"] for r in rows] == expected
    for r in rows:
        assert {"paper", "item", "measured", "predicted", "error", "fitted"} <= set(r)
        assert r["paper"] == "cgra" and isinstance(r["fitted"], bool)
        assert isinstance(r["measured"], float)
        if r["predicted"] is None:
            assert r["error"] is None
        else:
            assert r["error"] == pytest.approx(r["predicted"] / r["measured"] - 1)
    assert out["summary"]["rows"] == len(rows)
    assert out["summary"]["fitted"] + out["summary"]["held_out"] == len(rows)


def test_markdown_output_has_a_line_per_row_and_the_medians(capsys: pytest.CaptureFixture[str]) -> None:
    fid = fidelity()
    assert fid.main(["--markdown", "--paper", "emax"]) == 0
    out = capsys.readouterr().out
    n = sum(1 for r in fid.load_rows() if r["paper"] == "emax")
    assert sum(1 for line in out.splitlines() if line.startswith("| emax | emax-")) == n
    assert "median |error| fitted" in out and f"| emax | {n} | " in out  # the per-paper medians


def test_soda_seidel2d_and_heat3d_are_the_forms_table_3_counts() -> None:
    """SODA Table 3's #Op column gives SEIDEL 2D 6 operations a point: the two-stage separable form (two
    additions and a multiply each) that the rows use; the corpus's active 9-point form counts 9."""
    from stencilmap.analysis.ops import stencil_ops
    from stencilmap.api import load

    rows = [r for r in fidelity().load_rows() if r["id"].startswith("soda-") and "seidel2d" in r["id"]]
    assert rows and {r["program"] for r in rows} == {"benchmarks/published/soda/seidel2d.soda"}
    prog = load(ROOT / "benchmarks/published/soda/seidel2d.soda")
    assert sum(stencil_ops(st).total for st in prog.stencils) == 6
    if CORPUS.is_dir():
        corpus = load(CORPUS / "soda" / "seidel2d.soda")
        assert sum(stencil_ops(st).total for st in corpus.stencils) == 9
    # HEAT 3D likewise: PolyBench's update, Table 3's 15 operations (the corpus folds them into 13)
    heat = load(ROOT / "benchmarks/published/soda/heat3d.soda")
    assert sum(stencil_ops(st).total for st in heat.stencils) == 15
    assert {r["program"] for r in fidelity().load_rows() if r["id"].startswith("soda-t1-heat3d")} == {
        "benchmarks/published/soda/heat3d.soda"
    }


def test_the_soda_table_1_rows_explore_on_the_boards_interface(tmp_path: Path) -> None:
    """Table 1 is explored on the KU3's 512-bit interface (SODA §4.5), whatever the program file says, on a
    grid far wider than a tile (§4.2); only the ku060's fitted row is declared fitted."""
    src = tmp_path / "j.soda"
    src.write_text(
        "kernel: j\nburst width: 64\ninput dram 0 float: a(32, *)\n"
        "output dram 1 float: b(0, 0) = (a(0, 1) + a(0, -1) + a(1, 0) + a(-1, 0)) * 0.25f\n"
    )
    prog = fidelity().soda_table1_program(src)
    assert prog.hints.burst_width == 512 and prog.shape == (2**16, 2**24)
    fitted = fidelity().fitted_rows()
    # the one row the ku060's LUT adjustment was fitted on; every other Table 1 row is predicted
    assert [r for r in fitted if r.startswith("soda-t1-")] == ["soda-t1-jacobi2d-iterate"]
