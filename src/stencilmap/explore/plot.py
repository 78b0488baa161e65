"""The design-space picture: predicted time against the binding resource's utilization, per builder.

Every resource-checked point is drawn (subsampled by ``search.CLOUD_POINTS``): feasible ones in their
builder's colour, those over the device's limits in grey; the Pareto front of the feasible points (no
other point is both faster and smaller) is a staircase, the winner a star. Written like the roofline
(``model.plot``): a bare Agg figure, SVG without a date, through a temporary file and a rename.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from stencilmap.explore.report import ExploreResult
from stencilmap.model.plot import save_figure

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn
    from matplotlib.figure import Figure

Array = npt.NDArray[Any]
#: the utilization axis ends here (%): points far over the limits would squeeze the feasible ones
X_MAX = 150


def write_space_plot(path: Path, result: ExploreResult) -> None:
    """Draw ``result``'s design space into ``path`` (``.png`` or ``.svg``)."""
    save_figure(path, lambda: space_figure(result))


def pareto_front(util: Array, seconds: Array) -> tuple[Array, Array]:
    """The points no other point dominates (smaller utilization and time), by increasing utilization."""
    order = np.lexsort((seconds, util))
    best = np.minimum.accumulate(seconds[order])
    keep = np.ones(order.size, dtype=bool)
    keep[1:] = best[1:] < best[:-1]
    return util[order][keep], seconds[order][keep]


def space_figure(result: ExploreResult) -> Figure:
    """The labelled scatter of ``result.cloud`` with its Pareto front and winner."""
    cloud, space = result.cloud, result.space
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.2, 4.8))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.set_yscale("log")
    shown = cloud.utilization <= X_MAX / 100
    over = ~cloud.fits & shown
    if over.any():
        beyond = int((~shown).sum())
        more = f" ({beyond:,} more beyond {X_MAX}%)" if beyond else ""
        ax.scatter(
            100 * cloud.utilization[over],
            cloud.seconds[over],
            s=4,
            color="0.8",
            lw=0,
            label=f"over the device's limits{more}",
            rasterized=True,
        )
    for i, arch in enumerate(space.archs):
        mine = cloud.fits & (cloud.arch == i)
        if mine.any():
            ax.scatter(
                100 * cloud.utilization[mine],
                cloud.seconds[mine],
                s=6,
                color=f"C{i}",
                lw=0,
                label=f"{arch} (fits)",
                rasterized=True,
            )
    if cloud.fits.any():
        u, t = pareto_front(cloud.utilization[cloud.fits], cloud.seconds[cloud.fits])
        ax.step(100 * u, t, where="post", color="k", lw=1.2, label="Pareto front")
    best = result.best
    if best is not None:
        util = dict(best.utilization)[best.binding]
        ax.plot(
            [100 * util],
            [best.predicted_seconds],
            "*",
            ms=12,
            color="gold",
            mec="k",
            label=_label(best.arch, best.lanes, best.iterate, best.tile, best.predicted_seconds),
        )
    ax.axvline(100, color="0.4", lw=0.8, ls="--")
    ax.set_xlim(0, X_MAX)
    ax.set_xlabel("utilization of the binding resource (%)")
    ax.set_ylabel(f"predicted time, {space.iterations} time step(s) (s)")
    shape = "×".join(str(n) for n in space.shape)
    ax.set_title(f"{space.program.name} ({shape}) on {space.device.name}: {result.points_evaluated:,} points")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    return figure


def _label(arch: str, lanes: int, q: int, tile: tuple[int, ...] | None, seconds: float) -> str:
    tiles = "" if tile is None else f", tile {'×'.join(str(t) for t in tile)}"
    return f"best: {arch}, P = {lanes}, q = {q}{tiles}: {seconds:.4g} s"
