"""Design IR (modules joined by bounded channels) and the builders that turn a Program into one."""

from stencilmap.design.ir import Channel, Design, Module, verify_design

__all__ = ["Channel", "Design", "Module", "verify_design"]
