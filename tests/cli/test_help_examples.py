"""Every example command shown in a ``--help`` text runs as written (a command's examples in order, in an empty
folder beside the bundled examples; explore's grid is made smaller to keep this quick);
so does every console example of the README and of the documentation's pages (``docs/``): it exits as the
page says and prints what the page shows (``shows``: wrapping, wall-clock times and ellipses aside), so a page
cannot go stale unnoticed (``NOT_RUN`` lists the few that need a cluster, and why)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from tests.conftest import CORPUS, EXAMPLES

runner = CliRunner()


def help_blocks() -> dict[str, list[str]]:
    """The ``stencilmap ...`` lines of every ``Example(s):`` block of the group's and each command's help."""
    commands: list[click.Command] = [main, *main.commands.values()]  # type: ignore[attr-defined]
    found: dict[str, list[str]] = {}
    for command in commands:
        text = (command.help or "").replace("\\\n", " ")
        _, sep, block = text.partition("Example")
        assert sep, f"'{command.name}' --help shows no example"
        found[command.name or "stencilmap"] = [
            " ".join(line.split()) for line in block.splitlines() if line.strip().startswith("stencilmap ")
        ]
    return found


EXAMPLE_BLOCKS = help_blocks()
EXAMPLE_COMMANDS = [line for block in EXAMPLE_BLOCKS.values() for line in block]


def test_every_command_has_examples() -> None:
    named = {line.split()[1] for line in EXAMPLE_COMMANDS}
    assert named == set(main.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", list(EXAMPLE_BLOCKS))
def test_help_examples_run_as_written(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command's examples, in order, in one empty folder beside the bundled examples: a file one of them
    reads (an ``--input``, a ``--from-asm`` text) is one an earlier line wrote — a user can paste them."""
    (tmp_path / "examples").symlink_to(EXAMPLES)
    monkeypatch.chdir(tmp_path)
    for line in EXAMPLE_BLOCKS[command]:
        args = shlex.split(line)[1:]
        if args[0] == "explore":
            args = [re.sub(r"^4096,4096$", "256,256", a) for a in args]
        result = runner.invoke(main, args)
        expected = 1 if "--delay-buffers" in args and "min" in args else 0  # shown to make a deadlock
        assert result.exit_code == expected, f"{line}\n{result.output}"
        assert result.exception is None or isinstance(result.exception, SystemExit)


# ------------------------------------------------------------------------------------- README examples

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The README and the documentation's pages: their console examples run here.
PAGES = (README, *sorted((ROOT / "docs").rglob("*.md")))

#: Commands of the README that these tests do not run (a first word or an option), with the reason.
NOT_RUN = {
    "make": "runs the whole setup (make demo / make test): its commands are examples of their own here",
    "dask": "starts a Dask cluster by hand (dask scheduler, dask worker)",
    "--scheduler": "needs a running Dask cluster (the dask scheduler and workers started above it)",
    "--calls": "the fuzz benchmark: thousands of commands, an hour or more (benchmarks/fuzz.py)",
}


@dataclass(frozen=True)
class Step:
    """One ``$ command`` of a README console block and the output shown below it."""

    line: int
    command: str
    shown: tuple[str, ...]
    source: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def readme_blocks(page: Path = README) -> list[tuple[int, list[Step]]]:
    """Every ```console block of a page: its steps (a ``\\``-continued command is one step)."""
    source = str(page.relative_to(ROOT))
    blocks: list[tuple[int, list[Step]]] = []
    steps: list[Step] | None = None
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        text = lines[i]
        if text.startswith("```console"):
            steps, start = [], i + 1
        elif text.startswith("```") and steps is not None:
            blocks.append((start, steps))
            steps = None
        elif steps is not None and text.startswith("$ "):
            command, first = text[2:], i + 1
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            steps.append(Step(first, command, (), source))
        elif steps:
            last = steps[-1]
            steps[-1] = Step(last.line, last.command, (*last.shown, text), source)
        i += 1
    return blocks


def page_blocks() -> list[tuple[str, list[Step]]]:
    """The console blocks of every page, each once (a block the README and a page both show runs once)."""
    seen: set[tuple[tuple[str, tuple[str, ...]], ...]] = set()
    out: list[tuple[str, list[Step]]] = []
    for page in PAGES:
        for start, steps in readme_blocks(page):
            key = tuple((s.command, s.shown) for s in steps)
            if key not in seen:
                seen.add(key)
                out.append((f"{page.relative_to(ROOT)}:{start}", steps))
    return out


README_BLOCKS = page_blocks()


def _expected_status(step: Step, following: Step | None) -> int:
    """What the README says the command exits with: an ``$ echo $?`` after it, else 2 for a shown
    ``error:``, 1 for a shown ``INVALID`` result, else 0."""
    if following is not None and following.command == "echo $?":
        return int(following.shown[0])
    if step.shown and step.shown[0].startswith("error: "):
        return 2
    return 1 if any("INVALID" in line for line in step.shown) else 0


