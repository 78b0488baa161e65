"""Resource model of a design on an FPGA: the sum of its modules' costs (SODA §4.3, OpenCL §4.2).

SODA §4.3 splits a design into three categories, all modelled per module:

* compute modules (``pe``): a fixed cost per PE plus the cost of each operation of its stencil
  (SODA R_CP; OpenCL R_PE — so a PCM of P_cell PEs costs P_cell·R_PE);
* forwarding modules (``forward``, ``fifo``, ``broadcast``, ``shift_register``, ``internal_buffer``,
  ``delay``, and the channels): logic growing linearly with fanout, plus their storage — RAM blocks as a
  step function Θ(width, depth) of the device's block shapes, or bits, and nothing for storage small
  enough for logic (SODA §3.4: FIFOs of at most 1024 bits are SRLs) (SODA R_FW; OpenCL R_shift);
* auxiliary modules (memory interfaces, control, the board support package): a device constant
  (SODA R_AUX; OpenCL R_base).

For a PCM design this is exactly OpenCL eqs. 9–10, R = d(P_cell·R_PE + R_shift) + R_base; for a SODA
design SODA eq. 5, R_AUX + k·q·R_CP + q·R_FW(k, T). The coefficients are device data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil, isfinite

from stencilmap.analysis.intensity import itemsize
from stencilmap.analysis.ops import is_constant, stencil_ops
from stencilmap.design.ir import Channel, Design, Module
from stencilmap.device.catalog import Cost, Device, ResourceModel
from stencilmap.errors import StencilmapError
from stencilmap.program.expr import Binary, Cast, Const, Expr, Unary, children, walk
from stencilmap.program.ir import Program, Stencil

COMPUTE, FORWARDING, AUXILIARY = "compute", "forwarding", "auxiliary"
_STORAGE_KINDS = ("fifo", "shift_register", "internal_buffer", "delay")


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """Resources a design uses on a device, by SODA category, against what the device has."""

    used: Cost
    available: tuple[tuple[str, int], ...]
    limits: tuple[tuple[str, float], ...] = ()  # the usable fraction of a resource (default 1)
    categories: tuple[tuple[str, Cost], ...] = ()

    def utilization(self, name: str) -> float:
        avail = dict(self.available).get(name, 0)
        return self.used[name] / avail if avail else 0.0

    @property
    def binding(self) -> str | None:
        """The resource with the highest utilization (None when nothing is used)."""
        return binding_resource(self.used.as_dict(), dict(self.available))

    def limit(self, name: str) -> float:
        return dict(self.limits).get(name, 1.0)

    @property
    def fits(self) -> bool:
        return all(self.utilization(name) <= self.limit(name) for name, _ in self.available)

    def to_json(self) -> dict[str, dict[str, float]]:
        return {
            name: {"used": _number(self.used[name]), "available": avail, "limit": self.limit(name)}
            for name, avail in self.available
        }


def binding_resource(used: Mapping[str, float], available: Mapping[str, int]) -> str | None:
    """The resource whose used / available ratio is highest (ties: the first name)."""
    best, ratio = None, 0.0
    for name in sorted(available):
        if available[name] > 0 and used.get(name, 0.0) / available[name] > ratio:
            best, ratio = name, used.get(name, 0.0) / available[name]
    return best


def pcm_resources(d: int, p_cell: int, r_pe: float, r_shift: float, r_base: float) -> float:
    """R_design = d(P_cell·R_PE + R_shift) + R_base (OpenCL eqs. 9–10)."""
    return d * (p_cell * r_pe + r_shift) + r_base


def soda_resources(r_aux: float, k: int, q: int, r_cp: float, r_fw: float) -> float:
    """R_AUX + k·q·R_CP + q·R_FW (SODA §4.4, left side of eq. 5)."""
    return r_aux + k * q * r_cp + q * r_fw


def ram_blocks(width_bits: int, depth: int, shapes: tuple[tuple[int, int], ...]) -> int:
    """Θ(ω, n): RAM blocks for a ``width_bits`` × ``depth`` memory, the cheapest arrangement of blocks of
    one configurable shape (w, d): ⌈ω / w⌉ · ⌈n / d⌉ (SODA §4.3: a step function of width and depth;
    e.g. 16 bits × 8K in BRAM18s = 8 blocks)."""
    if width_bits <= 0 or depth <= 0:
        return 0
    return min(ceil(width_bits / w) * ceil(depth / d) for w, d in shapes)


def storage_cost(width_bits: int, depth: int, device: Device) -> Cost:
    """On-chip memory of a ``width_bits`` × ``depth`` buffer: nothing when logic holds it (at most
    ``logic_storage_max_bits``), else RAM blocks or bits as the device counts them."""
    model = _model(device)
    bits = width_bits * depth
    if bits <= model.logic_storage_max_bits:
        return Cost()
    if model.memory == "bits":
        return Cost.of({model.memory_resource: bits})
    assert device.memory_blocks is not None  # checked when the device is loaded
    return Cost.of({model.memory_resource: ram_blocks(width_bits, depth, device.memory_blocks.shapes)})


def dtype_class(dtype: str) -> str:
    """``float64``, ``float32`` (every narrower float) or ``integer`` (integers and bool)."""
    if dtype == "float64":
        return "float64"
    return "float32" if dtype.startswith("float") else "integer"


def is_power_of_two(value: float) -> bool:
    """True for ±2ⁿ with integer n (0.25, 0.5, 1, 2, ...)."""
    if value == 0:
        return False
    mantissa = abs(float(value))
    while mantissa >= 2.0:
        mantissa /= 2.0
    while mantissa < 1.0:
        mantissa *= 2.0
    return mantissa == 1.0


def scaling_multiplies(stencil: Stencil) -> int:
    """Multiplies by a constant that folds to ±2ⁿ: an exponent adjustment, no multiplier (OpenCL Table 2:
    the Laplace PE, 0.25 × (…), uses no DSP). Every other multiply — by a general constant, or of two
    values read or computed (field × field) — takes a DSP, as the OpenCL and HLS compilers build it
    (OpenCL §5.4: "multiplications are done in DSPs and the additions are done using ALMs"): the ``mul``
    cost of the device file."""
    exprs: list[Expr] = [stencil.expr, *(t.expr for t in stencil.temps)]
    count = 0
    for e in exprs:
        for node in walk(e):
            if _is_product(node) and any(_power_of_two_constant(c) for c in children(node)):
                count += 1
    return count


def _is_product(node: Expr) -> bool:
    return isinstance(node, Binary) and node.op == "*" and not is_constant(node)


def _power_of_two_constant(node: Expr) -> bool:
    value = constant_value(node)
    return value is not None and isfinite(value) and is_power_of_two(value)


def constant_value(node: Expr) -> float | None:
    """The value a constant subexpression folds to (literals, unary ±, +, −, ×, ÷ and casts of them), or
    None when ``node`` reads a field or a name, or folds through anything else."""
    if isinstance(node, Const):
        return float(node.value)
    if isinstance(node, Cast):
        return constant_value(node.operand) if node.dtype.startswith("float") else None
    if isinstance(node, Unary) and node.op in ("-", "+"):
        inner = constant_value(node.operand)
        return None if inner is None else (-inner if node.op == "-" else inner)
    if isinstance(node, Binary) and node.op in ("+", "-", "*", "/"):
        a, b = constant_value(node.lhs), constant_value(node.rhs)
        if a is None or b is None or (node.op == "/" and b == 0):
            return None
        if node.op == "+":
            return a + b
        if node.op == "-":
            return a - b
        return a * b if node.op == "*" else a / b
    return None


def pe_cost(stencil: Stencil, device: Device) -> Cost:
    """One PE lane of ``stencil``: the ``pe`` module's fixed cost plus one operator per operation."""
    model = _model(device)
    kinds = stencil_ops(stencil).as_dict()
    scale = scaling_multiplies(stencil)
    kinds["mul"] = kinds.get("mul", 0) - scale
    kinds["scale"] = scale
    cls = dtype_class(stencil.dtype)
    cost = model.module("pe").fixed
    for kind, n in sorted(kinds.items()):
        if n:
            cost = cost + model.op(cls, kind).scaled(n)
    return cost


