"""stencilmap: stencil programs onto spatial dataflow hardware.

Front ends (SODA DSL, StencilFlow JSON) produce one Program IR; the NumPy reference executor defines
its semantics; later stages build, simulate and model hardware from it.
"""

__version__ = "0.1.0"
