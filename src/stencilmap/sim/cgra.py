"""A dedicated simulator for the triggered-instruction CGRA's worker mappings (``design.cgra``).

Why not the FPGA engine: a CGRA mapping is a graph of single-instruction PEs whose tokens carry the
row/column ids the control units generate (§III-A: filters compare them), whose loads return after the
memory's latency while the PE goes on issuing, and whose end is a ``DONE`` raised by counting stores.
``csrc/cgra.c`` runs it cycle by cycle with values (a PE fires when its operands are in its input
queues and its consumers have room; loads and stores share the device's bandwidth per cycle; the
device's clock); this module packs the mapping, compiles the C once (cached under
``STENCILMAP_CACHE_DIR``) and reads the results back. Nothing is taken from the reference.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from graphlib import TopologicalSorter
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stencilmap.cache import cache_dir
from stencilmap.design.cgra import CgraMapping, Pe
from stencilmap.errors import StencilmapError
from stencilmap.model.cgra import CgraPrediction, predict, stores_of
from stencilmap.model.devices import Device
from stencilmap.sim.engine import CFLAGS, compiler

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]

OPS = ("AGEN", "LOAD", "FILTER", "MUL", "MAC", "ADD", "STORE", "COUNT", "DONE")
PCOLS = 10
STATUS = ("done", "deadlock", "limit", "misaligned")
#: Cycles without any firing that mean a deadlock (a load returns within the device's latency).
STALL_CYCLES = 10_000


@dataclass(frozen=True)
class CgraRun:
    """What the CGRA simulation produced."""

    mapping: CgraMapping
    status: str
    cycles: int
    output: Array  # the output field, NaN where nothing was stored
    firings: int
    memory_ops: int
    bytes_read: int
    bytes_written: int
    fires: dict[str, int]
    peaks: dict[str, tuple[int, int]]  # queue → (peak, depth)
    clock_mhz: float
    flops: float
    roofline_gops: float
    prediction: CgraPrediction
    sim_seconds: float

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
            "predicted_cycles": self.prediction.cycles,
            "memory_ops": self.memory_ops,
        }


def reader_tags(m: CgraMapping, r: int) -> I64:
    """The tags reader r streams: strip by strip, row-major, the columns x ≡ r (mod w) (Fig. 3)."""
    z, y, x = m.shape
    npts = z * y * x
    parts = []
    for s in range(len(m.strips)):
        x0, x1 = m.reader_span(s)
        xs = np.arange(x0, x1, dtype=np.int64)
        xs = xs[xs % m.workers == r]
        parts.append(np.add.outer(np.arange(z * y, dtype=np.int64) * x, xs).ravel() + s * npts)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def simulate_cgra(
    m: CgraMapping,
    inputs: dict[str, Array],
    device: Device,
    roofline_gops: float,
    max_cycles: int | None = None,
) -> CgraRun:
    """Run mapping ``m`` on ``inputs`` (arrays of the program's shape)."""
    packed = _Packed(m, inputs, device)
    limit = max_cycles if max_cycles is not None else 20 * packed.reads + 100_000
    start = time.perf_counter()
    out = packed.run(limit)
    seconds = time.perf_counter() - start
    status = STATUS[int(out[0])]
    if status == "misaligned":
        raise StencilmapError(f"CGRA simulation: PE '{m.pes[int(out[4])].name}' got operands of different points")  # fmt: skip
    size = _itemsize(m.dtype)
    loads = sum(len(t) for t in packed.tag_parts)
    stores = int(out[3]) - loads if status == "done" else int(np.count_nonzero(~np.isnan(packed.mem_out)))
    flops = sum(_points(box) for layer in m.boxes for box in layer) * _ops_per_point(m)
    return CgraRun(
        mapping=m, status=status, cycles=int(out[1]), output=packed.output(), firings=int(out[2]),
        memory_ops=int(out[3]), bytes_read=loads * size, bytes_written=stores * size,
        fires={p.name: int(packed.fires[i]) for i, p in enumerate(m.pes)},
        peaks={f"{q.src}->{q.dst}.{q.port}": (int(packed.q_peak[k]), q.depth) for k, q in enumerate(m.queues)},
        clock_mhz=device.clock_mhz, flops=float(flops), roofline_gops=roofline_gops,
        prediction=predict(m, device), sim_seconds=seconds,
    )  # fmt: skip


def _points(box: tuple[int, int, int, int, int, int]) -> int:
    z0, z1, y0, y1, x0, x1 = box
    return max(0, z1 - z0) * max(0, y1 - y0) * max(0, x1 - x0)


def _ops_per_point(m: CgraMapping) -> int:
    """Flops of one point: a multiply per product, an addition per further product and the constant."""
    return 2 * len(m.stencil.terms) - 1 + (1 if m.stencil.constant else 0)


def _itemsize(dtype: str) -> int:
    return int(np.dtype(dtype).itemsize)


class _Packed:
    """The mapping as the arrays ``csrc/cgra.c`` reads (see its header)."""

    def __init__(self, m: CgraMapping, inputs: dict[str, Array], device: Device) -> None:
        self.m, self.device = m, device
        index = {p.name: i for i, p in enumerate(m.pes)}
        self.shape = m.shape
        self.npts = m.shape[0] * m.shape[1] * m.shape[2]
        fields = list(m.stencil.fields)
        self.mem_in = np.concatenate([np.asarray(inputs[f], np.float64).ravel() for f in fields])
        self.mem_out = np.full(self.npts, np.nan)
        ins: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(m.pes))}
        outs: dict[int, list[int]] = {i: [] for i in range(len(m.pes))}
        for k, q in enumerate(m.queues):
            dst = m.pes[index[q.dst]]
            ins[index[q.dst]].append((dst.inputs.index(q.port), k))
            outs[index[q.src]].append(k)
        caps = [q.depth for q in m.queues]
        self.tag_parts: list[I64] = []
        pe = np.zeros((len(m.pes), PCOLS), np.int64)
        consts = np.zeros(len(m.pes))
        flat_ins: list[int] = []
        flat_outs: list[int] = []
        for i, p in enumerate(m.pes):
            ports = [k for _, k in sorted(ins[i])]
            pe[i, :6] = (OPS.index(p.op), p.latency, len(flat_ins), len(ports), len(flat_outs), len(outs[i]))
            flat_ins += ports
            flat_outs += outs[i]
            consts[i] = p.const
            pe[i, 6:] = self._params(p, fields, caps)
        self.pe, self.consts = pe, consts
        self.ins, self.outs = np.array(flat_ins or [0], np.int64), np.array(flat_outs or [0], np.int64)
        self.q_cap = np.array(caps, np.int64)
        self.q_base = np.concatenate([[0], np.cumsum(self.q_cap)[:-1]]).astype(np.int64)
        self.q_peak = np.zeros(len(caps), np.int64)
        self.tags = np.concatenate(self.tag_parts) if self.tag_parts else np.zeros(1, np.int64)
        self.reads = len(self.tags)
        self.order = _order(m, index)
        stores = [i for i, p in enumerate(m.pes) if p.op == "STORE"]
        loads = [i for i, p in enumerate(m.pes) if p.op == "LOAD"]
        self.nstore, self.nload = len(stores), len(loads)
        self.mem_pes = np.array(stores + loads, np.int64)
        self.fires = np.zeros(len(m.pes), np.int64)

    def _params(self, p: Pe, fields: list[str], caps: list[int]) -> tuple[int, int, int, int]:
        _, y, x = self.shape
        m = self.m
        if p.op == "AGEN":
            tags = reader_tags(m, p.worker)
            start = sum(len(t) for t in self.tag_parts)
            self.tag_parts.append(tags)
            return (start, len(tags), 0, 0)
        if p.op == "LOAD":
            caps.append(p.latency + 4)  # the loads in flight: the response queue
            return (fields.index(p.field) * self.npts, len(caps) - 1, 0, 0)
        if p.op == "FILTER":
            return (p.layer, *p.offset)
        if p.op in ("MUL", "MAC"):
            dz, dy, dx = p.offset
            return ((dz * y + dy) * x + dx, 0, 0, 0)
        if p.op == "COUNT":
            return (stores_of(m, p.worker), 0, 0, 0)
        return (0, 0, 0, 0)

    def run(self, limit: int) -> I64:
        m, dev = self.m, self.device
        nq = len(self.q_cap)
        head, cnt = np.zeros(nq, np.int64), np.zeros(nq, np.int64)
        total = int(self.q_cap.sum())
        val, tag, rdy = np.zeros(total), np.zeros(total, np.int64), np.zeros(total, np.int64)
        boxes = np.array([list(b) for layer in m.boxes for b in layer], np.int64).ravel()
        geo = np.array([self.npts, *self.shape, len(m.strips), m.dtype == "float32", limit, STALL_CYCLES, _itemsize(m.dtype)], np.int64)  # fmt: skip
        state = np.zeros(2 * len(m.pes), np.int64)
        out = np.zeros(5, np.int64)
        bpc = dev.practical_bandwidth_gbs * 1e9 / (dev.clock_mhz * 1e6)
        arrays = (
            self.pe, self.consts, None, self.order, self.ins, self.outs, self.mem_pes, None, None,
            self.q_cap, head, cnt, self.q_base, self.q_peak, val, tag, rdy, self.tags, self.mem_in,
            self.mem_out, boxes, geo, None, state, self.fires, out,
        )  # fmt: skip
        args: list[Any] = [
            ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else None for a in arrays
        ]
        args[2], args[7], args[8] = ctypes.c_int64(len(m.pes)), ctypes.c_int64(self.nstore), ctypes.c_int64(self.nload)  # fmt: skip
        args[22] = ctypes.c_double(bpc)
        _library()(*args)
        return out

    def output(self) -> Array:
        z, y, x = self.shape
        full = self.mem_out.reshape(z, y, x)
        return full.reshape(tuple(n for n in self.m.shape[3 - self.m.rank :]))


