"""Program IR, its front ends (SODA DSL, StencilFlow JSON) and its invariants."""

from stencilmap.program.ir import Program
from stencilmap.program.load import load_program

__all__ = ["Program", "load_program"]
