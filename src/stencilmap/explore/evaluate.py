"""The analytical model over candidate arrays: predicted time of every (q, tile) point of one lanes value.

Exactly ``model.estimate``'s arithmetic (``tests/explore`` compares them point by point): cycles of one
launch from ``model.timing.launch_cycles``, ⌈T / q⌉ launches, host transfers and control
(OpenCL eq. 1) — computed with NumPy over all points at once instead of building a design per point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.explore.space import Space
from stencilmap.explore.tables import ArchTables
from stencilmap.model.report import host_seconds
from stencilmap.model.timing import launch_cycles, memory_rate
from stencilmap.model.workload import workload

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class LaneTimes:
    """Predictions for one lanes value of one builder: arrays over (q, tile)."""

    cycles: Array  # one launch, bandwidth included
    seconds: Array  # all T time steps (inf where the tiling does not exist)
    launches: Array  # (q, 1)
    bandwidth_bound: Array  # a bank, not the pipeline, sets the steady rate


def lane_times(space: Space, tables: ArchTables, lane: int) -> LaneTimes:
    """Predicted cycles and seconds of every (q, tile) candidate with ``tables.lanes[lane]`` lanes."""
    device = space.device
    f_hz = space.clock_mhz * 1e6
    rate = memory_rate(device, space.program, space.clock_mhz)
    vectors = tables.vectors[:, :, lane].astype(np.float64)
    read = tables.read_bytes / vectors[:, :, None]
    write = tables.write_bytes[None, None, :] / vectors[:, :, None]
    chain = tables.chain_rate[None, :, lane]
    bubble = (tables.tile_count - 1) * tables.reach[None, :, lane]
    cycles = launch_cycles(
        tables.latency[:, :, lane].astype(np.float64),
        tables.drain[:, :, lane].astype(np.float64),
        vectors,
        chain,
        bubble.astype(np.float64),
        read,
        write,
        rate,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        shared = np.where(read + write > 0, rate / (read + write), np.inf).min(axis=-1)
    q = np.arange(1, space.q_max + 1)[:, None]
    launches = np.maximum(1, -(-space.iterations // q))
    t_hf, t_fh = host_seconds(workload(space.program, space.shape), device)
    t_ctrl = device.launch_overhead_us * 1e-6
    seconds = t_hf + launches * (t_ctrl + cycles / f_hz) + t_fh
    seconds = np.where(tables.valid, seconds, np.inf)
    return LaneTimes(cycles, seconds, launches, shared < np.minimum(1.0, chain))
