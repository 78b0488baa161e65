"""Design-space exploration: the best builder parameters of a program on a device, then its simulation.

``explore(ExploreConfig(program, device, ...))`` searches the lanes (SODA k, PCM P_cell, StencilFlow W),
the iterate factor q and SODA's tile sizes under the device's resources (``space``), evaluating the
analytical model of ``model`` over NumPy arrays of candidates (``tables``, ``evaluate``), pruning by
branch-and-bound (``search``), and simulates the winner (``winner``).

Imports ``model``, ``design``, ``analysis``, ``program`` and ``sim``; only the CLI imports it.
"""

from stencilmap.explore.report import Candidate, ExploreResult, WinnerCheck
from stencilmap.explore.search import explore
from stencilmap.explore.space import ExploreConfig, Space, design_space

__all__ = ["Candidate", "ExploreConfig", "ExploreResult", "Space", "WinnerCheck", "design_space", "explore"]
