"""Operator latencies of a device: the pipeline depth of each operation kind (StencilFlow §IV-B)."""

from __future__ import annotations

from dataclasses import dataclass


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
