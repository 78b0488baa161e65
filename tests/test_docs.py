"""The documentation's tutorials run as written: each tutorial's "From program to code and report" commands
(all but ``compile``, which tests/jobs covers) exit 0 from a folder holding the examples. ``make docs``
builds the site strictly (links, anchors, the generated CLI and API references)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

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
