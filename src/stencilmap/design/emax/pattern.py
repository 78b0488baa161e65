"""The EMAX library's basic pattern of one plane and its packing (EMAX §4.3, §4.4, §4.6, Fig. 8, 9, 11);
see the package docstring for the layout."""

from __future__ import annotations

from stencilmap.design.emax.checks import fail
from stencilmap.design.emax.geometry import paired
from stencilmap.design.emax.mapping import RGI_ZERO, Instruction, Offset


def _reg(plane: int, what: str) -> str:
    return f"p{plane}.{what}"


def _stream(dz: int, dy: int) -> str:
    """The register of the load of stream A[z+dz][y+dy] (relative to the group's first plane)."""
    z = "z" if dz == 0 else f"z{dz:+d}"
    y = "y" if dy == 0 else f"y{dy:+d}"
    return f"A[{z}][{y}]"


def fmt(v: float) -> str:
    return repr(float(v))


def basic_pattern(d: int, plane: int, p: int, coeff: dict[Offset, float], const: float) -> list[Instruction]:
    """The instructions of plane ``plane`` of a group of p (relative rows and columns, unmirrored)."""
    loads, acc = _load_rows(d, plane, p, coeff, const)
    return loads + _x_taps(d, plane) + _tail_rows(d, plane, coeff, acc)


def _load_rows(
    d: int, plane: int, p: int, coeff: dict[Offset, float], const: float
) -> tuple[list[Instruction], str]:
    """Rows 0..2d: the Y column (dist 1), the Z neighbours beside it, the accumulator column (EMAX §4.3,
    Fig. 8); returns them and the accumulator's last register."""
    out: list[Instruction] = []
    acc, w = RGI_ZERO, 2 * d + 1  # the accumulator column
    for r in range(2 * d + 1):
        k = r - d
        y_reg = _stream(plane, k)
        out.append(Instruction(r, 0, "EAG", "LD", y_reg, rgi=str(d), dist=1, plane=plane, dz=plane, dy=k))
        if k == 0:
            continue
        z = plane + k
        z_reg = _stream(z, 0)
        # the neighbour plane's stream: another plane's centre inside the group, else loaded here once
        # (by the first plane for planes below the group, the last one for planes above; EMAX §4.4)
        if not 0 <= z < p and (plane == 0 if k < 0 else plane == p - 1):
            out.append(Instruction(r, 1, "EAG", "LD", z_reg, rgi=str(d), plane=plane, dz=z, dy=0))
        src0 = acc if acc != RGI_ZERO else "rgi"  # the first FMA adds to the constant, held in RGI
        rgi = fmt(const) if acc == RGI_ZERO else RGI_ZERO
        e1 = _reg(plane, f"acc{r}a")
        out.append(
            Instruction(
                r, w, "EX1", "FMA", e1, (src0, y_reg), rgi, plane=plane, coeff=coeff.get((0, k, 0), 0.0)
            )
        )
        acc = _reg(plane, f"acc{r}")
        out.append(
            Instruction(r, w, "EX2", "FMA", acc, (e1, z_reg), plane=plane, coeff=coeff.get((k, 0, 0), 0.0))
        )
    return out, acc


def _x_taps(d: int, plane: int) -> list[Instruction]:
    """Row d: the X neighbours x−d..x+d from the FIFOs the centre LMM fills (EMAX §4.3)."""
    centre = _stream(plane, 0)
    taps = [c - d - 1 if c <= d else c - d for c in range(1, 2 * d + 1)]
    return [
        Instruction(d, c, "EX1", "FIFO", _reg(plane, f"x{dx:+d}"), (centre,), plane=plane, dx=dx)
        for c, dx in enumerate(taps, start=1)
    ]


