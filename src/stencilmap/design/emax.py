"""The EMAX 3D-stencil library's instruction mapping (EMAX paper §3.3, §4.3–§4.6, Fig. 4, 8, 9, 11).

A degree-d star stencil ``out = c + Σ c_o · v(o)`` over one input field is mapped onto the PE grid of an
EMAX (rows × columns; each PE an EAG with its LMM and FIFOs, and two ALUs EX1 → EX2). One execution
computes one X-stream (a row of X, or one chunk of it, Fig. 7) of p neighbouring Z planes.

The basic pattern of one plane (w = 2d + 2 columns, h = 2d + 5 rows; relative row r, column c)::

    rows 0..2d   c = 0      LD  A[z][y−d+r]   Y neighbours in one column, dist = 1 (Fig. 4, 8): the next
                                              execution shifts the mapping one row and reuses 2d streams
                 c = 1      LD  A[z−d+r][y]   Z neighbours (r ≠ d)
                 c = 1..2d  FIFO x−d..x+d     row d: X neighbours from the FIFOs that the centre LMM fills
                 c = 2d+1   FMA acc chain     EX1 Y term, EX2 Z term of row r (RGI: the constant c)
    row 2d+1     c = 0..d   FMUL/FMA          centre and the X pairs (x−k, x+k) times their coefficients
    row 2d+2     c = 0..    FADD              the X partial sums, three per PE (EX1, EX2)
    row 2d+3     c = 0      FADD              X sum + acc
    row 2d+4     c = 2d     ST                the result into the PE's LMM (state 4 moves it to DDR3)

It gives 7 rows × 4 columns at degree 1 and 11 × 8 at degree 3, the paper's basic patterns (§4.6).
Packing (§4.4, Fig. 9, 11): p planes share their common loads — a plane's Z neighbour inside the group is
the other plane's centre load, and each of the 2d planes beyond the group is loaded once. When two
patterns fit side by side (2w ≤ columns: degree 1 on 8 columns) the second plane is mirrored into the
free columns one row lower (its Z−1 row then meets the first plane's centre row) and further pairs start
2d + 2 rows lower: their loads use the EAGs of the previous pair's arithmetic rows ("the empty units").
Otherwise patterns stack in subsequent rows. Rows: 8 + 4(⌊p/2⌋ + p mod 2 − 1) − p mod 2 at degree 1,
11p at degree 3, 9p at degree 2 (``model.emax.rows``; ``verify_mapping`` checks the placement uses
exactly that many rows and no unit twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Literal

from stencilmap.design.common import concrete_shape
from stencilmap.design.ir import Channel, Design, Module, params
from stencilmap.design.registry import BuildConfig, register
from stencilmap.device.catalog import Device, load_device
from stencilmap.errors import StencilmapError, param
from stencilmap.model import emax as model
from stencilmap.names import comment
from stencilmap.program.dtypes import is_float
from stencilmap.program.expr import Binary, Cast, Const, Expr, Ref, Unary, Var, refs
from stencilmap.program.ir import Program, Stencil

Unit = Literal["EAG", "EX1", "EX2"]
Op = Literal["LD", "ST", "FIFO", "FMUL", "FMA", "FADD"]
Offset = tuple[int, int, int]  # (dz, dy, dx), C order

#: EMAX §3.1: the data of one LMM can be sent to at most 8 FIFOs of its row.
FIFOS_PER_ROW = 8
RGI_ZERO = "0"


@dataclass(frozen=True, slots=True)
class Instruction:
    """One mnemonic (Fig. 3): the PE (row, col), its unit, the ALU or MEM op, operands, RGI and dist.

    ``dst`` names the register (or LMM) written; ``srcs`` the registers read. Loads name their stream by
    (``dz``, ``dy``) relative to the group's first plane and the current Y; FIFO taps by ``dx``;
    ``coeff`` is the RGI constant of FMUL / FMA.
    """

    row: int
    col: int
    unit: Unit
    op: Op
    dst: str
    srcs: tuple[str, ...] = ()
    rgi: str = RGI_ZERO
    dist: int = 0
    plane: int = 0
    dz: int = 0
    dy: int = 0
    dx: int = 0
    coeff: float = 0.0


@dataclass(frozen=True, slots=True)
class EmaxMapping:
    """The library's mapping of one program onto one EMAX device."""

    program: str
    field: str  # the input read
    output: str
    dtype: str
    shape: tuple[int, int, int]  # (Z, Y, X); a 2-D program has Z = 1
    degree: int
    p: int
    rows: int
    columns: int
    dist: int
    x_chunks: int
    chunk: int  # X points one execution computes (the last chunk may be shorter)
    lmm_words: int  # words of one LMM
    constant: float
    coefficients: tuple[tuple[Offset, float], ...]
    instructions: tuple[Instruction, ...]
    device: str

    @property
    def stream_words(self) -> int:
        """Words of one LMM stream: a chunk and its 2d halo."""
        return self.chunk + 2 * self.degree

    def loads(self) -> tuple[Instruction, ...]:
        return tuple(i for i in self.instructions if i.op == "LD")


