"""The triggered-instruction CGRA's worker mappings (CGRA §III–§VI): ``mapping`` builds them (workers,
strips, layers), ``dag`` the per-worker dataflow graph, ``regions``/``terms`` the linear-form analysis of a
stencil, ``plan`` the worker plan, ``place`` the placement on the PE grid, ``text`` the assembly."""

from stencilmap.design.cgra.mapping import CgraMapping, Fabric, Pe, Queue, fabric, map_cgra

__all__ = ["CgraMapping", "Fabric", "Pe", "Queue", "fabric", "map_cgra"]
