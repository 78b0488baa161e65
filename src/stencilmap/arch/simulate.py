"""The EMAX and CGRA simulators beside their models: one run of a mapping and the model's figure for
the same mapping, as ``simulate`` and ``compile`` report them.

The simulators (``sim.emax``, ``sim.cgra``) import no model; this module, above both layers, pairs a
run with the prediction: the CGRA paper's §VI cycle model (``model.cgra.predict``) and the EMAX
paper's §5.1 closed-form timeline (``model.emax.mapping_timeline``). ``to_json`` is the run's with the
model's figure in its place (``predicted_cycles`` after ``layers``; ``model_total_s`` last).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stencilmap.design.cgra.mapping import CgraMapping
    from stencilmap.design.emax.mapping import EmaxMapping
    from stencilmap.device.catalog import Device
    from stencilmap.io import Array
    from stencilmap.model.cgra import CgraPrediction
    from stencilmap.model.emax import Timeline
    from stencilmap.sim.cgra import CgraRun
    from stencilmap.sim.emax import EmaxRun


@dataclass(frozen=True, slots=True)
class CgraSimulation:
    """A CGRA simulation and the §VI model's cycles of the same mapping on the same device."""

    run: CgraRun
    prediction: CgraPrediction

    def to_json(self) -> dict[str, object]:
        return _after(self.run.to_json(), "layers", "predicted_cycles", self.prediction.cycles)


@dataclass(frozen=True, slots=True)
class EmaxSimulation:
    """An EMAX simulation and the §5.1 closed form of the same time step."""

    run: EmaxRun
    model: Timeline  # the closed form (``model.emax.mapping_timeline``) for comparison

    def to_json(self) -> dict[str, object]:
        return {**self.run.to_json(), "model_total_s": self.model.seconds}


def simulate_cgra(
    m: CgraMapping,
    inputs: dict[str, Array],
    device: Device,
    roofline_gops: float,
    max_cycles: int | None = None,
) -> CgraSimulation:
    """``sim.cgra.simulate_cgra`` with ``model.cgra.predict`` of the same mapping."""
    from stencilmap.model.cgra import predict
    from stencilmap.sim.cgra import simulate_cgra as run_cgra

    return CgraSimulation(run_cgra(m, inputs, device, roofline_gops, max_cycles), predict(m, device))


def simulate_emax(m: EmaxMapping, values: Array, device: Device) -> EmaxSimulation:
    """``sim.emax.simulate_emax`` with ``model.emax.mapping_timeline`` of the same mapping."""
    from stencilmap.model.emax import mapping_timeline
    from stencilmap.sim.emax import simulate_emax as run_emax

    return EmaxSimulation(run_emax(m, values, device), mapping_timeline(m, device))


def _after(record: dict[str, object], key: str, name: str, value: object) -> dict[str, object]:
    """``record`` with ``name: value`` right after ``key`` (at the end if ``key`` is absent)."""
    items = list(record.items())
    at = next((i + 1 for i, (k, _) in enumerate(items) if k == key), len(items))
    return dict([*items[:at], (name, value), *items[at:]])
