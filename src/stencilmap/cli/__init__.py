"""The ``stencilmap`` command line: parse options, call a job (``stencilmap.jobs``), print. One module per
command; this one holds the group and registers them. Every command imports its job when it runs, so that
``--help`` answers at once."""

from __future__ import annotations

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


from stencilmap.cli.analyze import analyze_cmd  # noqa: E402
from stencilmap.cli.calibrate import calibrate_cmd  # noqa: E402
from stencilmap.cli.codegen import codegen_cmd  # noqa: E402
from stencilmap.cli.compile import compile_cmd  # noqa: E402
from stencilmap.cli.devices import devices_cmd  # noqa: E402
from stencilmap.cli.estimate import estimate_cmd  # noqa: E402
from stencilmap.cli.explore import explore_cmd  # noqa: E402
from stencilmap.cli.roofline import roofline_cmd  # noqa: E402
from stencilmap.cli.run import run_cmd  # noqa: E402
from stencilmap.cli.simulate import simulate_cmd  # noqa: E402

main.add_command(run_cmd)
main.add_command(analyze_cmd)
main.add_command(simulate_cmd)
main.add_command(explore_cmd)
main.add_command(devices_cmd)
main.add_command(estimate_cmd)
main.add_command(roofline_cmd)
main.add_command(calibrate_cmd)
main.add_command(codegen_cmd)
main.add_command(compile_cmd)

__all__ = ["main"]
