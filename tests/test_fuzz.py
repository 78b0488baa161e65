"""Issue 13 §4: a seeded fuzz run over mutated corpus programs and the hostile cases (``tests/fuzz.py``):
every one ends with exit 0 or a one-line exit 2, no traceback, no hang. Bounded: FUZZ_CASES cases or
FUZZ_BUDGET_S seconds, whichever comes first."""

from __future__ import annotations

from pathlib import Path

from tests.fuzz import fuzz

FUZZ_SEED = 13
FUZZ_CASES = 1000
FUZZ_BUDGET_S = 35.0


def test_fuzzed_programs_keep_the_promise(tmp_path: Path) -> None:
    ran, failures = fuzz(FUZZ_SEED, FUZZ_CASES, tmp_path, budget_s=FUZZ_BUDGET_S)
    report = "\n".join(f"{o.label}: {' '.join(o.args)}: {why}" for o, why in failures)
    assert not failures, report
    assert ran >= 100, f"only {ran} cases ran in {FUZZ_BUDGET_S} s"