# ------------------------------------------------------------------------------------------- checks


def _fail(reason: str) -> StencilmapError:
    return StencilmapError(f"the EMAX mapping cannot serve this program: {reason}")


def _stage(program: Program) -> tuple[Stencil, str]:
    """The one stencil of a one-stage program and the one field it reads."""
    if len(program.stencils) != 1 or len(program.outputs) != 1:
        raise _fail(f"it has {len(program.stencils)} stencils; the library maps one stage (EMAX §4.1)")
    if program.iterate != 1:
        raise _fail(f"iterate {program.iterate}: the library computes one time step per call (EMAX §4.2)")
    if program.rank not in (2, 3):
        raise _fail(f"it is {program.rank}-D; the library maps 3-D stencils (2-D as one Z plane)")
    if program.params:
        raise _fail("it reads param arrays; the coefficients must be constants (EMAX §4.2: array C)")
    st = program.stencils[0]
    fields = sorted({r.field for r in _refs(st)})
    if len(fields) != 1 or program.input(fields[0]) is None:
        raise _fail(f"it reads {len(fields)} fields; the library streams one input array A (EMAX §4.2)")
    if st.boundary_of(fields[0]).kind != "shrink" or program.border != "ignore":
        raise _fail("its border is not left undefined (shrink / border: ignore)")
    if not is_float(st.dtype) or program.field_dtype(fields[0]) != st.dtype:
        raise _fail(f"it computes {st.dtype} from {program.field_dtype(fields[0])}; EMAX streams one float type")  # fmt: skip
    return st, fields[0]


def _refs(st: Stencil) -> list[Ref]:
    out = list(refs(st.expr))
    for t in st.temps:
        out.extend(refs(t.expr))
    return out


def _lift(offset: tuple[int, ...]) -> Offset:
    """A 2-D offset (dy, dx) as (0, dy, dx)."""
    return (0, offset[0], offset[1]) if len(offset) == 2 else (offset[0], offset[1], offset[2])


def star_degree(offsets: set[Offset]) -> int:
    """The degree of a symmetric star window; raises for anything the pattern cannot serve."""
    for o in offsets:
        if sum(1 for v in o if v) > 1:
            raise _fail(f"offset {o} is off the axes: only star windows map (EMAX §2.1)")
        if tuple(-v for v in o) not in offsets:
            raise _fail(f"the window is asymmetric (reads {o} but not its mirror): the pattern is centred")
    d = max((abs(v) for o in offsets for v in o), default=0)
    if d < 1:
        raise _fail("it reads no neighbour (degree 0)")
    return d


