"""Compute latency of a stencil: the critical path of its expression tree (StencilFlow §IV-B).

Each operation kind (see ``ops``) has a latency in cycles, taken from a per-device table; the latency
of an expression is max over its children + the node's own latency (leaves: 0). A temporary's latency
is that of its expression, paid where it is used. Constant subtrees are folded (latency 0). An n-ary
``min``/``max`` is a balanced tree: ⌈log2 n⌉ levels. ``fma`` costs a ``mul`` then an ``add``. Binary
chains are taken as written (a + b + c + d is three additions deep): without reassociation, which
floating point forbids, that is what a compiler must build.
"""

from __future__ import annotations

from collections.abc import Mapping

from stencilmap.analysis.ops import constant_nodes, node_ops
from stencilmap.device.latencies import OperatorLatencies
from stencilmap.program.expr import Call, Expr, Var, children, postorder
from stencilmap.program.ir import Stencil

__all__ = ["OperatorLatencies", "expr_latency", "node_latency", "stencil_latency"]


def node_latency(e: Expr, lat: OperatorLatencies) -> int:
    """Cycles one node adds on top of its slowest child."""
    if isinstance(e, Call) and e.func in ("min", "max", "fmin", "fmax"):
        return (len(e.args) - 1).bit_length() * lat.minmax  # ⌈log2 n⌉ levels
    return sum(lat.of(kind) * n for kind, n in node_ops(e))


def expr_latency(e: Expr, lat: OperatorLatencies, temps: Mapping[str, int] | None = None) -> int:
    """Critical path of ``e`` in cycles; ``temps`` gives the latency of temporaries read through ``Var``."""
    const = constant_nodes(e)
    cycles: dict[int, int] = {}  # by node id, children before parents (iterative: any depth)
    for node in postorder(e):
        if id(node) in const:
            cycles[id(node)] = 0
        elif isinstance(node, Var):
            cycles[id(node)] = (temps or {}).get(node.name, 0)
        else:
            slowest = max((cycles[id(c)] for c in children(node)), default=0)
            cycles[id(node)] = slowest + node_latency(node, lat)
    return cycles[id(e)]


def stencil_latency(stencil: Stencil, lat: OperatorLatencies) -> int:
    """Compute latency of a stencil: critical path through its temporaries and expression."""
    temps: dict[str, int] = {}
    for t in stencil.temps:
        temps[t.name] = expr_latency(t.expr, lat, temps)
    return expr_latency(stencil.expr, lat, temps)
