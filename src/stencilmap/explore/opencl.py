"""The optimum of a PCM design space as the OpenCL paper picks it (§4.1 eq. 1, §4.3, §5.1).

Phase 2 of the paper's design flow (§4.3, Fig. 7) searches every (P_cell, d) that fits the resource
constraint for "the minimum processing time", where the processing time is

* eq. 1, t_total = t_HF + (I_total / d)(t_ctrl + t_comp) + t_FH, with I_total / d kernel executions as the
  paper writes it (a ratio, as in eq. 11; ``explore`` counts whole launches, ⌈I_total / d⌉, which is what
  a built design runs), t_HF and t_FH the same for every candidate;
* t_comp at "the lower frequency limit" of the board (§5.1: "since our goal is to find the optimal
  architecture, we use the lower frequency limit to estimate the processing time"), not the clock a
  device's clock model predicts at the candidate's utilization.

``opencl_optimum`` runs ``explore`` over the ``pcm`` builder at the device's lower clock (``clock_mhz``
of the device file) and ranks the fitting candidates of its top list by eq. 1. Candidates equal to six
significant digits keep ``explore``'s order.
"""

from __future__ import annotations

from stencilmap.explore.report import Candidate, ExploreResult
from stencilmap.program.ir import Program

#: how many of ``explore``'s best candidates the eq. 1 ranking looks at: the two rankings differ only by
#: the rounding of I_total / d (at most one launch) and the clock, far less than 40 candidates apart
POOL = 40


def eq1_seconds(candidate: Candidate, iterations: int, launch_overhead_us: float) -> float:
    """(I_total / d)(t_ctrl + t_comp) of OpenCL eq. 1 (the candidate-dependent part of t_total), t_comp
    at the candidate's clock."""
    t_comp = candidate.cycles_per_launch / (candidate.clock_mhz * 1e6)
    return iterations / candidate.iterate * (launch_overhead_us * 1e-6 + t_comp)


def paper_ranking(result: ExploreResult, iterations: int, launch_overhead_us: float) -> tuple[Candidate, ...]:
    """The fitting candidates of ``result.top`` (an exploration of the ``pcm`` builder alone), fastest by
    eq. 1 first (ties: ``explore``'s order)."""
    pcm = [c for c in result.top if c.fits]
    return tuple(sorted(pcm, key=lambda c: float(f"{eq1_seconds(c, iterations, launch_overhead_us):.6g}")))


def opencl_optimum(program: Program, device: str, iterations: int) -> Candidate | None:
    """The (P_cell, d) the OpenCL paper's §4.3 search picks for ``program`` on ``device`` (None when no
    PCM design fits)."""
    from stencilmap.device.catalog import load_device
    from stencilmap.explore.search import explore
    from stencilmap.explore.space import ExploreConfig

    dev = load_device(device)
    config = ExploreConfig(
        program=program,
        device=device,
        archs=("pcm",),
        iterations=iterations,
        clock_mhz=dev.clock_mhz,
        top=POOL,
        simulate=False,
    )
    ranked = paper_ranking(explore(config), iterations, dev.launch_overhead_us)
    return ranked[0] if ranked else None