def linear_form(program: Program, st: Stencil) -> tuple[float, dict[Offset, float]]:
    """``expr = c + Σ c_o · v(o)``: the constant and the coefficient of each offset (EMAX §4.2: the
    library multiplies A by the constant coefficients C). Raises for a non-linear expression."""
    temps = {t.name: t.expr for t in st.temps}

    def lin(e: Expr) -> tuple[float, dict[Offset, float]]:
        if isinstance(e, Const) and not isinstance(e.value, bool):
            return float(e.value), {}
        if isinstance(e, Ref):
            return 0.0, {_lift(e.offset): 1.0}
        if isinstance(e, Var) and not e.index:
            if e.name in temps:
                return lin(temps[e.name])
            c = program.constant(e.name)
            if c is not None:
                return float(c.value), {}
        if isinstance(e, Cast) and is_float(e.dtype):
            return lin(e.operand)
        if isinstance(e, Unary) and e.op in ("-", "+"):
            k, t = lin(e.operand)
            return (-k, {o: -v for o, v in t.items()}) if e.op == "-" else (k, t)
        if isinstance(e, Binary) and e.op in ("+", "-", "*", "/"):
            (ka, ta), (kb, tb) = lin(e.lhs), lin(e.rhs)
            if e.op in ("+", "-"):
                s = 1.0 if e.op == "+" else -1.0
                return ka + s * kb, {o: ta.get(o, 0.0) + s * tb.get(o, 0.0) for o in {*ta, *tb}}
            if e.op == "*" and not ta:
                return ka * kb, {o: ka * v for o, v in tb.items()}
            if e.op in ("*", "/") and not tb and (e.op == "*" or kb != 0):
                f = kb if e.op == "*" else 1.0 / kb
                return ka * f, {o: v * f for o, v in ta.items()}
        raise _fail(f"its expression is not a constant-coefficient sum (at {type(e).__name__}); EMAX §4.2")

    return lin(st.expr)


# ------------------------------------------------------------------------------------------ pattern


def _reg(plane: int, what: str) -> str:
    return f"p{plane}.{what}"


def _stream(dz: int, dy: int) -> str:
    """The register of the load of stream A[z+dz][y+dy] (relative to the group's first plane)."""
    z = "z" if dz == 0 else f"z{dz:+d}"
    y = "y" if dy == 0 else f"y{dy:+d}"
    return f"A[{z}][{y}]"


def _fmt(v: float) -> str:
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
        rgi = _fmt(const) if acc == RGI_ZERO else RGI_ZERO
        e1 = _reg(plane, f"acc{r}a")
        out.append(Instruction(r, w, "EX1", "FMA", e1, (src0, y_reg), rgi, plane=plane, coeff=coeff.get((0, k, 0), 0.0)))  # fmt: skip
        acc = _reg(plane, f"acc{r}")
        out.append(Instruction(r, w, "EX2", "FMA", acc, (e1, z_reg), plane=plane, coeff=coeff.get((k, 0, 0), 0.0)))  # fmt: skip
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
    out.append(Instruction(r, 0, "EX1", "FMUL", partials[0], (centre,), plane=plane, coeff=coeff.get((0, 0, 0), 0.0)))  # fmt: skip
    for k in range(1, d + 1):
        lo, hi = _reg(plane, f"m{k}"), _reg(plane, f"px{k}")
        out.append(Instruction(r, k, "EX1", "FMUL", lo, (_reg(plane, f"x{-k:+d}"),), plane=plane, coeff=coeff.get((0, 0, -k), 0.0)))  # fmt: skip
        out.append(Instruction(r, k, "EX2", "FMA", hi, (lo, _reg(plane, f"x{k:+d}")), plane=plane, coeff=coeff.get((0, 0, k), 0.0)))  # fmt: skip
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
        raise _fail(f"degree {d}: the X sum needs more than the two ALUs of one PE")
    total = _reg(plane, "sum")
    out.append(Instruction(r + 2, 0, "EX1", "FADD", total if len(sums) == 1 else _reg(plane, "sum1"), (sums[0], acc), plane=plane))  # fmt: skip
    if len(sums) == 2:
        out.append(Instruction(r + 2, 0, "EX2", "FADD", total, (_reg(plane, "sum1"), sums[1]), plane=plane))
    out.append(Instruction(r + 3, 2 * d, "EAG", "ST", _reg(plane, "out"), (total,), "0", plane=plane))
    return out


