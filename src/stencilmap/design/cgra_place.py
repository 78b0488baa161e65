"""The PEs of a CGRA worker mapping, their queues (``wire``), and their places on the grid (``place``).

Placement follows Fig. 4: the compute PEs of one product form a block of w (FILTER, MUL/MAC) pairs on
one grid row, the pair of reader r in columns 2r, 2r + 1 of the block, so that the PEs of a block share
their coefficient and the PEs of a column (within the blocks) listen to the same reader; as many blocks
as fit share a row. Readers take the first rows, writers and synchronization the last.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from stencilmap.design.cgra_terms import LinearStencil

if TYPE_CHECKING:
    from stencilmap.design.cgra import Fabric, Pe, Queue


def reader_name(field: str, r: int) -> str:
    return f"rd.{field}.{r}"


def chain_name(t: int, c: int, k: int, op: str) -> str:
    return f"L{t}.w{c}.k{k}.{op.lower()}"


def wire(
    lin: LinearStencil, w: int, q: int, depths: list[tuple[int, int]], fab: Fabric
) -> tuple[tuple[Pe, ...], tuple[Queue, ...]]:
    """Every PE (unplaced) and every input queue of the mapping (see ``design.cgra``)."""
    from stencilmap.design.cgra import Pe, Queue

    e = fab.queue_entries
    pes: list[Pe] = []
    queues: list[Queue] = []
    for f in lin.fields:
        for r in range(w):
            base = reader_name(f, r)
            pes.append(Pe(f"{base}.agen", "AGEN", 0, 0, worker=r, field=f, latency=1))
            pes.append(Pe(f"{base}.load", "LOAD", 0, 0, worker=r, inputs=("addr",), field=f, latency=fab.mem_latency))  # fmt: skip
            queues.append(Queue(f"{base}.agen", f"{base}.load", "addr", e))
    last = {}
    for t in range(q):
        for c in range(w):
            last[(t, c)] = _chain(lin, t, c, w, depths, fab, pes, queues)
    for c in range(w):
        store, count = f"wr.{c}.store", f"sync.{c}.count"
        pes.append(Pe(store, "STORE", 0, 0, worker=c, inputs=("x",), field=lin.output, latency=1))
        pes.append(Pe(count, "COUNT", 0, 0, worker=c, inputs=("x",), latency=1))
        queues += [Queue(last[(q - 1, c)], store, "x", e), Queue(store, count, "x", e)]
        queues.append(Queue(count, "sync.done", f"c{c}", e))
    pes.append(Pe("sync.done", "DONE", 0, 0, inputs=tuple(f"c{c}" for c in range(w)), latency=1))
    return tuple(pes), tuple(queues)


def _chain(
    lin: LinearStencil,
    t: int,
    c: int,
    w: int,
    depths: list[tuple[int, int]],
    fab: Fabric,
    pes: list[Pe],
    queues: list[Queue],
) -> str:
    """Worker c of layer t: FILTER → MUL, FILTER → MAC, … (+ ADD of the constant); returns its last PE."""
    from stencilmap.design.cgra import Pe, Queue

    prev = ""
    for k, term in enumerate(lin.terms):
        src = (c + term.offset[2]) % w
        stream = f"{reader_name(term.field, src)}.load" if t == 0 else _last_of(lin, t - 1, src)
        flt = chain_name(t, c, k, "flt")
        op = "MUL" if k == 0 else "MAC"
        name = chain_name(t, c, k, op)
        pes.append(Pe(flt, "FILTER", 0, 0, t, c, ("x",), offset=term.offset, field=term.field, latency=1))
        ports = ("x",) if k == 0 else ("acc", "x")
        pes.append(Pe(name, op, 0, 0, t, c, ports, term.coeff, term.offset, term.field, fab.pe_latency))
        data, acc = depths[k]
        queues.append(Queue(stream, flt, "x", fab.queue_entries))
        queues.append(Queue(flt, name, "x", data))
        if k:
            queues.append(Queue(prev, name, "acc", acc))
        prev = name
    if lin.constant:
        add = f"L{t}.w{c}.add"
        pes.append(Pe(add, "ADD", 0, 0, t, c, ("acc",), lin.constant, latency=fab.pe_latency))
        queues.append(Queue(prev, add, "acc", fab.queue_entries))
        prev = add
    return prev


def _last_of(lin: LinearStencil, t: int, c: int) -> str:
    if lin.constant:
        return f"L{t}.w{c}.add"
    k = len(lin.terms) - 1
    return chain_name(t, c, k, "MUL" if k == 0 else "MAC")


def place(pes: tuple[Pe, ...], cols: int) -> tuple[Pe, ...]:
    """Grid positions (see the module docstring); the order of ``pes`` is kept."""
    w = 1 + max(p.worker for p in pes)
    pos: dict[str, tuple[int, int]] = {}
    row = _fill([p for p in pes if p.op in ("AGEN", "LOAD")], cols, 0, pos)
    block = 2 * w
    per_row = max(1, cols // block)
    pairs = [p for p in pes if p.op in ("FILTER", "MUL", "MAC")]
    if block > cols:
        row = _fill(pairs, cols, row, pos)
    else:
        products = sorted({(p.layer, _k(p.name)) for p in pairs})
        slot = {key: i for i, key in enumerate(products)}
        for p in pairs:
            i = slot[(p.layer, _k(p.name))]
            src = _reader_col(p, w)
            pos[p.name] = (row + i // per_row, (i % per_row) * block + 2 * src + (p.op != "FILTER"))
        row += -(-len(products) // per_row)
    rest = [p for p in pes if p.name not in pos]
    _fill(rest, cols, row, pos)
    return tuple(replace(p, row=pos[p.name][0], col=pos[p.name][1]) for p in pes)


def _fill(items: list[Pe], cols: int, row: int, pos: dict[str, tuple[int, int]]) -> int:
    """Row-major from ``row``; returns the first free row after them."""
    for i, p in enumerate(items):
        pos[p.name] = (row + i // cols, i % cols)
    return row + -(-len(items) // cols)


def _k(name: str) -> int:
    return int(name.split(".")[2][1:])


def _reader_col(p: Pe, w: int) -> int:
    """The reader (x residue) a compute PE listens to: (worker + dx) mod w."""
    return (p.worker + p.offset[2]) % w
