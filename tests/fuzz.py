"""A seeded mutator of stencil programs (corpus, examples and the hostile cases of issue 13 §4), and a
check that the CLI meets its promise on each: exit 0, or exit 2 with one ``error:`` line; no traceback,
no hang. ``tests/test_fuzz.py`` runs a bounded number; ``python -m tests.fuzz SEED COUNT`` runs more."""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from stencilmap.cli import main
from tests.conftest import CORPUS_SODA, CORPUS_STENCILFLOW, EXAMPLE_FILES

#: Text a mutation may insert: operators, brackets, numbers at the limits, paths, markup, odd Unicode.
TOKENS = [
    "&", "|", "^", "&&", "||", "!", "~", "**", "//", "%", "<<", "(", ")", "[", "]", "{", "}", ",", ":", ";", "=",
    "0", "-1", "1e400", "-1e400", "nan", "inf", "9" * 30, "9" * 5000, "0x" + "f" * 40, "2147483648", "9223372036854775808", "18446744073709551616", "09", "1.5f",
    "/../../tmp/x", "..", "/dev/zero", "[/]", "[red]", "\\ud800", "\u00e9", "\x00", "\t", "\n", "#",
    "select(", "min(", "sqrt(", "float(", "int8(", "True", "not ", " if ", " else ", "random:0-1e400",
    "iterate: 1000000\n", "unroll factor: 1000000000\n", "a(100000000000000000000, 0)", "p[100]", "1 ** -1",
]  # fmt: skip

JSON_VALUES: list[Any] = [
    None, True, -True, 0, -1, 1.5, 2**63, 10**30, "", "x", "/../../etc/passwd", "../outside.dat", "random:0-1e400",
    "constant:1e400", "random:5-1", [], [[[[1]]]], {}, {"type": "copy"}, "shrink", "float64", "int8", "bool",
    "\ud800", "[/]", "a" * 300, [1] * 64, 100000,
]  # fmt: skip


def seeds() -> list[tuple[str, str]]:
    """(suffix, text) of every program the mutator starts from."""
    files = [*EXAMPLE_FILES, *CORPUS_SODA, *CORPUS_STENCILFLOW]
    return [(p.suffix, p.read_text()) for p in files]


def mutate_text(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randint(0, 12))
        kind = rng.randrange(5)
        if kind == 0:
            text = text[:i] + rng.choice(TOKENS) + text[i:]
        elif kind == 1:
            text = text[:i] + text[j:]
        elif kind == 2:
            text = text[:i] + text[i:j] * rng.randint(2, 400) + text[j:]
        elif kind == 3:
            text = text[:i] + rng.choice(TOKENS) + text[j:]
        else:
            text = text[:i] + chr(rng.randrange(32, 127)) + text[j:]
    return text


def mutate_json(rng: random.Random, text: str) -> str:
    """Replace one value (or key) of the program with a hostile one."""
    doc = json.loads(text)
    paths: list[tuple[Any, Any]] = []
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        items = (
            list(node.items())
            if isinstance(node, dict)
            else list(enumerate(node))
            if isinstance(node, list)
            else []
        )
        for key, value in items:
            paths.append((node, key))
            stack.append(value)
    if not paths:
        return text
    node, key = rng.choice(paths)
    if isinstance(node, dict) and rng.random() < 0.25:
        node[rng.choice(["/../../tmp/x", "[/]", "a" * 200, "\ud800", "", "out"])] = node.pop(key)
    elif isinstance(node[key], str) and rng.random() < 0.5:
        node[key] = mutate_text(rng, node[key])
    else:
        node[key] = rng.choice(JSON_VALUES)
    return json.dumps(doc)


@dataclass(frozen=True)
class Outcome:
    label: str
    args: list[str]
    exit_code: int
    stderr: str
    seconds: float
    exception: BaseException | None


