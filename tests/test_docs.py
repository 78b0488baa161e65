"""The documentation's tutorials run as written: each tutorial's "From program to code and report" commands
(all but ``compile``, which tests/jobs covers) exit 0 from a folder holding the examples; every ``python``
block of the README and the pages runs and prints what its comments show. ``make docs``
builds the site strictly (links, anchors, the generated CLI and API references)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import stencilmap as sm
from stencilmap.cli import main
from tests.conftest import EXAMPLES, ROOT

TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
HEADING = "## From program to code and report"


def walkthrough(page: Path) -> list[list[str]]:
    text = page.read_text(encoding="utf-8")
    assert HEADING in text, f"{page.name} has no walk-through"
    block = text[text.index(HEADING) :]
    block = block[
        block.index("```console") + len("```console") : block.index("```", block.index("```console") + 3)
    ]
    commands = []
    for line in block.strip().splitlines():
        args = shlex.split(line.removeprefix("$ ").split("  #")[0])
        assert args[0] == "stencilmap", line
        commands.append(args[1:])
    return commands


def test_every_seed_system_has_a_tutorial() -> None:
    assert {p.stem for p in TUTORIALS} == {"soda", "stencilflow", "opencl-pcm", "cgra", "emax"}


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_the_walkthrough_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").symlink_to(EXAMPLES)
    monkeypatch.chdir(tmp_path)
    for args in walkthrough(page):
        if args[0] == "compile":
            continue
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, f"stencilmap {shlex.join(args)}:\n{result.output}"


PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks() -> list[tuple[str, str]]:
    """Every ``python`` block of the README and the documentation, as (page:line, code)."""
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in PYTHON_BLOCK.finditer(text):
            line = text[: m.start()].count("\n") + 1
            blocks.append((f"{page.relative_to(ROOT)}:{line}", m.group(1)))
    return blocks


def printed_as_shown(code: str, printed: str) -> None:
    """A ``print(...)  # shown`` line's comment is what it printed (an ellipsis stands for the rest)."""
    shown = [
        ln.split("# ", 1)[1].strip() for ln in code.splitlines() if ln.startswith("print(") and "# " in ln
    ]
    lines = printed.splitlines()
    assert len(shown) <= len(lines), printed
    for want, got in zip(shown, lines, strict=False):
        pattern = ".*".join(re.escape(piece) for piece in want.split("..."))
        assert re.fullmatch(pattern, got.strip()), f"the page shows {want!r}, the code printed {got!r}"


@pytest.mark.parametrize(("where", "code"), python_blocks(), ids=[w for w, _ in python_blocks()])
def test_python_examples_run_as_written(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Scripts run from a folder holding the examples and print what their comments show; a program written in
    Python (the pages restate examples/jacobi2d.soda) loads and computes what the SODA program does."""
    (tmp_path / "examples").symlink_to(EXAMPLES)
    monkeypatch.chdir(tmp_path)
    if "stencilmap.lang" in code:
        (tmp_path / "prog.py").write_text(code)
        prog = sm.load(tmp_path / "prog.py", shape=(16, 64))
        soda = sm.load(EXAMPLES / "jacobi2d.soda", shape=(16, 64))
        v = np.random.default_rng(0).random((16, 64), dtype=np.float32)
        assert np.array_equal(sm.run(prog, {"v": v}).outputs["w"], sm.run(soda, {"v": v}).outputs["w"])
        return
    exec(compile(code, where, "exec"), {"__name__": "__main__"})  # the page's own example
    printed_as_shown(code, capsys.readouterr().out)
