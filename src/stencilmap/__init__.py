"""stencilmap: stencil programs onto spatial dataflow hardware.

Front ends (SODA DSL, StencilFlow JSON) produce one Program IR; the NumPy reference executor defines
its semantics; later stages build, simulate and model hardware from it, emit code for vendor flows;
host backends (compiled CPU, Dask, GPU) run it fast.

The Python API (``stencilmap.api``), each function taking objects and arrays::

    import stencilmap as sm
    prog = sm.load("examples/jacobi2d.soda", shape=(256, 256))
    out = sm.run(prog, backend="cpu").outputs          # the reference with backend="numpy"
    design = sm.build(prog, "soda", unroll=4, iterate=2)
    sim = sm.simulate(prog, design, device="ku060")     # .valid, .cycles, .outputs, .stalls
    sm.estimate(prog, "ku060", "soda", unroll=4)        # predicted time, bandwidth, resources
    sm.split(prog, "stratix10", devices=2)              # a StencilFlow design over 2 boards
    sm.explore(prog, "ku060").best                      # the design-space search
    sm.codegen(design, "hls", "out/code", verify=True)  # vendor code, run here
    sm.compile(prog, "ku060", "out/job")                # all of it, with the report

Errors are ``stencilmap.Error``. The API is imported on first use (PEP 562), so ``import stencilmap`` —
and the command line's ``--help`` — stay instant.
"""

import sys
import types
from typing import TYPE_CHECKING, Any

from stencilmap.errors import StencilmapError as Error

__version__ = "0.1.0"

if TYPE_CHECKING:
    from stencilmap.api import (
        Simulation,
        build,
        calibrate,
        codegen,
        compile,
        estimate,
        explore,
        load,
        run,
        simulate,
        split,
    )

__all__ = [
    "Error",
    "Simulation",
    "__version__",
    "build",
    "calibrate",
    "codegen",
    "compile",
    "estimate",
    "explore",
    "load",
    "run",
    "simulate",
    "split",
]


class _ApiFunction:
    """``stencilmap.<name>`` is the API function, imported on first use — even where a subpackage has the
    same name (``stencilmap.explore`` is the search's package too): importing it would otherwise rebind the
    package attribute to the module. The subpackage stays importable by its dotted name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        from stencilmap import api

        return getattr(api, self.name)

    def __set__(self, obj: object, value: object) -> None:
        return None  # the import system binding a same-named submodule: the function stays


class _Package(types.ModuleType):
    pass


for _name in (n for n in __all__ if n not in ("Error", "__version__")):
    setattr(_Package, _name, _ApiFunction(_name))
sys.modules[__name__].__class__ = _Package
