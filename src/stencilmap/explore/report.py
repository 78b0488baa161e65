"""What ``explore`` answers: the best candidates, how much of the space it looked at, the simulated winner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.explore.space import Space

Array = npt.NDArray[Any]

#: the parameter names of the lanes per builder, as ``estimate`` and the builders call them
LANE_PARAMETER = {"soda": "unroll", "pcm": "unroll", "stencilflow": "vector"}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One point of the space with its prediction."""

    arch: str
    lanes: int
    iterate: int
    tile: tuple[int, ...] | None  # SODA tile sizes of the inner axes; None: untiled
    tiles: int  # tiles per launch
    cycles_per_launch: float
    launches: int
    predicted_seconds: float
    scenario: str
    utilization: tuple[tuple[str, float], ...]  # used / available, by resource
    limits: tuple[tuple[str, float], ...]
    clock_mhz: float = 0.0  # the design's clock: the explored one, or the device's clock model's

    @property
    def binding(self) -> str:
        """The resource with the highest utilization."""
        return max(self.utilization, key=lambda kv: (kv[1], kv[0]))[0]

    @property
    def fits(self) -> bool:
        limits = dict(self.limits)
        return all(u <= limits.get(n, 1.0) for n, u in self.utilization)

    def parameters(self) -> dict[str, Any]:
        """``arch``, ``unroll`` / ``vector``, ``iterate``, ``tile``: what ``estimate`` takes."""
        from stencilmap.arch import arch

        option = arch(self.arch).lanes_option
        unroll = self.lanes if option == "unroll" else None
        vector = self.lanes if option == "vector" else None
        return {
            "arch": self.arch,
            "unroll": unroll,
            "vector": vector,
            "iterate": self.iterate,
            "tile": None if self.tile is None else list(self.tile),
        }

    def throughput(self, space: Space) -> float:
        """Grid points updated per second, all T time steps (G points / s)."""
        points = float(np.prod(space.shape)) * space.iterations
        return points / self.predicted_seconds / 1e9

    def to_json(self, space: Space) -> dict[str, Any]:
        return {
            **self.parameters(),
            "lanes": self.lanes,
            "tiles": self.tiles,
            "predicted_seconds": self.predicted_seconds,
            "cycles_per_launch": self.cycles_per_launch,
            "launches": self.launches,
            "throughput_gpoints_per_s": self.throughput(space),
            "scenario": self.scenario,
            "clock_mhz": self.clock_mhz,
            "binding_resource": self.binding,
            "utilization": {n: round(u, 6) for n, u in self.utilization},
            "fits": self.fits,
        }


@dataclass(frozen=True, slots=True)
class WinnerCheck:
    """The winner built on a (possibly scaled-down) shape and simulated with the device's bandwidth."""

    shape: tuple[int, ...]
    scaled: bool
    bytes_per_cycle_per_bank: float
    predicted_cycles: float
    simulated_cycles: int
    status: str
    wall_seconds: float
    note: str = ""

    @property
    def prediction_error(self) -> float | None:
        """(predicted − simulated) / simulated, None when the simulation did not finish."""
        if self.status != "done" or self.simulated_cycles <= 0:
            return None
        return (self.predicted_cycles - self.simulated_cycles) / self.simulated_cycles

    def to_json(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "scaled": self.scaled,
            "bytes_per_cycle_per_bank": self.bytes_per_cycle_per_bank,
            "predicted_cycles": self.predicted_cycles,
            "simulated_cycles": self.simulated_cycles,
            "status": self.status,
            "prediction_error": self.prediction_error,
            "wall_seconds": self.wall_seconds,
            "note": self.note,
        }


@dataclass(frozen=True)
class Cloud:
    """Points whose resources were checked, for the design-space picture (subsampled)."""

    seconds: Array
    utilization: Array  # of the binding resource
    arch: Array  # index into ``Space.archs``
    fits: Array


@dataclass(frozen=True)
class ExploreResult:
    space: Space
    top: tuple[Candidate, ...]
    space_size: int
    points_evaluated: int  # predicted time computed
    points_checked: int  # resources computed too
    points_pruned: int  # in branches whose time bound could not beat the top candidates
    points_feasible: int
    designs_built: int
    seconds: float
    cloud: Cloud
    winner: WinnerCheck | None = None
    notes: tuple[str, ...] = ()

    @property
    def best(self) -> Candidate | None:
        return self.top[0] if self.top else None

    @property
    def points_per_second(self) -> float:
        return self.points_evaluated / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        s = self.space
        best: dict[str, Any] | None = None
        if self.best is not None:
            best = self.best.to_json(s)
            best["prediction_error"] = None if self.winner is None else self.winner.prediction_error
            best["simulation"] = None if self.winner is None else self.winner.to_json()
        return {
            "program": s.program.name,
            "device": s.device.name,
            "shape": list(s.shape),
            "iterations": s.iterations,
            "clock_mhz": s.clock_mhz,
            "clock_model": s.clock_model is not None,
            "archs": list(s.archs),
            "lanes": list(s.lanes),
            "max_iterate": s.q_max,
            "space_size": self.space_size,
            "points_evaluated": self.points_evaluated,
            "points_checked": self.points_checked,
            "points_pruned": self.points_pruned,
            "points_feasible": self.points_feasible,
            "designs_built": self.designs_built,
            "search_seconds": self.seconds,
            "points_per_second": self.points_per_second,
            "best": best,
            "top": [c.to_json(s) for c in self.top],
            "notes": list(self.notes),
        }
