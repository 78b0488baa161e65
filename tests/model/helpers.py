"""Running the model commands and writing small test programs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner, Result

from tests.conftest import EXAMPLES

runner = CliRunner()


def invoke(command: click.Command, *args: str) -> Result:
    return runner.invoke(command, [str(a) for a in args])


def run_json(command: click.Command, *args: str) -> Any:
    """Invoke ``command`` with ``--json``; it must succeed."""
    result = invoke(command, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def example(name: str) -> Path:
    return EXAMPLES / name


def write_json_program(path: Path, program: dict[str, Any]) -> Path:
    path.write_text(json.dumps(program), encoding="utf-8")
    return path


def star_program(radius: int, dims: list[int], dtype: str = "float64") -> dict[str, Any]:
    """A (4r + 1)-point 2-D star (or 2r + 1-point 1-D) stencil of products c_n × u[...], shrinking at the
    border: CGRA §VI's stencils (1 MUL + 4r MACs per worker in 2-D)."""
    axes = ["j", "k"][-len(dims) :]
    terms = [f"c0 * u[{', '.join(axes)}]"]
    for d in range(1, radius + 1):
        for axis in range(len(dims)):
            for sign in (1, -1):
                index = [f"{a}{sign * d:+d}" if n == axis else a for n, a in enumerate(axes)]
                terms.append(f"c{len(terms)} * u[{', '.join(index)}]")
    return {
        "inputs": {"u": {"data": "random:0-1", "data_type": dtype}},
        "outputs": ["v"],
        "dimensions": dims,
        "constants": {f"c{n}": 0.01 for n in range(len(terms))},
        "program": {
            "v": {
                "computation_string": "v = " + " + ".join(terms),
                "boundary_conditions": {"u": {"type": "shrink"}},
                "data_type": dtype,
            }
        },
    }
