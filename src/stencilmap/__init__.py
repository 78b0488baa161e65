"""stencilmap: stencil programs onto spatial dataflow hardware.

Front ends (SODA DSL, StencilFlow JSON) produce one Program IR; the NumPy reference executor defines
its semantics; later stages build, simulate and model hardware from it; host backends (compiled CPU,
Dask, GPU) run it fast. ``stencilmap.run(program, inputs, backend=...)`` is the Python API of ``run``.

The API is imported on first use (PEP 562), so ``import stencilmap`` — and the command line's ``--help`` —
stay instant.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from stencilmap.api import run

__all__ = ["__version__", "run"]


def __getattr__(name: str) -> Any:
    if name == "run":
        from stencilmap.api import run

        return run
    raise AttributeError(f"module 'stencilmap' has no attribute {name!r}")