def _tail_rows(d: int, plane: int, coeff: dict[Offset, float], acc: str) -> list[Instruction]:
    """Rows 2d+1..2d+4: the centre and X pairs times their coefficients, their partial sums (three per PE:
    EX1 adds two, EX2 a third), + the accumulator, the store."""
    out: list[Instruction] = []
    r, centre = 2 * d + 1, _stream(plane, 0)
    partials = [_reg(plane, "px0")]
    out.append(
        Instruction(r, 0, "EX1", "FMUL", partials[0], (centre,), plane=plane, coeff=coeff.get((0, 0, 0), 0.0))
    )
    for k in range(1, d + 1):
        lo, hi = _reg(plane, f"m{k}"), _reg(plane, f"px{k}")
        out.append(
            Instruction(
                r,
                k,
                "EX1",
                "FMUL",
                lo,
                (_reg(plane, f"x{-k:+d}"),),
                plane=plane,
                coeff=coeff.get((0, 0, -k), 0.0),
            )
        )
        out.append(
            Instruction(
                r,
                k,
                "EX2",
                "FMA",
                hi,
                (lo, _reg(plane, f"x{k:+d}")),
                plane=plane,
                coeff=coeff.get((0, 0, k), 0.0),
            )
        )
        partials.append(hi)
    sums: list[str] = []
    for g, i in enumerate(range(0, len(partials), 3)):
        group = partials[i : i + 3]
        if len(group) == 1:  # a lone partial passes on
            sums.append(group[0])
            continue
        s1 = _reg(plane, f"s{g}a")
        out.append(Instruction(r + 1, g, "EX1", "FADD", s1, (group[0], group[1]), plane=plane))
        if len(group) == 3:
            s2 = _reg(plane, f"s{g}")
            out.append(Instruction(r + 1, g, "EX2", "FADD", s2, (s1, group[2]), plane=plane))
            s1 = s2
        sums.append(s1)
    if len(sums) > 2:
        raise fail(f"degree {d}: the X sum needs more than the two ALUs of one PE")
    total = _reg(plane, "sum")
    out.append(
        Instruction(
            r + 2,
            0,
            "EX1",
            "FADD",
            total if len(sums) == 1 else _reg(plane, "sum1"),
            (sums[0], acc),
            plane=plane,
        )
    )
    if len(sums) == 2:
        out.append(Instruction(r + 2, 0, "EX2", "FADD", total, (_reg(plane, "sum1"), sums[1]), plane=plane))
    out.append(Instruction(r + 3, 2 * d, "EAG", "ST", _reg(plane, "out"), (total,), "0", plane=plane))
    return out


def origins(d: int, p: int, columns: int) -> list[tuple[int, int, bool]]:
    """(row, column, mirrored) of each plane's pattern (§4.6, Fig. 11): mirrored pairs side by side when
    they fit the columns, each pair 2d + 2 rows below the previous one; otherwise one pattern after the
    other (2d + 5 rows)."""
    w, h = 2 * d + 2, 2 * d + 5
    if paired(d, columns):
        return [((2 * d + 2) * (j // 2) + j % 2, w * (j % 2), j % 2 == 1) for j in range(p)]
    return [(h * j, 0, False) for j in range(p)]


def place(d: int, p: int, columns: int, coeff: dict[Offset, float], const: float) -> tuple[Instruction, ...]:
    placed: list[Instruction] = []
    w = 2 * d + 2
    for j, (r0, c0, mirrored) in enumerate(origins(d, p, columns)):
        for i in basic_pattern(d, j, p, coeff, const):
            col = c0 + (w - 1 - i.col if mirrored else i.col)
            placed.append(_moved(i, i.row + r0, col))
    return tuple(sorted(placed, key=lambda i: (i.row, i.col, _UNITS[i.unit])))


def _moved(i: Instruction, row: int, col: int) -> Instruction:
    return Instruction(
        row, col, i.unit, i.op, i.dst, i.srcs, i.rgi, i.dist, i.plane, i.dz, i.dy, i.dx, i.coeff
    )


_UNITS = {"EAG": 0, "EX1": 1, "EX2": 2}


def execution_order(i: Instruction) -> tuple[int, int, int, int]:
    """Order within one execution: the loads first (they read LMMs that state 2 filled before state 3;
    a load's value reaches rows above it through the ring, §3.1), then row by row, EX1 before EX2."""
    return (0 if i.op == "LD" else 1, i.row, _UNITS[i.unit], i.col)
