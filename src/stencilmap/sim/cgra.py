"""A dedicated simulator for the triggered-instruction CGRA's worker mappings (``design.cgra``).

Why not the FPGA engine: a CGRA mapping is a graph of single-instruction PEs whose tokens carry the
row/column ids the control units generate (§III-A: filters compare them), whose loads return after the
memory's latency while the PE goes on issuing, and whose end is a ``DONE`` raised by counting stores.
``csrc/cgra.c`` runs it cycle by cycle with values (a PE fires when its operands are in its input
queues and its consumers have room; loads and stores share the device's bandwidth per cycle; a load that
misses the device's cache, ``design.cgra.traffic.LoadCache``, holds its LOAD for the line's fill (§VIII); the
device's clock); this module packs the mapping, compiles the C once (cached under
``STENCILMAP_CACHE_DIR``) and reads the results back. Nothing is taken from the reference.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from graphlib import TopologicalSorter
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap import native
from stencilmap.design.cgra.dag import UNARY_FUNCS
from stencilmap.design.cgra.mapping import STALL_CYCLES, CgraMapping, Pe
from stencilmap.design.cgra.regions import points
from stencilmap.design.cgra.traffic import field_bytes, load_cache, reads_of, ring_of, stores_of
from stencilmap.device.catalog import Device
from stencilmap.errors import StencilmapError
from stencilmap.program.data import check_memory
from stencilmap.sim import bytecode as B
from stencilmap.sim.engine import CFLAGS, compiler

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]

KINDS = ("AGEN", "LOAD", "FILTER", "ARITH", "STORE", "COUNT", "DONE", "TYPED")
#: a DAG PE's op: (family of ``csrc/cgra.c``'s ``typed``, its argument: bytecode's op or function code)
TYPED_OPS: dict[str, tuple[int, int]] = {
    **{
        name: (0, code)
        for name, code in (
            ("ADD", B.B_ADD),
            ("SUB", B.B_SUB),
            ("MUL", B.B_MUL),
            ("DIV", B.B_DIV),
            ("IDIV", B.B_IDIV_C),
            ("MOD_C", B.B_MOD_C),
            ("FLOORDIV", B.B_FLOORDIV),
            ("MOD_PY", B.B_MOD_PY),
            ("POW", B.B_POW),
            ("EQ", B.B_EQ),
            ("NE", B.B_NE),
            ("LT", B.B_LT),
            ("LE", B.B_LE),
            ("GT", B.B_GT),
            ("GE", B.B_GE),
            ("AND", B.B_AND),
            ("OR", B.B_OR),
            ("BAND", B.B_BAND),
            ("BOR", B.B_BOR),
            ("BXOR", B.B_BXOR),
        )
    },
    "NEG": (1, B.U_NEG),
    "NOT": (1, B.U_NOT),
    "INV": (1, B.U_INV),
    **{f.upper(): (2, B.FUNC_CODES[f]) for f in UNARY_FUNCS if f != "abs"},
    "ROUND_C": (2, B.FUNC_CODES["round_c"]),
    "ROUND_EVEN": (2, B.FUNC_CODES["round_even"]),
    "CPOW": (3, 100),
    "ATAN2": (3, 101),
    "HYPOT": (3, 102),
    "FMOD": (3, 103),
    "FMIN": (3, 104),
    "FMAX": (3, 105),
    "COPYSIGN": (3, 106),
    "FDIM": (3, 107),
    "MIN": (4, 0),
    "MAX": (4, 1),
    "SEL": (5, 0),
    "ROUND": (6, 0),
    "FMA": (7, 0),
}
#: the arithmetic PEs' ops, numbered as ``csrc/cgra.c``'s F_* codes (prepended to the source)
FN = (
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "MAC",
    "FMA",
    "POW",
    "MIN",
    "MAX",
    "LT",
    "LE",
    "GT",
    "GE",
    "EQ",
    "NE",
    "AND",
    "OR",
    "NEG",
    "NOT",
    "SEL",
    "ROUND",
    "ATAN2",
    "HYPOT",
    "FMOD",
    "COPYSIGN",
    "FDIM",
    *(f.upper() for f in UNARY_FUNCS if f != "abs"),
)
PCOLS = 13
NSTATE = 5
STATUS = ("done", "deadlock", "limit", "misaligned")


@dataclass(frozen=True)
class CgraRun:
    """What the CGRA simulation produced."""

    mapping: CgraMapping
    status: str
    cycles: int
    outputs: dict[str, Array]  # each output field, NaN where nothing was stored
    firings: int
    memory_ops: int
    bytes_read: dict[str, int]
    bytes_written: int
    fires: dict[str, int]
    peaks: dict[str, tuple[int, int]]  # queue → (peak, depth)
    clock_mhz: float
    flops: float
    roofline_gops: float
    sim_seconds: float
    cache_misses: int = 0  # the loads that missed the device's cache (none without one)

    @property
    def gflops(self) -> float:
        return self.flops / (self.cycles / (self.clock_mhz * 1e6)) / 1e9 if self.cycles else 0.0

    @property
    def percent_of_roofline(self) -> float:
        return 100.0 * self.gflops / self.roofline_gops if self.roofline_gops else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "gflops": round(self.gflops, 3),
            "percent_of_roofline": round(self.percent_of_roofline, 2),
            "roofline_gflops": round(self.roofline_gops, 3),
            "strips": len(self.mapping.strips),
            "workers": self.mapping.workers,
            "layers": self.mapping.layers,
            "memory_ops": self.memory_ops,
        }


def reader_tags(m: CgraMapping, field: int, r: int) -> I64:
    """The tags reader r of input ``field`` streams: strip by strip, row-major, the columns x ≡ r (mod w)
    of the strip's span (Fig. 3)."""
    z, y, x = m.shape
    npts = z * y * x
    parts = [np.zeros(0, np.int64)]
    for s, (x0, x1) in enumerate(m.spans[field]):
        xs = np.arange(x0, x1, dtype=np.int64)
        xs = xs[xs % m.workers == r]
        parts.append(np.add.outer(np.arange(z * y, dtype=np.int64) * x, xs).ravel() + s * npts)
    return np.concatenate(parts)