def _order(m: CgraMapping, index: dict[str, int]) -> I64:
    """Consumers before producers (a pop frees room for the same cycle's push)."""
    graph: dict[str, set[str]] = {p.name: set() for p in m.pes}
    for q in m.queues:
        graph[q.src].add(q.dst)  # src "depends" on dst: dst comes first
    return np.array([index[n] for n in TopologicalSorter(graph).static_order()], np.int64)


# ----------------------------------------------------------------------------------------- compiling

_LIB: list[Any] = []


def _library() -> Any:
    """``csrc/cgra.c`` compiled once per source (cached by its hash) and loaded."""
    if _LIB:
        return _LIB[0].run
    source = resources.files("stencilmap.sim").joinpath("csrc", "cgra.c").read_text()
    digest = hashlib.sha256("\n".join([*CFLAGS, source]).encode()).hexdigest()[:24]
    path = cache_dir("sim") / f"cgra-{digest}.so"
    if not path.is_file():
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            unit, lib = Path(tmp) / "cgra.c", Path(tmp) / path.name
            unit.write_text(source)
            done = subprocess.run([compiler(), *CFLAGS, "-o", str(lib), str(unit), "-lm"], capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["no message"])[0]
                raise StencilmapError(f"compiling the CGRA simulator failed: {first}")
            os.replace(lib, path)
    library = ctypes.CDLL(str(path))
    library.run.restype = None
    _LIB.append(library)
    return library.run
