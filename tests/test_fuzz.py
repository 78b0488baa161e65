"""Issue 13 §4: a seeded fuzz run over mutated corpus programs and the hostile cases (``tests/fuzz.py``):
every one ends with exit 0 or a one-line exit 2, no traceback. Bounded by work — FUZZ_CASES cases — never by
the wall clock, so it passes on a loaded machine too (issue 19 §10)."""

from __future__ import annotations

from pathlib import Path

from tests.fuzz import fuzz

FUZZ_SEED = 13
FUZZ_CASES = 150


def test_fuzzed_programs_keep_the_promise(tmp_path: Path) -> None:
    ran, failures = fuzz(FUZZ_SEED, FUZZ_CASES, tmp_path)
    report = "\n".join(f"{o.label}: {' '.join(o.args)}: {why}" for o, why in failures)
    assert not failures, report
    assert ran == FUZZ_CASES
