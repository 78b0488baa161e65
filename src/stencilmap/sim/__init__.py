"""The cycle-level simulator: executes a Design IR with real values through bounded FIFOs."""

from stencilmap.sim.interface import Deadlock, ModuleStats, SimConfig, SimResult, Waiting, simulate

__all__ = ["Deadlock", "ModuleStats", "SimConfig", "SimResult", "Waiting", "simulate"]
