"""Models: the device catalog, predicted cycles, time, bandwidth and resources of a design, the roofline.

Imports ``design``, ``analysis`` and ``program``; nothing imports ``model`` but the CLI, exploration
(``explore``) and the simulator's checks. The ``estimate`` job over these models is ``jobs.estimate``.
"""

from stencilmap.device.catalog import Cost, Device, MemoryBlocks, ResourceModel, device_names, load_device
from stencilmap.model.report import EstimateConfig, EstimateReport
from stencilmap.model.roofline import RooflineConfig, RooflineReport, roofline, roofline_of
from stencilmap.model.timing import BankLoad, DesignTiming, design_timing, launch_cycles
from stencilmap.model.workload import Workload, workload

__all__ = [
    "BankLoad",
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
    "launch_cycles",
    "load_device",
    "roofline",
    "roofline_of",
    "workload",
]