def origins(d: int, p: int, columns: int) -> list[tuple[int, int, bool]]:
    """(row, column, mirrored) of each plane's pattern (§4.6, Fig. 11): mirrored pairs side by side when
    they fit the columns, each pair 2d + 2 rows below the previous one; otherwise one pattern after the
    other (2d + 5 rows)."""
    w, h = 2 * d + 2, 2 * d + 5
    if 2 * w <= columns:
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
    if max(i.row for i in m.instructions) + 1 != m.rows or m.rows != model.rows(m.degree, m.p):
        raise StencilmapError(f"EMAX mapping uses {m.rows} rows; §4.6 gives {model.rows(m.degree, m.p)}")


# ------------------------------------------------------------------------------------------ mapping


def emax_device(config: BuildConfig) -> Device:
    device = load_device(config.device or "emax")
    if "emax" not in device.archs:
        raise StencilmapError(f"device '{device.name}' is not an EMAX (its archs: {', '.join(device.archs)})")
    return device


def map_emax(program: Program, config: BuildConfig) -> EmaxMapping:
    """The library's mapping: degree, p (``--unroll`` or the most that fit the rows), X chunks."""
    device = emax_device(config)
    st, fld = _stage(program)
    shape = concrete_shape(program)
    zyx = (1, shape[0], shape[1]) if len(shape) == 2 else (shape[0], shape[1], shape[2])
    const, coeff = linear_form(program, st)
    d = star_degree({_lift(r.offset) for r in _refs(st)} | set(coeff))
    rows_avail, cols_avail = device.resource("pe_rows") or 0, device.resource("pe_columns") or 0
    if 2 * d + 2 > cols_avail or 2 * d + 1 > FIFOS_PER_ROW:
        raise _fail(f"degree {d} needs {2 * d + 2} PE columns ('{device.name}' has {cols_avail}) and {2 * d + 1} FIFOs per row (EMAX §3.1: {FIFOS_PER_ROW})")  # fmt: skip
    if config.unroll is not None and config.unroll < 1:
        raise StencilmapError(f"{param('unroll')} (p) must be ≥ 1, got {config.unroll}")
    p = config.unroll if config.unroll is not None else model.max_mappings(d, rows_avail, zyx[0])
    if p < 1 or model.rows(d, p) > rows_avail:
        q = max(p, 1)
        raise _fail(f"p = {q} needs {model.rows(d, q)} rows (EMAX §4.6); '{device.name}' has {rows_avail}")
    if p > zyx[0]:
        raise _fail(f"p = {p} parallel mappings exceed the {zyx[0]} Z planes")
    size = _itemsize(st.dtype)
    lmm = device.resource("lmm_bytes") or 0
    try:
        chunks = model.x_chunks(zyx[2], d, size, lmm)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    columns = 2 * (2 * d + 2) if p > 1 and 2 * (2 * d + 2) <= cols_avail else 2 * d + 2
    instructions = place(d, p, cols_avail, coeff, const)
    mapping = EmaxMapping(
        program=program.name, field=fld, output=st.name, dtype=st.dtype, shape=zyx, degree=d, p=p,
        rows=max(i.row for i in instructions) + 1, columns=columns, dist=1, x_chunks=chunks,
        chunk=ceil(zyx[2] / chunks), lmm_words=lmm // size, constant=const,
        coefficients=tuple(sorted(coeff.items())), instructions=instructions, device=device.name,
    )  # fmt: skip
    verify_mapping(mapping)
    return mapping


def _itemsize(dtype: str) -> int:
    import numpy as np

    return int(np.dtype(dtype).itemsize)


# --------------------------------------------------------------------------------------- mnemonics


