"""The triggered-instruction CGRA's worker mappings (CGRA §III–§VI): ``mapping`` builds them (workers,
strips, layers), ``dag`` the per-worker dataflow graph, ``regions`` the stages' regions, ``terms`` a
linear stencil's products (``analysis.linear``), ``plan`` the worker plan, ``place`` the placement on the
PE grid, ``traffic`` the loads and stores. The assembly and DFG are ``codegen.cgra``'s."""

from stencilmap.design.cgra.mapping import CgraMapping, Fabric, Pe, Queue, fabric, map_cgra

__all__ = ["CgraMapping", "Fabric", "Pe", "Queue", "fabric", "map_cgra"]
