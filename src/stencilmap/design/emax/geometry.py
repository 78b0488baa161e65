"""The size of the EMAX library's mapping (EMAX §4.2, §4.5, §4.6): the rows of p packed patterns, the most
patterns that fit a device's rows, the X chunks that fit an LMM, and the X-streams a time step moves.
Facts of the placement (``verify_mapping`` checks the rows), read by the builder and by ``model.emax``.
"""

from __future__ import annotations

from math import ceil


def paired(d: int, columns: int) -> bool:
    """Whether two mirrored degree-d patterns (2d + 2 columns each) fit side by side in ``columns`` (§4.6,
    Fig. 11: degree 1 on EMAX's 8 columns; degree 3 does not fit there)."""
    return 2 * (2 * d + 2) <= columns


def rows(d: int, p: int, columns: int) -> int:
    """EMAX rows the library maps for degree d and p parallel mappings on ``columns`` PE columns (§4.6).

    Mirrored pairs (``paired``): each pair 2d + 2 rows below the previous one, its second pattern one row
    lower, each pattern 2d + 5 rows high; at degree 1 that is the paper's 8 + 4(⌊p/2⌋ + (p mod 2) − 1) − (p mod 2).
    Otherwise the 2d + 5-row pattern repeated p times: the paper's 11p at degree 3. Other degrees and devices
    wider than EMAX's 8 columns follow the same placement (an assumption, not in the paper).
    """
    if p < 1:
        raise ValueError(f"p must be at least 1, got {p}")
    if paired(d, columns):
        return (2 * d + 2) * ((p - 1) // 2) + (p - 1) % 2 + 2 * d + 5
    return (2 * d + 5) * p


def max_mappings(d: int, available_rows: int, z: int, columns: int) -> int:
    """The most parallel mappings that fit the rows (and no more than the Z planes); 0 if none fits."""
    p = 0
    while p < z and rows(d, p + 1, columns) <= available_rows:
        p += 1
    return p


def group_streams(d: int, p: int, z: int, z0: int) -> int:
    """X-streams one step along Y of the Z group starting at plane ``z0`` moves DDR → LMM once the Y
    column is primed: the group's own planes (one new Y stream each, the rest reused through ``dist``)
    and the 2d neighbour planes beyond it, both clipped to the grid's ``z`` planes. Inside the grid
    this is formula (2), 2d + p."""
    planes = range(max(0, z0 - d), min(z, z0 + p + d))
    return len(planes)


def mapped_streams(d: int, p: int, y: int, z: int, chunks: int) -> int:
    """X-streams a whole time step moves DDR → LMM under the mapping (``design.emax``): every Z group
    sweeps Y once and each stream exists once per X chunk. Streams outside the grid (the Y and Z
    halos) are never moved, so an interior group's sweep is exactly formula (3), y(2d + p); formula
    (4) adds the first-step term (1) on top, which the paper neglects for p < y (§4.5)."""
    return chunks * y * sum(group_streams(d, p, z, z0) for z0 in range(0, z, p))


def x_chunks(x: int, d: int, itemsize: int, lmm_bytes: int) -> int:
    """X chunks so that a chunk's stream (its points and the 2d halo) fits one LMM (§4.2 (3), Fig. 7)."""
    for chunks in range(1, x + 1):
        if (ceil(x / chunks) + 2 * d) * itemsize <= lmm_bytes:
            return chunks
    raise ValueError(f"a {2 * d + 1}-point row of {itemsize}-byte values does not fit {lmm_bytes} bytes")
