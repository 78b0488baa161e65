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
from dataclasses import dataclass

from stencilmap.analysis.ops import constant_nodes, node_ops
from stencilmap.program.expr import Call, Expr, Var, children, postorder
from stencilmap.program.ir import Stencil


@dataclass(frozen=True, slots=True)
class OperatorLatencies:
    """Pipeline latency in cycles of each operation kind on one device.

    Defaults (``default()``) are conservative single-precision figures for an FPGA at ~300 MHz, in the
    range vendor floating-point cores report (Xilinx Floating-Point Operator / Intel hardened FP DSPs,
    fully pipelined): add/sub 7, mul 4, div 15, sqrt 16, other math functions 20, pow 30, min/max and
    compare 2, int↔float cast 4, select/logic/bitwise 1. ``functions`` overrides the latency of named
    functions (``exp``, ``fabs``, ...); a device file will provide all of them.
    """

    add: int = 7
    mul: int = 4
    div: int = 15
    sqrt: int = 16
    pow: int = 30
    minmax: int = 2
    compare: int = 2
    select: int = 1
    logic: int = 1
    bitwise: int = 1
    cast: int = 4
    func: int = 20
    functions: tuple[tuple[str, int], ...] = ()
    #: Registered handshake stages of a stencil unit besides its operators: the window buffer takes a
    #: beat in one cycle and presents it the next, and the PE's result enters the outgoing FIFO one
    #: cycle before the consumer can see it — 3 cycles from one unit's input to the next one's.
    unit: int = 3

    @staticmethod
    def default() -> OperatorLatencies:
        return OperatorLatencies()

    @staticmethod
    def uniform(cycles: int) -> OperatorLatencies:
        """Every kind takes ``cycles`` (``uniform(0)``: a latency-free model)."""
        c = cycles
        return OperatorLatencies(c, c, c, c, c, c, c, c, c, c, c, c, unit=c)

    def of(self, kind: str) -> int:
        """Latency of an operation kind; unknown kinds are math functions."""
        named = dict(self.functions)
        if kind in named:
            return named[kind]
        if kind in _FIELDS:
            value: int = getattr(self, kind)
            return value
        return self.func


_FIELDS = ("add", "mul", "div", "sqrt", "pow", "minmax", "compare", "select", "logic", "bitwise", "cast")


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
