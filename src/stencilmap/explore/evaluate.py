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
from stencilmap.model.timing import launch_cycles, pins_banks, port_bits
from stencilmap.model.workload import workload

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class LaneTimes:
    """Predictions for one lanes value of one builder: arrays over (q, tile)."""

    cycles: Array  # one launch, bandwidth included
    seconds: Array  # all T time steps (inf where the tiling does not exist)
    launches: Array  # (q, 1)
    bandwidth_bound: Array  # a bank, not the pipeline, sets the steady rate


def lane_times(
    space: Space, tables: ArchTables, lane: int, clock_mhz: Array | None = None, tile: int | None = None
) -> LaneTimes:
    """Predicted cycles and seconds of every (q, tile) candidate with ``tables.lanes[lane]`` lanes.

    ``clock_mhz``: the clock of every q (shape (q_max,): the device's clock model at each point's
    utilization), default ``space.bound_clock_mhz``; ``tile``: only that tile column (shape (q, 1)).
    """
    device = space.device
    cols = slice(None) if tile is None else slice(tile, tile + 1)
    mhz: Array = np.full((space.q_max, 1), space.bound_clock_mhz) if clock_mhz is None else clock_mhz[:, None]
    f_hz = mhz * 1e6
    # a bank's bytes per design cycle scale as 1 / f (OpenCL eq. 3 over f_core): (q, 1, 1) over (q, t, bank)
    # … at the plateau of its access points' width (StencilFlow §VIII-D, Fig. 16: ``Device.bank_rate``)
    bits = port_bits(space.program, int(tables.lanes[lane]))
    rate = (device.bank_rate(pins_banks(space.program), 1.0, bits) / mhz)[:, :, None]
    vectors = tables.vectors[:, cols, lane].astype(np.float64)
    read = tables.read_bytes[:, cols] / vectors[:, :, None]
    write = tables.write_bytes[None, None, :] / vectors[:, :, None]
    chain = tables.chain_rate[None, cols, lane]
    bubble = (tables.tile_count[:, cols] - 1) * tables.reach[None, cols, lane]
    cycles = launch_cycles(
        tables.latency[:, cols, lane].astype(np.float64),
        tables.drain[:, cols, lane].astype(np.float64),
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
    seconds = np.where(tables.valid[:, cols], seconds, np.inf)
    return LaneTimes(cycles, seconds, launches, shared < np.minimum(1.0, chain))
