"""Pure facts over the Program IR: windows, halos, reuse and internal buffers, op counts, intensity,
delay buffers, latency and runtime. Imports only ``stencilmap.program`` (and numpy, networkx)."""

from stencilmap.analysis.buffers import InternalBuffer, init_cycles, init_phase, internal_buffers
from stencilmap.analysis.dag import Edge, Node, PassGraph, node_name, pass_graph
from stencilmap.analysis.delays import delay_buffers, published_delay_buffers
from stencilmap.analysis.halos import Halo, accumulated_halos, field_halos, program_halo, stencil_halo
from stencilmap.analysis.intensity import bytes_per_point, operational_intensity
from stencilmap.analysis.latency import OperatorLatencies, expr_latency, stencil_latency
from stencilmap.analysis.ops import OpCounts, count_ops, ops_per_point, program_ops, stencil_ops
from stencilmap.analysis.reuse import ReuseBuffer, ReuseChain, Segment, reuse_buffer, stencil_reuse_buffers
from stencilmap.analysis.summary import FieldFacts, ProgramAnalysis, StencilFacts, analyze_program
from stencilmap.analysis.timing import (
    EdgeTiming,
    PipelineTiming,
    grid_points,
    pipeline_timing,
    runtime_cycles,
)
from stencilmap.analysis.windows import (
    FieldWindow,
    access_sets,
    field_window,
    linear_offsets,
    linearize,
    max_forward_offset,
    reuse_distance,
    stencil_windows,
    strides,
    window_size,
)

__all__ = [
    "Edge",
    "EdgeTiming",
    "FieldFacts",
    "FieldWindow",
    "Halo",
    "InternalBuffer",
    "Node",
    "OpCounts",
    "OperatorLatencies",
    "PassGraph",
    "PipelineTiming",
    "ProgramAnalysis",
    "ReuseBuffer",
    "ReuseChain",
    "Segment",
    "StencilFacts",
    "access_sets",
    "accumulated_halos",
    "analyze_program",
    "bytes_per_point",
    "count_ops",
    "delay_buffers",
    "expr_latency",
    "field_halos",
    "field_window",
    "grid_points",
    "init_cycles",
    "init_phase",
    "internal_buffers",
    "linear_offsets",
    "linearize",
    "max_forward_offset",
    "node_name",
    "operational_intensity",
    "ops_per_point",
    "pass_graph",
    "pipeline_timing",
    "program_halo",
    "program_ops",
    "published_delay_buffers",
    "reuse_buffer",
    "reuse_distance",
    "runtime_cycles",
    "stencil_halo",
    "stencil_latency",
    "stencil_ops",
    "stencil_reuse_buffers",
    "stencil_windows",
    "strides",
    "window_size",
]
