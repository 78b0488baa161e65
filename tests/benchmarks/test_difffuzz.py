"""benchmarks/difffuzz.py: a short campaign prints its table, and a kept case replays from its files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.scripts import load


def test_three_cases_agree_and_a_kept_case_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fuzz = load("difffuzz")
    args = [
        "--seed",
        "5",
        "--cases",
        "3",
        "--executors",
        "cpu,sim-soda",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
    ]
    assert fuzz.main(args) == 0
    out = capsys.readouterr().out
    rows = {
        line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("cpu", "sim-soda"))
    }
    assert set(rows) == {"cpu", "sim-soda"} and all(int(r[0]) >= 1 for r in rows.values())
    assert "seed 5:" in out
    case, why = fuzz.make_case(5, 0, ("cpu",), 0.0)
    assert case is not None, why
    folder = fuzz.keep(fuzz.run_case(case), tmp_path)
    assert fuzz.main(["--replay", str(folder), "--executors", "cpu"]) == 0
    assert "cpu: ok" in capsys.readouterr().out


def test_a_library_functions_last_bit_converted_to_an_integer_is_the_documented_limit() -> None:
    """Seed 11, case 179: uint8 s0 = pow(in0(1, 1), in2(0, 0)) with pow(3, 34) = 3^34 ± 1 (a tie beyond 2^53:
    NumPy's pow gives 3^34 − 1, libm's 3^34 + 1), converted to uint8: 136 in the reference, 138 in C. Both
    are within the 1 ulp the semantics allow library functions; the fuzzer counted it as a mismatch because
    it forgave only float outputs within tolerance."""
    fuzz = load("difffuzz")
    case, why = fuzz.make_case(11, 179, ("cpu",), 0.0)
    assert case is not None, why
    (verdict,) = fuzz.run_case(case).verdicts
    assert verdict.outcome == "limit" and "library function" in verdict.detail, verdict


def test_star_cases_exercise_the_emax_mapping() -> None:
    """Seed 11: sim-emax refused all 200 cases (several stencils, 1-D, iterate, ... : what the EMAX mapping
    documents it cannot serve); a tenth of the cases are now one-stage constant-coefficient stars it maps.
    Case 76 reads v(0, ±2) but not v(0, ±1) with inf among its inputs: the degree-2 pattern multiplies the
    unread neighbours by 0, giving NaN (the limit docs/tutorials/emax.md states)."""
    fuzz = load("difffuzz")
    outcomes = {}
    for index in (0, 6, 76):
        case, why = fuzz.make_case(11, index, ("sim-emax",), 1.0)
        assert case is not None, why
        (verdict,) = fuzz.run_case(case).verdicts
        outcomes[index] = verdict.outcome, case.fmt
    assert outcomes == {0: ("ok", "soda"), 6: ("ok", "stencilflow"), 76: ("limit", "soda")}, outcomes