def simulate_cgra(
    m: CgraMapping,
    inputs: dict[str, Array],
    device: Device,
    roofline_gops: float,
    max_cycles: int | None = None,
) -> CgraRun:
    """Run mapping ``m`` on ``inputs`` (arrays of each input's shape)."""
    check_memory(memory_needed(m), "the CGRA simulation")
    packed = _Packed(m, inputs, device)
    limit = max_cycles if max_cycles is not None else 20 * packed.reads + 100_000
    start = time.perf_counter()
    out = packed.run(limit)
    seconds = time.perf_counter() - start
    status = STATUS[int(out[0])]
    if status == "misaligned":
        raise StencilmapError(
            f"CGRA simulation: PE '{m.pes[int(out[4])].name}' got operands of different points"
        )
    loads = {
        f: int(sum(packed.fires[i] for i, p in enumerate(m.pes) if p.op == "AGEN" and p.field == f))
        for f, _, _ in m.inputs
    }
    stores = int(sum(packed.fires[i] for i, p in enumerate(m.pes) if p.op == "STORE"))
    flops = sum(points(b) * s.flops for layer in m.regions for b, s in zip(layer, m.stages, strict=True))
    return CgraRun(
        mapping=m,
        status=status,
        cycles=int(out[1]),
        outputs=packed.outputs(),
        firings=int(out[2]),
        memory_ops=int(out[3]),
        bytes_read={f: n * _itemsize(d) for (f, d, _), n in zip(m.inputs, loads.values(), strict=True)},
        bytes_written=stores * _itemsize(m.dtype),
        fires={p.name: int(packed.fires[i]) for i, p in enumerate(m.pes)},
        peaks={
            f"{q.src}->{q.dst}.{q.port}": (int(packed.q_peak[k]), q.depth) for k, q in enumerate(m.queues)
        },
        clock_mhz=device.clock_mhz,
        flops=float(flops),
        roofline_gops=roofline_gops,
        sim_seconds=seconds,
        cache_misses=packed.misses,
    )


def memory_needed(m: CgraMapping) -> int:
    """Bytes the simulation allocates: the readers' address streams, the fields, the queues."""
    npts = m.shape[0] * m.shape[1] * m.shape[2]
    tags = sum(reads_of(m, i, r) for i in range(len(m.inputs)) for r in range(m.workers))
    queues = sum(q.depth for q in m.queues) + sum(p.latency + 4 for p in m.pes if p.op == "LOAD")
    return 8 * (tags + npts * (len(m.inputs) + len(m.outputs()))) + 24 * queues


def _itemsize(dtype: str) -> int:
    return int(np.dtype(dtype).itemsize)