def design_resources(design: Design, program: Program, device: Device) -> ResourceUsage:
    """What ``design`` (built from ``program``) uses on ``device``, by SODA category."""
    model = _model(device)
    fanout = Counter(c.src for c in design.channels)
    compute, forwarding = Cost(), Cost()
    for m in design.modules:
        if m.kind == "pe":
            compute = compute + _pe_module(m, program, device)
        elif m.kind not in ("reader", "writer"):
            forwarding = forwarding + _forwarding_module(m, fanout[m.name], device)
    for c in design.channels:
        forwarding = forwarding + _channel(c, device)
    auxiliary = model.base
    used = compute + forwarding + auxiliary
    categories = ((COMPUTE, compute), (FORWARDING, forwarding), (AUXILIARY, auxiliary))
    return ResourceUsage(used, device.resources, model.max_utilization, categories)


def _pe_module(m: Module, program: Program, device: Device) -> Cost:
    st = program.stencil(str(m.param("stencil")))
    if st is None:
        raise StencilmapError(f"PE '{m.name}' computes unknown stencil '{m.param('stencil')}'")
    lanes = int(_int(m.param("width", 1)))  # StencilFlow PEs are W lanes wide
    return pe_cost(st, device).scaled(lanes)


def _forwarding_module(m: Module, fanout: int, device: Device) -> Cost:
    lanes = _int(m.param("width", m.param("lanes", 1))) if m.kind in _STORAGE_KINDS else 1
    dtype = str(m.param("dtype", "float32"))
    return forwarding_cost(m.kind, fanout, dtype, _storage_depth(m), lanes, device)


def forwarding_cost(kind: str, fanout: int, dtype: str, depth: int, lanes: int, device: Device) -> Cost:
    """One forwarding module: its logic (fixed + per fanout, per 32-bit word of ``dtype``) and the
    storage of ``depth`` elements, ``lanes`` side by side."""
    model = _model(device)
    bits = 8 * itemsize(dtype)
    words = max(1, ceil(bits / 32))
    spec = model.module(kind)
    cost = (spec.fixed + spec.per_fanout.scaled(fanout)).scaled(words)
    if depth:
        cost = cost + storage_cost(bits * lanes, ceil(depth / lanes), device)
    return cost


def _storage_depth(m: Module) -> int:
    """Elements a module stores: FIFO/delay depth, shift register/internal buffer size."""
    if m.kind in ("fifo", "delay"):
        return _int(m.param("depth", 0))
    if m.kind in ("shift_register", "internal_buffer"):
        return _int(m.param("size", 0))
    return 0


def _channel(c: Channel, device: Device) -> Cost:
    return storage_cost(8 * itemsize(c.dtype) * c.width, c.depth, device)


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def _model(device: Device) -> ResourceModel:
    if device.resource_model is None:
        raise StencilmapError(f"device '{device.name}' has no FPGA resource model")
    return device.resource_model


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 3)
