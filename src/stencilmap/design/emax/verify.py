"""The invariants of an EMAX mapping (EMAX §3.1, §4.6)."""

from __future__ import annotations

from stencilmap.design.emax.geometry import rows
from stencilmap.design.emax.mapping import EmaxMapping
from stencilmap.errors import StencilmapError


def verify_mapping(m: EmaxMapping) -> None:
    """Invariants: no PE unit used twice, every row inside ``rows`` and every column inside ``columns``,
    the rows the paper's formula gives, each register written once and read after it is written (loads
    read LMMs prefetched in state 2, so their values reach every row through the ring, §3.1)."""
    seen: set[tuple[int, int, str]] = set()
    loaded = {i.dst for i in m.instructions if i.op == "LD"}
    written: set[str] = set()
    for i in m.instructions:
        key = (i.row, i.col, i.unit)
        if key in seen:
            raise StencilmapError(f"EMAX mapping uses PE ({i.row}, {i.col}) {i.unit} twice")
        seen.add(key)
        if not (0 <= i.row < m.rows and 0 <= i.col < m.columns):
            raise StencilmapError(f"EMAX instruction at ({i.row}, {i.col}) outside {m.rows} × {m.columns}")
        for s in i.srcs:
            if s not in written and s not in loaded and s != "rgi":
                raise StencilmapError(
                    f"EMAX instruction at ({i.row}, {i.col}) reads '{s}' before it is written"
                )
        if i.dst in written:
            raise StencilmapError(f"EMAX register '{i.dst}' written twice")
        written.add(i.dst)
    expected = rows(m.degree, m.p, m.columns)
    if max(i.row for i in m.instructions) + 1 != m.rows or m.rows != expected:
        raise StencilmapError(f"EMAX mapping uses {m.rows} rows; §4.6 gives {expected}")