#: What differs from run to run in a command's output: wall-clock times and rates (a model's predicted times
#: are the same every run, and are compared).
VOLATILE = (
    r"(?<=\bin )[\d.,]+(?= ?m?s\b)",
    r"(?<=\bcompile )[\d.,]+(?= ?m?s\b)",
    r"(?<=\brun )[\d.,]+(?= ?m?s\b)",
    r"(?<=\bkernel )[\d.,]+(?= ?m?s\b)",
    r"(?<=, )[\d.]+(?= s\))",
    r"[\d.,]+(?= (?:points|cycles)/s\b)",
    r"[\d.,]+(?= ?GCell/s)",
)
#: How a page marks output it leaves out.
ELLIPSIS = re.compile(r"\.\.\.|…")


def shows(shown: tuple[str, ...], output: str) -> bool:
    """Whether a page's ``shown`` output is what the command printed: whitespace aside (pages wrap long lines,
    tables pad), wall-clock figures aside (``VOLATILE``), and an ellipsis standing for whatever it leaves
    out."""

    def plain(text: str) -> str:
        for pattern in VOLATILE:
            text = re.sub(pattern, "#", text)
        return re.sub(r"\s+", "", text)

    pieces = ELLIPSIS.split("\n".join(shown))
    pattern = ".*?".join(re.escape(plain(piece)) for piece in pieces)
    return re.fullmatch(pattern, plain(output), re.DOTALL) is not None


def _run_step(step: Step, following: Step | None, state: dict[str, int]) -> None:
    args = shlex.split(step.command, comments=True)
    if args[0] == "echo":
        assert args == ["echo", "$?"] and state["status"] == int(step.shown[0]), step
        return
    if args[0] == "cat":
        shown = "\n".join(step.shown) + "\n"
        assert Path(args[1]).read_text() == shown, f"{step.where}: {args[1]} differs from a real run"
        return
    if args[0] == "python":
        subprocess.run([sys.executable, *args[1:]], check=True)
        return
    if args[0] == "sed":  # a hand edit of a written file: sed -i ... FILE, or sed ... IN > OUT
        if len(args) > 2 and args[-2] == ">":
            Path(args[-1]).write_text(
                subprocess.run(args[:-2], check=True, capture_output=True, text=True).stdout
            )
        else:
            subprocess.run(args, check=True)
        return
    assert args[0] == "stencilmap", f"{step.where}: a command this test does not know: {args[0]}"
    if ">" in args:  # a shell redirection: the output is not shown
        args = args[: args.index(">")]
    result = runner.invoke(main, args[1:])
    state["status"] = result.exit_code
    if "--backend" in args and args[args.index("--backend") + 1] == "gpu":  # README: exit 2 without a GPU
        assert result.exit_code in (0, 2), result.output
        assert result.exit_code == 0 or result.stderr.startswith("error: ")
        return
    expected = _expected_status(step, following)
    assert result.exit_code == expected, f"{step.where}: {step.command}\n{result.output}"
    if expected == 2:
        assert result.stderr == step.shown[0] + "\n"
    elif step.shown:
        assert shows(step.shown, result.output), (
            f"{step.where}: the page shows other output than\n{result.output}"
        )


@pytest.mark.parametrize(("start", "steps"), README_BLOCKS, ids=[s for s, _ in README_BLOCKS])
def test_readme_example_runs(
    start: str, steps: list[Step], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every console example of the README runs and exits as shown; a file it prints with ``cat`` (the
    trace sample, explore's commands.txt) is exactly what the command writes."""
    for step in steps:
        args = shlex.split(step.command, comments=True)
        for what, why in NOT_RUN.items():
            if args[0] == what or (what.startswith("--") and what in args):
                pytest.skip(f"{step.where}: {why}")
    if any("../shared/corpus" in step.command for step in steps) and not CORPUS.is_dir():
        pytest.skip("../shared/corpus absent")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "examples").symlink_to(EXAMPLES)
    (repo / "docs").mkdir()
    if CORPUS.is_dir():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "corpus").symlink_to(CORPUS)
    monkeypatch.chdir(repo)
    state = {"status": 0}
    for n, step in enumerate(steps):
        _run_step(step, steps[n + 1] if n + 1 < len(steps) else None, state)


def test_the_readme_has_console_examples_of_every_command() -> None:
    named = {
        s.command.split()[1]
        for _, steps in README_BLOCKS
        for s in steps
        if s.command.startswith("stencilmap ")
    }
    assert named >= set(main.commands) - {"devices"}  # type: ignore[attr-defined]


def test_shown_output_is_compared_but_for_wrapping_timings_and_ellipses() -> None:
    printed = "done in 0.094 s (kernel 0.005 s, 0.0256 GCell/s)\npredicted:  45.83 s for 100 step(s)\nlast\n"
    assert shows(
        ("done in 1.2 s (kernel 0.1 s, 3 GCell/s)", "predicted:  45.83 s", "for 100 step(s)", "..."), printed
    )
    assert not shows(
        ("done in 1.2 s (kernel 0.1 s, 3 GCell/s)", "predicted:  45.67 s for 100 step(s)", "..."), printed
    )
    assert not shows(("done in 1.2 s (kernel 0.1 s, 3 GCell/s)",), printed)  # lines left out need an ellipsis
    assert shows(("...", "last"), printed) and shows(("done in … (kernel …", "..."), printed)
