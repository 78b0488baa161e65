"""Performance formulas of the papers, as pure functions (units: seconds, hertz, bytes/s, points).

The cycle count of one pass is the analysis's C = L + ⌈N / P⌉ (``analysis.timing.runtime_cycles``:
StencilFlow §VIII-A eq. 1 with I = 1; SODA §4.4 and OpenCL eq. 5 have the same shape). This module adds
what turns cycles into time on a device: the bandwidth-bound scenario, launches, host transfers and
control, SODA's ideal throughput with tile halos, and the roofline.
"""

from __future__ import annotations

from math import ceil, prod
from typing import Literal

Scenario = Literal["compute", "bandwidth"]


def required_bandwidth(bytes_per_point: float, lanes: int, f_hz: float) -> float:
    """B_req = (S_input + S_output) × P_cell × f_core, bytes/s (OpenCL eq. 2; SODA eq. 4: k·f·W)."""
    return bytes_per_point * lanes * f_hz


def scenario(b_req: float, b_prac: float) -> Scenario:
    """Scenario 1 (compute) when B_req < B_prac, else scenario 2 (bandwidth) (OpenCL eq. 4)."""
    return "compute" if b_req < b_prac else "bandwidth"


def compute_seconds(cycles: float, f_hz: float, b_req: float, b_prac: float) -> float:
    """t_comp of one kernel execution (OpenCL eqs. 5–6): cycles / f in scenario 1, stretched by
    B_req / B_prac in scenario 2 (memory delivers one cycle's data every B_req / B_prac cycles)."""
    stretch = b_req / b_prac if scenario(b_req, b_prac) == "bandwidth" else 1.0
    return cycles / f_hz * stretch


def launches(iterations: int, q: int) -> int:
    """Kernel executions for ``iterations`` time steps with ``q`` chained on chip: ⌈I_total / d⌉.

    OpenCL eq. 1 writes I_total / d; a whole number of launches is what runs (the last may bypass
    stages it does not need, at the same streaming cost).
    """
    return max(1, ceil(iterations / q))


def total_seconds(t_hf: float, n_launches: int, t_ctrl: float, t_comp: float, t_fh: float) -> float:
    """t_total = t_HF + (I_total / d) × (t_ctrl + t_comp) + t_FH (OpenCL eq. 1)."""
    return t_hf + n_launches * (t_ctrl + t_comp) + t_fh


def opencl_latency_cycles(d: int, rows: int, row_length: int, cols: int, p_cell: int) -> float:
    """The pipeline-latency term of OpenCL eq. 5 in cycles: d((q − 1)N + p + 1) / (2·P_cell) + d, for a
    p × q window (``cols`` × ``rows``) over rows of N = ``row_length`` cells."""
    return d * (((rows - 1) * row_length + cols + 1) / (2 * p_cell) + 1)


def opencl_compute_cycles(d: int, rows: int, row_length: int, cols: int, p_cell: int, points: int) -> float:
    """t_comp^Scenario1 × f_core of OpenCL eq. 5: {d((q − 1)N + p + 1)/2 + d·P_cell + N·M} / P_cell."""
    return opencl_latency_cycles(d, rows, row_length, cols, p_cell) + points / p_cell


def soda_ideal_throughput(
    k: int, q: int, f_hz: float, tile: tuple[int, ...], window: tuple[int, ...]
) -> float:
    """H_ideal(k, q, T) = k·q·f·∏_d (T_d − q(S_d − 1)) / T_d in points/s (SODA §4.4, eq. 2).

    ``tile``: T_d of every tiled dimension (SODA's first m − 1, i.e. all but the outermost in C order);
    ``window``: the stencil window size S_d of one iteration in those dimensions. Each of the q stages
    counts its points (the paper's throughput of an iterative kernel).
    """
    if len(tile) != len(window):
        raise ValueError("tile and window must give the same dimensions")
    return k * q * f_hz * prod(max(0, t - q * (s - 1)) / t for t, s in zip(tile, window, strict=True))


def attainable_gops(peak_gops: float, intensity: float, bandwidth_gbs: float) -> float:
    """The roofline: min(peak, intensity × bandwidth) (Williams et al., used by OpenCL §5.3, CGRA §VI,
    StencilFlow §IX-A eq. 3)."""
    return min(peak_gops, intensity * bandwidth_gbs)


def ridge_intensity(peak_gops: float, bandwidth_gbs: float) -> float:
    """The intensity where the bandwidth slope meets the compute ceiling."""
    return peak_gops / bandwidth_gbs


def gops(ops: float, seconds: float) -> float:
    """Operations per second in 10⁹."""
    return ops / seconds / 1e9 if seconds > 0 else 0.0
