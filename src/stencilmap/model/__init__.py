"""Models: the device catalog, predicted cycles, time, bandwidth and resources of a design, the roofline.

Imports ``design``, ``analysis`` and ``program``; nothing imports ``model`` but the CLI (and, later,
exploration and the simulator's checks).
"""

from stencilmap.model.devices import Cost, Device, MemoryBlocks, ResourceModel, device_names, load_device
from stencilmap.model.estimate import estimate
from stencilmap.model.report import EstimateConfig, EstimateReport
from stencilmap.model.roofline import RooflineConfig, RooflineReport, roofline, roofline_of
from stencilmap.model.timing import DesignTiming, design_timing
from stencilmap.model.workload import Workload, workload

__all__ = [
    "Cost",
    "DesignTiming",
    "Device",
    "EstimateConfig",
    "EstimateReport",
    "MemoryBlocks",
    "ResourceModel",
    "RooflineConfig",
    "RooflineReport",
    "Workload",
    "design_timing",
    "device_names",
    "estimate",
    "load_device",
    "roofline",
    "roofline_of",
    "workload",
]
