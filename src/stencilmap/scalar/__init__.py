"""One scalar semantics for every executor (REDESIGN §1): a stencil's expression lowered once to a typed
SSA list (``lower``) in which every case C leaves undefined is a named operation (``ops``), rendered as C
by one printer with dialects (``render``) whose helper functions come from one table (``helpers``).

The NumPy reference (``backends/reference.py``) does not go through this package: it stays the oracle.
Imports ``stencilmap.program`` and ``stencilmap.errors`` only.
"""

from __future__ import annotations

from stencilmap.scalar.kernel import (
    Inside,
    Lit,
    Op,
    Param,
    Read,
    ScalarKernel,
    TempValue,
    Undefined,
    Unsupported,
    Value,
)
from stencilmap.scalar.lower import lower

__all__ = [
    "Inside",
    "Lit",
    "Op",
    "Param",
    "Read",
    "ScalarKernel",
    "TempValue",
    "Undefined",
    "Unsupported",
    "Value",
    "lower",
]
