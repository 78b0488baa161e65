"""The device catalog: a leaf package every stage may read (it imports nothing of stencilmap but errors).

``types``: the Device dataclasses; ``catalog``: the device files' schema and loading (the JSON files are
package data under ``files/``); ``latencies``: the operator latency table every builder uses.
"""

from stencilmap.device.catalog import device_names, is_device_path, load_device, parse_device
from stencilmap.device.latencies import OperatorLatencies
from stencilmap.device.types import Cost, Device, DeviceKind

__all__ = [
    "Cost",
    "Device",
    "DeviceKind",
    "OperatorLatencies",
    "device_names",
    "is_device_path",
    "load_device",
    "parse_device",
]
