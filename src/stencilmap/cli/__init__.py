"""The ``stencilmap`` command line: parse options, call a job (``stencilmap.jobs``), print. One module per
command; this one holds the group and registers them. Every command imports its job when it runs, so that
``--help`` answers at once."""

from __future__ import annotations

from typing import Any

import click

from stencilmap import __version__
from stencilmap.cli.common import StencilmapGroup


@click.group(cls=StencilmapGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stencilmap")
def main() -> None:
    """stencilmap: stencil programs (SODA .soda, StencilFlow .json) onto spatial dataflow hardware.

    \b
    Examples:
      stencilmap compile examples/jacobi2d.soda --device ku060 --out out/jacobi2d_ku060
      stencilmap run examples/jacobi2d.soda
      stencilmap analyze examples/dag_listing1.json --dot dag.dot
      stencilmap simulate examples/jacobi2d.soda --device ku060
      stencilmap explore examples/jacobi2d.soda --device ku060 --shape 4096,4096
    """


#: The commands, in the order they were registered; each module is imported when its command runs (or when
#: ``--help`` lists them all).
_COMMANDS = (
    "run",
    "analyze",
    "simulate",
    "explore",
    "devices",
    "estimate",
    "roofline",
    "calibrate",
    "codegen",
    "compile",
)

for _name in _COMMANDS:
    main.add_lazy_command(_name, f"stencilmap.cli.{_name}", f"{_name}_cmd")


def __getattr__(name: str) -> Any:
    """``<command>_cmd``, the command's click object (``from stencilmap.cli import run_cmd``), imported when
    first asked for."""
    command = name.removesuffix("_cmd")
    if name.endswith("_cmd") and command in _COMMANDS:
        return main.get_command(click.Context(main), command)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["main"]