def check(outcome: Outcome) -> str | None:
    """Why ``outcome`` breaks the promise, or None (its behaviour, never its speed: issue 19 §10)."""
    exc = outcome.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return f"{type(exc).__name__}: {exc}"
    if outcome.exit_code == 0 or (outcome.exit_code == 1 and outcome.args[0] == "simulate"):
        return None  # simulate's exit 1 is a result (mismatch, deadlock), reported on stdout
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    if outcome.exit_code != 2 or len(lines) != 1 or not lines[0].startswith("error: "):
        return f"exit {outcome.exit_code}: {outcome.stderr[-500:]!r}"
    return None


def run_case(args: list[str]) -> tuple[Outcome, str]:
    """The outcome of one command and its stdout."""
    start = time.monotonic()
    result = CliRunner().invoke(main, args)
    seconds = time.monotonic() - start
    return Outcome("", args, result.exit_code, result.stderr, seconds, result.exception), result.stdout


def fuzz(
    seed: int, count: int, folder: Path, report: Callable[[Outcome], None] | None = None
) -> tuple[int, list[tuple[Outcome, str]]]:
    """Mutate ``count`` programs (bounded by their number, not the wall clock); each goes through ``analyze`` and,
    if that succeeds on a small grid (at most 2^16 points), ``run`` and ``estimate``, every fifth such
    case ``simulate`` (2^14 points at most) and every tenth ``compile`` (2^12 points at most). Returns the cases run and the failures."""
    rng = random.Random(seed)
    starts = seeds()
    failures: list[tuple[Outcome, str]] = []
    ran = small = 0
    while ran < count:
        ran += 1
        suffix, text = rng.choice(starts)
        try:
            structured = suffix == ".json" and rng.random() < 0.8
            mutated = mutate_json(rng, text) if structured else mutate_text(rng, text)
        except (ValueError, RecursionError):
            mutated = mutate_text(rng, text)
        path = folder / f"case{ran}{suffix}"
        path.write_bytes(mutated.encode("utf-8", errors="surrogatepass"))
        outcome, stdout = run_case(["analyze", str(path), "--json"])
        failures += _checked(outcome, f"seed {seed} case {ran}", report)
        points = _points(stdout) if outcome.exit_code == 0 else 1 << 62
        commands = [
            ["run", str(path), "--out", str(folder / f"out{ran}"), "--json"],
            ["estimate", str(path), "--device", "ku060", "--json"],
        ] if points <= 1 << 16 else []  # fmt: skip
        small += points <= 1 << 14
        if points <= 1 << 14 and small % 5 == 1:
            commands.append(["simulate", str(path), "--out", str(folder / f"sim{ran}"), "--json"])
        if points <= 1 << 12 and small % 10 == 3:
            commands.append(
                ["compile", str(path), "--device", "ku060", "--out", str(folder / f"c{ran}"), "--json"]
            )
        for args in commands:
            outcome, _ = run_case(args)
            failures += _checked(outcome, f"seed {seed} case {ran}", report)
    return ran, failures


def _checked(
    outcome: Outcome, label: str, report: Callable[[Outcome], None] | None
) -> list[tuple[Outcome, str]]:
    outcome = Outcome(
        label, outcome.args, outcome.exit_code, outcome.stderr, outcome.seconds, outcome.exception
    )
    if report is not None:
        report(outcome)
    why = check(outcome)
    return [] if why is None else [(outcome, why)]


def _points(analyze_json: str) -> int:
    try:
        return prod(int(x) for x in json.loads(analyze_json)["shape"])
    except (ValueError, KeyError, TypeError):
        return 1 << 62


if __name__ == "__main__":
    import tempfile

    seed, count = int(sys.argv[1]), int(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        ran, bad = fuzz(seed, count, Path(tmp))
    for outcome, why in bad:
        print(f"{outcome.label}: {' '.join(outcome.args)}: {why}", flush=True)
    print(f"{ran} cases, {len(bad)} failures")