class _Packed:
    """The mapping as the arrays ``csrc/cgra.c`` reads (see its header)."""

    def __init__(self, m: CgraMapping, inputs: dict[str, Array], device: Device) -> None:
        self.m, self.device = m, device
        index = {p.name: i for i, p in enumerate(m.pes)}
        self.npts = m.shape[0] * m.shape[1] * m.shape[2]
        arrays = [np.asarray(inputs[f], np.float64).ravel() for f, _, _ in m.inputs]
        self.in_base = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int64)
        self.mem_in = np.concatenate([*arrays, np.zeros(1)])
        self.mem_out = np.full(self.npts * max(1, len(m.outputs())), np.nan)
        into: dict[int, dict[str, int]] = {i: {} for i in range(len(m.pes))}
        outs: dict[int, list[int]] = {i: [] for i in range(len(m.pes))}
        for k, q in enumerate(m.queues):
            into[index[q.dst]][q.port] = k
            outs[index[q.src]].append(k)
        caps = [q.depth for q in m.queues]
        self.tag_parts: list[I64] = []
        pe = np.zeros((len(m.pes), PCOLS), np.int64)
        consts = np.zeros((len(m.pes), 3))
        elem = np.zeros(len(m.pes))
        flat_ins: list[int] = []
        flat_outs: list[int] = []
        for i, p in enumerate(m.pes):
            ports = (
                [into[i][o] for o in p.operands if isinstance(o, str)]
                if p.operands
                else [into[i][x] for x in p.inputs]
            )
            pe[i, :6] = (
                KINDS.index(_kind(m, p.op)),
                p.latency,
                len(flat_ins),
                len(ports),
                len(flat_outs),
                len(outs[i]),
            )
            flat_ins += ports
            flat_outs += outs[i]
            pe[i, 6:], consts[i] = self._params(p, caps)
            elem[i] = (
                _itemsize(m.inputs[_field_index(m, p.field)][1]) if p.op == "LOAD" else _itemsize(m.dtype)
            )
        self.pe, self.consts, self.elem = pe, consts.ravel(), elem
        self.ins, self.outs = np.array(flat_ins or [0], np.int64), np.array(flat_outs or [0], np.int64)
        self.q_cap = np.array(caps, np.int64)
        self.q_base = np.concatenate([[0], np.cumsum(self.q_cap)[:-1]]).astype(np.int64)
        self.q_peak = np.zeros(len(caps), np.int64)
        self.tags = np.concatenate([*self.tag_parts, np.zeros(1, np.int64)])
        self.reads = len(self.tags)
        self.order = _order(m, index)
        stores = [i for i, p in enumerate(m.pes) if p.op == "STORE"]
        loads = [i for i, p in enumerate(m.pes) if p.op == "LOAD"]
        self.nstore, self.nload = len(stores), len(loads)
        self.mem_pes = np.array(stores + loads, np.int64)
        self.fires = np.zeros(len(m.pes), np.int64)
        self.misses = 0

    def _params(self, p: Pe, caps: list[int]) -> tuple[tuple[int, ...], tuple[float, float, float]]:
        m, (_, y, x) = self.m, self.m.shape
        none = (0.0, 0.0, 0.0)
        if p.op == "AGEN":
            tags = reader_tags(m, _field_index(m, p.field), p.worker)
            start = sum(len(t) for t in self.tag_parts)
            self.tag_parts.append(tags)
            return (start, len(tags), 0, 0, 0, 0, 0), none
        if p.op == "LOAD":
            caps.append(p.latency + 4)  # the loads in flight: the response queue
            f = _field_index(m, p.field)
            size = _itemsize(m.inputs[f][1])
            return (int(self.in_base[f]), len(caps) - 1, *m.inputs[f][2], field_bytes(m)[f], size), none
        if p.op == "FILTER":
            dz, dy, dx = p.offset
            base = p.stage * len(m.strips)
            mode = ("shrink", "constant", "copy", "preserve", "ring").index(p.boundary)
            return (base, dz, dy, dx, (dz * y + dy) * x + dx, mode, p.worker), (p.const, 0.0, 0.0)
        if p.op == "STORE":
            return (m.outputs().index(p.stage) * self.npts, 0, 0, 0, 0, 0, 0), none
        if p.op == "COUNT":
            counted = ring_of if p.boundary == "ring" else stores_of
            return (counted(m, p.stage, p.worker), 0, 0, 0, 0, 0, 0), none
        if p.op == "DONE":
            return (0, 0, 0, 0, 0, 0, 0), none
        imm = [o if isinstance(o, float) else 0.0 for o in p.operands] + [0.0] * 3
        mask = sum(1 << j for j, o in enumerate(p.operands) if isinstance(o, float))
        if m.linear is None:
            family, code = TYPED_OPS[p.op]
            cast = B.type_code(p.cast) if p.cast else -1
            return (family, mask, len(p.operands), B.type_code(p.dtype), cast, code, 0), (
                imm[0],
                imm[1],
                imm[2],
            )
        rounded = B.type_code(m.linear.dtype)  # each PE's result, in the stencil's float type
        return (FN.index(p.op), mask, len(p.operands), rounded, 0, 0, 0), (imm[0], imm[1], imm[2])

    def run(self, limit: int) -> I64:
        m, dev = self.m, self.device
        nq = len(self.q_cap)
        head, cnt = np.zeros(nq, np.int64), np.zeros(nq, np.int64)
        total = int(self.q_cap.sum())
        val, tag, rdy = np.zeros(total), np.zeros(total, np.int64), np.zeros(total, np.int64)
        boxes = np.array([list(b) for stage in m.boxes for b in stage], np.int64).ravel()
        geo = np.array([self.npts, *m.shape, len(m.strips), m.workers, limit, STALL_CYCLES], np.int64)
        state = np.zeros(NSTATE * len(m.pes), np.int64)
        out = np.zeros(6, np.int64)
        cache = load_cache(dev)
        sets = cache.sets if cache else 0
        cache_cfg = np.array(
            [sets, cache.ways, cache.line_bytes, cache.fill_cycles] if cache else [0, 0, 1, 0], np.int64
        )
        cache_tag = np.full(max(1, sets * (cache.ways if cache else 0)), -1, np.int64)
        cache_used = np.full(len(cache_tag), -1, np.int64)
        bpc = dev.practical_bandwidth_gbs * 1e9 / (dev.clock_mhz * 1e6)
        arrays = (
            self.pe,
            self.consts,
            None,
            self.order,
            self.ins,
            self.outs,
            self.mem_pes,
            None,
            None,
            self.q_cap,
            head,
            cnt,
            self.q_base,
            self.q_peak,
            val,
            tag,
            rdy,
            self.tags,
            self.mem_in,
            self.mem_out,
            boxes,
            geo,
            None,
            self.elem,
            state,
            self.fires,
            out,
            cache_cfg,
            cache_tag,
            cache_used,
        )
        args: list[Any] = [
            ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else None for a in arrays
        ]
        args[2], args[7], args[8] = (
            ctypes.c_int64(len(m.pes)),
            ctypes.c_int64(self.nstore),
            ctypes.c_int64(self.nload),
        )
        args[22] = ctypes.c_double(bpc)
        _library()(*args)
        self.misses = int(out[5])
        return out

    def outputs(self) -> dict[str, Array]:
        """Each output field (NaN where nothing was stored), in the program's shape."""
        m = self.m
        shape = m.shape[3 - m.rank :]
        return {
            m.stages[k].name: self.mem_out[j * self.npts : (j + 1) * self.npts].reshape(shape)
            for j, k in enumerate(m.outputs())
        }