def mnemonics(m: EmaxMapping) -> str:
    """One line per instruction (Fig. 3): row, col, unit, ALU OP / MEM OP, dst ← operands, RGI, dist."""
    lines = [
        f"# {comment(m.program)}: EMAX mapping of a degree-{m.degree} star, p = {m.p}, {m.rows} rows × "
        f"{m.columns} columns, dist {m.dist}, {m.x_chunks} X chunk(s) of {m.chunk} points on {comment(m.device)}",
        f"# {'row':>3s} {'col':>3s} {'unit':<4s} {'op':<5s} {'dst <- operands':<44s} {'rgi':<8s} dist",
    ]
    for i in m.instructions:
        ops = ", ".join(i.srcs)
        if i.op in ("FMUL", "FMA"):
            ops += f" * {_fmt(i.coeff)}"
        if i.op == "FIFO":
            ops += f" @x{i.dx:+d}"
        if i.op in ("LD", "ST"):
            ops = f"lmm[{i.rgi}:+{m.chunk}]" + (f" <- {ops}" if ops else "")
        text = f"{i.dst} <- {ops}"
        lines.append(f"  {i.row:3d} {i.col:3d} {i.unit:<4s} {i.op:<5s} {text:<44s} {i.rgi:<8s} {i.dist}")
    return "\n".join(lines) + "\n"


def lmm_streams(m: EmaxMapping) -> int:
    """X-streams one time step moves DDR3 → LMM under this mapping (``model.emax.mapped_streams``)."""
    z, y, _ = m.shape
    return model.mapped_streams(m.degree, m.p, y, z, m.x_chunks)


def emax_json(m: EmaxMapping) -> dict[str, object]:
    return {
        "degree": m.degree,
        "p": m.p,
        "rows": m.rows,
        "columns": m.columns,
        "dist": m.dist,
        "x_chunks": m.x_chunks,
        "instructions": len(m.instructions),
        "lmm_streams": lmm_streams(m),
    }


# ------------------------------------------------------------------------------------------ builder


def _pe(i: Instruction) -> str:
    return f"pe{i.row}_{i.col}"


def design_of(m: EmaxMapping) -> Design:
    """The mapping as a Design: one ``emax_pe`` module per PE used (its instructions as parameters),
    DDR3 as a reader and a writer, a channel per operand route between two PEs."""
    by_pe: dict[str, list[Instruction]] = {}
    for i in m.instructions:
        by_pe.setdefault(_pe(i), []).append(i)
    producer = {i.dst: _pe(i) for i in m.instructions}
    reader, writer = f"ddr.{m.field}", f"ddr.{m.output}"
    modules = [Module(reader, "reader", params(field=m.field))]
    routes: set[tuple[str, str]] = set()
    for name, ins in sorted(by_pe.items()):
        ops = tuple(f"{i.unit} {i.op} {i.dst}" for i in ins)
        modules.append(Module(name, "emax_pe", params(row=ins[0].row, col=ins[0].col, ops=ops), latency=1))
        for i in ins:
            if i.op == "LD":
                routes.add((reader, name))
            if i.op == "ST":
                routes.add((name, writer))
            routes.update((producer[s], name) for s in i.srcs if s in producer and producer[s] != name)
    modules.append(Module(writer, "writer", params(field=m.output)))
    channels = tuple(
        Channel(f"{a}->{b}", a, b, m.stream_words if a == reader else 1, 1, m.dtype)
        for a, b in sorted(routes)
    )
    parameters = params(
        degree=m.degree, p=m.p, rows=m.rows, columns=m.columns, dist=m.dist, x_chunks=m.x_chunks,
        chunk=m.chunk, shape=m.shape,
    )  # fmt: skip
    return Design(m.program, "emax", tuple(modules), channels, parameters, m.device, None)


@register("emax")
def build_emax(program: Program, config: BuildConfig) -> Design:
    """The EMAX 3D-stencil library's mapping (see the module docstring)."""
    return design_of(map_emax(program, config))
