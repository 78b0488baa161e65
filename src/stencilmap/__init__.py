"""stencilmap: stencil programs onto spatial dataflow hardware.

Front ends (SODA DSL, StencilFlow JSON) produce one Program IR; the NumPy reference executor defines
its semantics; later stages build, simulate and model hardware from it; host backends (compiled CPU,
Dask, GPU) run it fast. ``stencilmap.run(program, inputs, backend=...)`` is the Python API of ``run``.
"""

__version__ = "0.1.0"

# The ``run`` job module is loaded first so that importing it later cannot rebind ``stencilmap.run`` (a
# submodule import sets the package attribute): the name stays the API function. Both are light imports
# (NumPy, the front ends); numba, dask and cupy are imported only by the backends that use them.
import stencilmap.run as _run_job  # noqa: F401
from stencilmap.api import run

__all__ = ["__version__", "run"]