def _kind(m: CgraMapping, op: str) -> str:
    if op in KINDS:
        return op
    return "ARITH" if m.linear is not None else "TYPED"


def _field_index(m: CgraMapping, name: str) -> int:
    return [f for f, _, _ in m.inputs].index(name)


def _order(m: CgraMapping, index: dict[str, int]) -> I64:
    """Consumers before producers (a pop frees room for the same cycle's push)."""
    graph: dict[str, set[str]] = {p.name: set() for p in m.pes}
    for q in m.queues:
        graph[q.src].add(q.dst)  # src "depends" on dst: dst comes first
    return np.array([index[n] for n in TopologicalSorter(graph).static_order()], np.int64)


# ----------------------------------------------------------------------------------------- compiling

_LIB: list[Any] = []


def _library() -> Any:
    """``csrc/cgra.c`` compiled once (``native`` caches it) and loaded."""
    if _LIB:
        return _LIB[0].run
    codes = "".join(f"#define F_{name} {n}\n" for n, name in enumerate(FN))
    folder = resources.files("stencilmap.sim").joinpath("csrc")
    source = folder.joinpath("arith.h").read_text() + codes + folder.joinpath("cgra.c").read_text()
    unit = native.Unit("cgra", compiler(), (("cgra.c", source),), ("cgra.c",), CFLAGS, ("-lm",))
    try:
        library, _ = native.library(unit, ("sim",))
    except native.CompileError as exc:
        raise StencilmapError(f"compiling the CGRA simulator failed: {exc.first_error}") from None
    library.run.restype = None
    _LIB.append(library)
    return library.run
