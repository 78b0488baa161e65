"""Fitting a device's resource model to synthesized designs (OpenCL §4.2 phase 1, SODA §4.3).

The OpenCL paper's phase 1 compiles "a few kernels that have different d and P_cell values" and solves
eqs. 9–10, R = d(P_cell·R_PE + R_shift) + R_base, for R_base, R_PE and R_shift ("at least two kernels").
SODA §4.3 models a design as the sum of its modules — compute (R_CP per PE), forwarding (R_FW, linear in
fanout) and auxiliary (R_AUX, a constant) — with coefficients "obtained from a series of pre-executed
HLS results". Both are one linear least-squares problem per resource R over the synthesized designs i:

    used_R(i) − storage_R(i) = θ_base + θ_compute · x_compute(i) + θ_forward · x_forward(i)

where storage_R is the designs' RAM (the geometry of their buffers on the device's blocks or bits, SODA
§4.3 Θ(ω, n) — not a coefficient) and each x is the named device's own cost of that category on design i
(its *prior*), so θ is the factor that scales the prior's PE costs (pe module + operators) or forwarding
logic to the measured designs. Where the prior puts none of R in a category, x counts units instead (PE
lanes; forwarding modules, per 32-bit word) and θ is the cost of one unit. For a PCM design x_compute =
d·P_cell·R_PE' and x_forward = d·R_shift': the OpenCL equations, term by term.

The coefficients are non-negative (``scipy.optimize.nnls``). A category absent from every design (all-zero
column) is not fitted and keeps the prior. The fit refuses rows that cannot determine the others: fewer
rows than terms, or columns that are linearly dependent (PE lanes ∝ stages when ``unroll`` never varies).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from stencilmap.device.catalog import Cost
from stencilmap.errors import StencilmapError

TermName = Literal["base", "compute", "forwarding"]
TERM_LABELS: dict[str, str] = {
    "base": "auxiliary (R_base / R_AUX)",
    "compute": "per PE lane (R_PE / R_CP)",
    "forwarding": "per forwarding module (R_shift / R_FW)",
}


@dataclass(frozen=True, slots=True)
class DesignTerms:
    """What one built design is made of, as the fit sees it (priors from the named device's model)."""

    unroll: int
    iterate: int
    lanes: int  # PE lanes (SODA k·q, PCM P_cell·d, StencilFlow W per PE)
    forwarding_words: int  # forwarding modules, each counted per 32-bit word of its data type
    forwarding_kinds: tuple[str, ...]  # the module kinds among them
    compute: Cost  # the prior's cost of the PEs (pe module + their operators)
    forwarding_logic: Cost  # the prior's logic of the forwarding modules (fixed + per fanout)
    storage: Cost  # RAM of buffers and channels (not fitted)


@dataclass(frozen=True, slots=True)
class Term:
    """One fitted term of a resource: ``mode`` ``scale`` (θ multiplies the prior's cost) or ``count``
    (θ is the cost of one unit); ``per_unit``: θ as a cost per unit (per PE lane, per module word)."""

    name: TermName
    mode: Literal["constant", "scale", "count"]
    theta: float
    per_unit: float


@dataclass(frozen=True, slots=True)
class ResourceFit:
    """The fitted model of one resource over the fitted rows."""

    resource: str
    terms: tuple[Term, ...]
    unfitted: tuple[str, ...]  # categories absent from every design: the prior is kept

    def term(self, name: str) -> Term | None:
        return next((t for t in self.terms if t.name == name), None)

    def predict(self, row: DesignTerms) -> float:
        """used_R of ``row`` under the fit (the same sum the written device file gives)."""
        total = row.storage[self.resource]
        for t in self.terms:
            total += t.theta * column(t.name, t.mode, self.resource, row)
        return total


def column(name: str, mode: str, resource: str, row: DesignTerms) -> float:
    """x of term ``name`` on ``row``: 1 for the base, the prior's cost (``scale``) or units (``count``)."""
    if name == "base":
        return 1.0
    if name == "compute":
        return row.compute[resource] if mode == "scale" else float(row.lanes)
    return row.forwarding_logic[resource] if mode == "scale" else float(row.forwarding_words)


def _modes(resource: str, rows: Sequence[DesignTerms]) -> list[tuple[TermName, str]]:
    """The terms present on these rows, each with its mode; categories no row has are left out."""
    terms: list[tuple[TermName, str]] = [("base", "constant")]
    if any(r.lanes for r in rows):
        terms.append(("compute", "scale" if any(r.compute[resource] for r in rows) else "count"))
    if any(r.forwarding_words for r in rows):
        prior = any(r.forwarding_logic[resource] for r in rows)
        terms.append(("forwarding", "scale" if prior else "count"))
    return terms


def fit_resource(
    resource: str, rows: Sequence[DesignTerms], measured: Sequence[float], where: str
) -> ResourceFit:
    """Non-negative least squares for one resource; refuses rows that cannot determine the terms."""
    from scipy.optimize import nnls

    terms = _modes(resource, rows)
    x = np.array([[column(n, m, resource, r) for n, m in terms] for r in rows], dtype=np.float64)
    y = np.array([v - r.storage[resource] for v, r in zip(measured, rows, strict=True)], dtype=np.float64)
    _check_identifiable(x, [n for n, _ in terms], len(rows), where)
    scale = np.maximum(np.abs(x).max(axis=0), 1e-300)  # columns of very different sizes: solve scaled
    theta_scaled, _ = nnls(x / scale, y)
    theta = theta_scaled / scale
    fitted = []
    for (name, mode), th in zip(terms, theta, strict=True):
        fitted.append(Term(name, mode, float(th), float(th) * _unit_prior(name, mode, resource, rows)))  # type: ignore[arg-type]
    unfitted = tuple(n for n in ("compute", "forwarding") if n not in {t for t, _ in terms})
    return ResourceFit(resource, tuple(fitted), unfitted)


def _unit_prior(name: str, mode: str, resource: str, rows: Sequence[DesignTerms]) -> float:
    """The prior's cost of one unit (mean over the rows), so that θ · it is a cost per unit."""
    if mode != "scale":
        return 1.0
    units = sum(r.lanes if name == "compute" else r.forwarding_words for r in rows)
    total = sum(column(name, mode, resource, r) for r in rows)
    return total / units if units else 0.0


def _check_identifiable(x: np.ndarray[Any, Any], names: list[str], n_rows: int, where: str) -> None:
    labels = ", ".join(TERM_LABELS[n] for n in names)
    if n_rows < len(names):
        raise StencilmapError(
            f"{n_rows} design row(s) cannot determine the {len(names)} terms {labels}: give at least "
            f"{len(names)} rows with different unroll and iterate",
            where,
        )
    rank = int(np.linalg.matrix_rank(x))
    if rank < len(names):
        raise StencilmapError(
            f"the rows determine only {rank} of the {len(names)} terms {labels}: their counts are "
            "linearly dependent (PE lanes grow in proportion to the stages when unroll never changes) — "
            "vary unroll as well as iterate",
            where,
        )


# ------------------------------------------------------------------------------- statistics of a fit


@dataclass(frozen=True, slots=True)
class FitQuality:
    """How well predictions match measured counts: R² (None when every measured count is equal) and the
    largest relative error |predicted − measured| / max(measured, 1)."""

    r2: float | None
    max_relative_error: float


def quality(measured: Sequence[float], predicted: Sequence[float]) -> FitQuality:
    y = np.array(measured, dtype=np.float64)
    p = np.array(predicted, dtype=np.float64)
    if y.size == 0:
        return FitQuality(None, 0.0)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    ss_res = float(((y - p) ** 2).sum())
    r2 = None if ss_tot == 0 else 1.0 - ss_res / ss_tot
    rel = np.abs(p - y) / np.maximum(np.abs(y), 1.0)
    return FitQuality(r2, float(rel.max()))


# ----------------------------------------------------------------------- writing the fitted model back


def fitted_resource_model(
    prior: dict[str, Any], fits: Sequence[ResourceFit], rows: Sequence[DesignTerms]
) -> dict[str, Any]:
    """The device file's ``resource_model`` with the fitted coefficients: ``base`` set; in ``scale`` mode
    the PE's fixed cost and every operator cost (compute), or every forwarding module's costs
    (forwarding), multiplied by θ for that resource — one program's designs cannot split a PE into its
    operators, so the prior's relative costs are kept; in ``count`` mode θ added to the fixed cost of the
    ``pe`` module or of each forwarding module kind the designs use."""
    model = copy.deepcopy(prior)
    kinds = sorted({k for r in rows for k in r.forwarding_kinds})
    for fit in fits:
        res = fit.resource
        for t in fit.terms:
            if t.name == "base":
                model["base"][res] = _round(t.theta)
            elif t.name == "compute":
                _write_compute(model, res, t)
            else:
                _write_forwarding(model, res, t, kinds)
    return model


def _write_compute(model: dict[str, Any], res: str, t: Term) -> None:
    pe = model["modules"].setdefault("pe", {}).setdefault("fixed", {})
    if t.mode == "count":
        pe[res] = _round(pe.get(res, 0.0) + t.theta)
        return
    _scale(pe, res, t.theta)
    for table in model["ops"].values():
        for cost in table.values():
            _scale(cost, res, t.theta)


def _write_forwarding(model: dict[str, Any], res: str, t: Term, kinds: list[str]) -> None:
    modules = model["modules"]
    if t.mode == "count":
        for kind in kinds:
            fixed = modules.setdefault(kind, {}).setdefault("fixed", {})
            fixed[res] = _round(fixed.get(res, 0.0) + t.theta)
        return
    for kind, spec in modules.items():
        if kind != "pe":
            for part in ("fixed", "per_fanout"):
                _scale(spec.get(part, {}), res, t.theta)


def _scale(cost: dict[str, float], res: str, factor: float) -> None:
    if res in cost:
        cost[res] = _round(cost[res] * factor)


def _round(x: float) -> float:
    """Six significant digits: enough for counts of hundreds of thousands, readable in the file."""
    return float(f"{x:.6g}")
