"""The memory traffic of a CGRA worker mapping (CGRA §III-B, Fig. 3, 10): the loads each reader issues and
the stores each writer issues, per column class x ≡ c (mod workers). Facts of the mapping, read by its
assembly (``codegen.cgra``), the simulator and the cycle model (``model.cgra``)."""

from __future__ import annotations

from stencilmap.design.cgra.mapping import CgraMapping


def residues(x0: int, x1: int, w: int, r: int) -> int:
    """Columns x in [x0, x1) with x ≡ r (mod w)."""
    return max(0, (x1 - 1 - r) // w - (x0 - 1 - r) // w) if x1 > x0 else 0


def reads_of(m: CgraMapping, field: int, r: int) -> int:
    """Loads reader r of input ``field`` issues: every strip's rows, its columns x ≡ r (mod w), halos
    included (Fig. 3, 10); a lower-dimensional input is loaded at every point of the grid it spans."""
    z, y, _ = m.shape
    return sum(z * y * residues(*span, m.workers, r) for span in m.spans[field])


def stores_of(m: CgraMapping, stage: int, c: int) -> int:
    """Stores writer c of output ``stage`` issues: the last layer's points with x ≡ c (mod w), all strips."""
    boxes = m.boxes[m.box_id(m.layers - 1, stage)]
    return sum(
        max(0, z1 - z0) * max(0, y1 - y0) * residues(x0, x1, m.workers, c) for z0, z1, y0, y1, x0, x1 in boxes
    )


def ring_of(m: CgraMapping, stage: int, c: int) -> int:
    """``border: preserve``: the points of column class c outside the output's region (stored as input)."""
    if m.preserve is False:
        return 0
    z, y, x = m.shape
    return z * y * residues(0, x, m.workers, c) - stores_of(m, stage, c)
