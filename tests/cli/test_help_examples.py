"""Every example command shown in a ``--help`` text runs (in a temporary folder, with the bundled examples;
an ``--input NAME=FILE.npy`` it names is made first; explore's grid is made smaller to keep this quick)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from stencilmap.cli import main
from stencilmap.program import load_program
from stencilmap.program.data import bind_shape, make_inputs
from tests.conftest import EXAMPLES

runner = CliRunner()


def help_examples() -> list[str]:
    """The ``stencilmap ...`` lines of every ``Example(s):`` block of the group's and each command's help."""
    commands: list[click.Command] = [main, *main.commands.values()]  # type: ignore[attr-defined]
    found: list[str] = []
    for command in commands:
        text = (command.help or "").replace("\\\n", " ")
        _, sep, block = text.partition("Example")
        assert sep, f"'{command.name}' --help shows no example"
        found += [
            " ".join(line.split()) for line in block.splitlines() if line.strip().startswith("stencilmap ")
        ]
    return found


EXAMPLE_COMMANDS = help_examples()


def test_every_command_has_examples() -> None:
    named = {line.split()[1] for line in EXAMPLE_COMMANDS}
    assert named == set(main.commands)  # type: ignore[attr-defined]


def _make_inputs(args: list[str], cwd: Path) -> None:
    """Write each ``--input NAME=FILE`` the example supplies, with the program's shape and dtype."""
    if "--input" not in args:
        return
    program = bind_shape(load_program(cwd / args[1]), {})
    values = make_inputs(program, {}, 0)
    for i, arg in enumerate(args):
        if arg == "--input":
            name, _, file = args[i + 1].partition("=")
            np.save(cwd / file, values[name])


@pytest.mark.parametrize("line", EXAMPLE_COMMANDS)
def test_help_example_runs(line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").symlink_to(EXAMPLES)
    monkeypatch.chdir(tmp_path)
    args = shlex.split(line)[1:]
    if args[0] == "explore":
        args = [re.sub(r"^4096,4096$", "256,256", a) for a in args]
    _make_inputs(args, tmp_path)
    result = runner.invoke(main, args)
    expected = 1 if "--delay-buffers" in args and "min" in args else 0  # shown to make a deadlock
    assert result.exit_code == expected, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
