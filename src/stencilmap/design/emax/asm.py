"""The EMAX mnemonics as text (EMAX §3.3, Fig. 3): the writer (``write_mnemonics``) and the assembler
(``assemble``) that reads the text back into an ``EmaxMapping`` the simulator executes as written.

The format, one header line and one line per instruction::

    # NAME: EMAX mapping of a degree-D star, p = P, R rows × C columns, dist DI, K X chunk(s) of N points on DEVICE
    # row col unit op    dst <- operands                              rgi      dist
        0   0 EAG  LD    A[z][y-1] <- lmm[1:+32]                      1        1
        1   1 EX1  FIFO  p0.x-1 <- A[z][y] @x-1                       0        0
        0   3 EX1  FMA   p0.acc0a <- rgi, A[z][y-1] * 0.1             0.0      0
        6   2 EAG  ST    p0.out <- lmm[0:+32] <- p0.sum               0        0

A load's destination names its stream, ``A[z+dz][y+dy]`` relative to the group's first plane and the
current Y; ``lmm[RGI:+N]`` is the EAG's address range (N = the header's chunk). ``FIFO`` taps the FIFO its
row's LMM fills at ``@x±k``; ``FMUL`` d = c·a, ``FMA`` d = a + c·b (``* c``: the coefficient), ``FADD``
d = a + b; ``rgi`` as FMA's first operand is the RGI constant of the rgi column. ``ST`` writes plane j's
result (``pJ.out``) into its PE's LMM. ``dist`` (loads only) is the rows the load's LMM shifts per
execution along Y: an LMM read in one execution by a shifting load is kept, not refilled, for the next
(§3.3, Fig. 4), so a wrong dist reads a stale stream.

The assembler checks the rules of §3–§5 and says ``FILE:LINE: message`` (StencilmapError) at the first
broken one: the header against the program and the device (rows and columns within the device's PE
array, §4.6's rows), each instruction inside the header's rows × columns, its op on a unit that has it
(LD/ST: the EAG; FIFO: EX1, §3.3 "the load from EX2 FIFO can be specified as EX1 operations"; ALU ops:
EX1 or EX2), one op per unit, each register written once, operands reachable (a load's stream reaches
every row, §3.1's ring; an ALU value flows down to later rows, or from EX1 to EX2 of its PE; a FIFO
taps a load of its own row, at most ``FIFOS_PER_ROW`` per row, §3.1), dist only on loads and inside the
ring, RGI only where an op reads it, and every plane stored once. Numbers are ASCII digits of at most
``MAX_DIGITS``; ``read_mnemonics`` reads only a regular file of at most ``MAX_MNEMONICS_BYTES``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from stencilmap.design.emax.mapping import FIFOS_PER_ROW, RGI_ZERO, EmaxMapping, Instruction, Unit
from stencilmap.design.emax.pattern import fmt
from stencilmap.errors import Location, StencilmapError
from stencilmap.names import comment
from stencilmap.program.ir import Program

# ------------------------------------------------------------------------------------------------ writer


def write_mnemonics(m: EmaxMapping) -> str:
    """One line per instruction (Fig. 3): row, col, unit, ALU OP / MEM OP, dst ← operands, RGI, dist."""
    lines = [
        f"# {comment(m.program)}: EMAX mapping of a degree-{m.degree} star, p = {m.p}, {m.rows} rows × "
        f"{m.columns} columns, dist {m.dist}, {m.x_chunks} X chunk(s) of {m.chunk} points on {comment(m.device)}",
        f"# {'row':>3s} {'col':>3s} {'unit':<4s} {'op':<5s} {'dst <- operands':<44s} {'rgi':<8s} dist",
    ]
    for i in m.instructions:
        ops = ", ".join(i.srcs)
        if i.op in ("FMUL", "FMA"):
            ops += f" * {fmt(i.coeff)}"
        if i.op == "FIFO":
            ops += f" @x{i.dx:+d}"
        if i.op in ("LD", "ST"):
            ops = f"lmm[{i.rgi}:+{m.chunk}]" + (f" <- {ops}" if ops else "")
        text = f"{i.dst} <- {ops}"
        lines.append(f"  {i.row:3d} {i.col:3d} {i.unit:<4s} {i.op:<5s} {text:<44s} {i.rgi:<8s} {i.dist}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ parser

#: Largest mnemonics file ``read_mnemonics`` reads (a full 64×8 array's text is under 100 kB).
MAX_MNEMONICS_BYTES = 1 << 20
#: Most digits of an integer in the text (every count, address and offset of a mapping is far shorter).
MAX_DIGITS = 12

_HEADER = re.compile(
    r"#\s*(?P<name>.*): EMAX mapping of a degree-(?P<d>\d+) star, p = (?P<p>\d+), (?P<rows>\d+) rows [×x] "
    r"(?P<cols>\d+) columns, dist (?P<dist>\d+), (?P<chunks>\d+) X chunk\(s\) of (?P<chunk>\d+) points "
    r"on (?P<device>\S+)\s*$",
    re.ASCII,
)
_REG = r"[A-Za-z_][A-Za-z0-9_.+\-\[\]]*"
_NUM = r"[-+0-9.eEinfa]+"
_TEXT: dict[str, re.Pattern[str]] = {
    "LD": re.compile(rf"(?P<dst>{_REG}) <- lmm\[(?P<base>-?\d+):\+(?P<n>\d+)\]", re.ASCII),
    "ST": re.compile(rf"(?P<dst>{_REG}) <- lmm\[(?P<base>-?\d+):\+(?P<n>\d+)\] <- (?P<a>{_REG})", re.ASCII),
    "FIFO": re.compile(rf"(?P<dst>{_REG}) <- (?P<a>{_REG}) @x(?P<dx>[-+]\d+)", re.ASCII),
    "FMUL": re.compile(rf"(?P<dst>{_REG}) <- (?P<a>{_REG}) \* (?P<c>{_NUM})"),
    "FMA": re.compile(rf"(?P<dst>{_REG}) <- (?P<a>{_REG}), (?P<b>{_REG}) \* (?P<c>{_NUM})"),
    "FADD": re.compile(rf"(?P<dst>{_REG}) <- (?P<a>{_REG}), (?P<b>{_REG})"),
}
_STREAM = re.compile(r"A\[z(?P<dz>[-+]\d+)?\]\[y(?P<dy>[-+]\d+)?\]", re.ASCII)
_PLANE = re.compile(r"p(\d+)\.", re.ASCII)
_INT = re.compile(r"[-+]?[0-9]+")
_UNITS: dict[str, tuple[Unit, ...]] = {
    "LD": ("EAG",),
    "ST": ("EAG",),
    "FIFO": ("EX1",),
    "FMUL": ("EX1", "EX2"),
    "FMA": ("EX1", "EX2"),
    "FADD": ("EX1", "EX2"),
}


@dataclass(frozen=True, slots=True)
class Header:
    """What the header line says."""

    degree: int
    p: int
    rows: int
    columns: int
    dist: int
    x_chunks: int
    chunk: int
    device: str


#: ``reference(program, p, device)``: the library's own mapping of ``program`` (``build.map_emax``), which
#: supplies the program's facts (field, shape, dtype, LMM size) the text does not repeat.
Reference = Callable[[Program, int, str], EmaxMapping]


def library_mapping(program: Program, p: int, device: str) -> EmaxMapping:
    """The library's mapping of ``program`` with p parallel mappings on ``device``."""
    from stencilmap.design.emax.build import map_emax
    from stencilmap.design.registry import BuildConfig

    return map_emax(program, BuildConfig(unroll=p, device=device))


def assemble(text: str, file: str, program: Program, reference: Reference = library_mapping) -> EmaxMapping:
    """The mapping the mnemonics ``text`` (read from ``file``) describe for ``program``; raises
    ``StencilmapError`` naming ``file:line`` at the first rule the text breaks (module docstring)."""
    lines = text.splitlines()
    first = next((n for n, s in enumerate(lines, 1) if s.strip()), 1)
    head = _header(lines[first - 1] if lines else "", Location(file, first))
    try:
        ref = reference(program, head.p, head.device)
    except StencilmapError as exc:
        raise StencilmapError(str(exc), Location(file, first)) from None
    _check_header(head, ref, Location(file, first))
    placed: list[tuple[int, Instruction]] = []
    for n, line in enumerate(lines[first:], first + 1):
        body = line.strip()
        if body and not body.startswith("#"):
            placed.append((n, _instruction(body, head, ref, Location(file, n))))
    if not placed:
        raise StencilmapError("no instructions follow the header", Location(file, first))
    _check_rules(placed, head, ref, file)
    dist = max(i.dist for _, i in placed)
    if dist != head.dist:
        raise StencilmapError(
            f"the header says dist {head.dist}, the loads' largest dist is {dist}: say the same",
            Location(file, first),
        )
    return replace(
        ref, rows=head.rows, columns=head.columns, dist=dist, instructions=tuple(i for _, i in placed)
    )


def read_mnemonics(path: Path, program: Program, reference: Reference = library_mapping) -> EmaxMapping:
    """``assemble`` the file at ``path``: a regular file (a FIFO or device is refused without reading it) of
    at most ``MAX_MNEMONICS_BYTES`` of UTF-8 text; anything else is one line, too."""
    from stencilmap.io import read_user_text

    text = read_user_text(path, str(path), MAX_MNEMONICS_BYTES, "EMAX mnemonics")
    return assemble(text, str(path), program, reference)


def _header(line: str, where: Location) -> Header:
    match = _HEADER.match(line.strip())
    if match is None:
        raise StencilmapError(
            "expected the header '# NAME: EMAX mapping of a degree-D star, p = P, R rows × C columns, "
            "dist DI, K X chunk(s) of N points on DEVICE'",
            where,
        )
    what = {"d": "degree", "p": "p", "rows": "rows", "cols": "columns", "dist": "dist"}
    what |= {"chunks": "X chunks", "chunk": "chunk"}
    g = {k: _int(match[k], what[k], where) for k in what}
    if g["p"] < 1:
        raise StencilmapError(f"p = {g['p']}: a mapping computes at least one plane (p ≥ 1)", where)
    return Header(g["d"], g["p"], g["rows"], g["cols"], g["dist"], g["chunks"], g["chunk"], match["device"])


def _check_header(h: Header, ref: EmaxMapping, where: Location) -> None:
    """The header against the program's own mapping and the device's PE array (§3.1, §4.2, §4.6)."""
    for what, said, fact in (
        ("degree", h.degree, ref.degree),
        ("X chunks", h.x_chunks, ref.x_chunks),
        ("chunk", h.chunk, ref.chunk),
    ):
        if said != fact:
            raise StencilmapError(
                f"the header says {what} {said}; the program on '{ref.device}' has {fact}", where
            )
    from stencilmap.device.catalog import load_device

    dev = load_device(ref.device)
    rows, cols = dev.resource("pe_rows") or 0, dev.resource("pe_columns") or 0
    if not (1 <= h.rows <= rows and 1 <= h.columns <= cols):
        raise StencilmapError(
            f"{h.rows} rows × {h.columns} columns do not fit '{dev.name}' ({rows} × {cols} PEs, EMAX §3.1)",
            where,
        )


def _instruction(body: str, h: Header, ref: EmaxMapping, where: Location) -> Instruction:
    """One line: ``row col unit op TEXT rgi dist``."""
    tokens = body.split()
    if len(tokens) < 7:
        raise StencilmapError("expected 'row col unit op dst <- operands rgi dist'", where)
    row, col, unit, op = _int(tokens[0], "row", where), _int(tokens[1], "column", where), tokens[2], tokens[3]
    rgi, dist = tokens[-2], _int(tokens[-1], "dist", where)
    text = " ".join(tokens[4:-2])
    if op not in _UNITS:
        raise StencilmapError(f"unknown op '{_clip(op)}' (EMAX §3.3: {', '.join(_UNITS)})", where)
    if unit not in ("EAG", "EX1", "EX2"):
        raise StencilmapError(f"unknown unit '{_clip(unit)}' (a PE has EAG, EX1, EX2; EMAX §3.1)", where)
    if unit not in _UNITS[op]:
        raise StencilmapError(f"{op} runs on {' or '.join(_UNITS[op])}, not {unit} (EMAX §3.3)", where)
    if not (0 <= row < h.rows and 0 <= col < h.columns):
        raise StencilmapError(
            f"PE ({row}, {col}) is outside the header's {h.rows} rows × {h.columns} columns", where
        )
    if dist < 0 or dist >= h.rows:
        raise StencilmapError(
            f"dist {dist} is outside the ring of {h.rows} rows (0..{h.rows - 1}; EMAX §3.1)", where
        )
    if dist and op != "LD":
        raise StencilmapError(
            f"dist {dist} on {op}: dist shifts a load's LMM (EMAX §3.3), only LD has it", where
        )
    match = _TEXT[op].fullmatch(text)
    if match is None:
        raise StencilmapError(f"cannot read {op}'s operands '{_clip(text, 80)}' ({_SHAPES[op]})", where)
    dst = match["dst"]
    plane_of = _PLANE.match(dst)
    plane = _int(plane_of[1], "plane", where) if plane_of else 0
    if op in ("LD", "ST"):
        base, n = _int(match["base"], "address", where), _int(match["n"], "word count", where)
        if match["base"] != rgi:
            raise StencilmapError(
                f"the address lmm[{match['base']}:…] and the RGI column {_clip(rgi)} differ", where
            )
        if n != h.chunk:
            raise StencilmapError(f"{op} counts {n} words; the header's chunk is {h.chunk}", where)
        if base < 0 or base + n > ref.lmm_words:
            raise StencilmapError(f"lmm[{base}:+{n}] leaves the {ref.lmm_words}-word LMM", where)
    if op == "LD":
        stream = _STREAM.fullmatch(dst)
        if stream is None:
            raise StencilmapError(f"a load names its stream A[z±dz][y±dy], not '{_clip(dst)}'", where)
        dz, dy = _int(stream["dz"] or "0", "dz", where), _int(stream["dy"] or "0", "dy", where)
        if abs(dy) > h.degree:
            raise StencilmapError(
                f"stream {dst} is {abs(dy)} rows of Y away; the stencil's degree is {h.degree}", where
            )
        if not -h.degree <= dz < h.p + h.degree:
            raise StencilmapError(f"stream {dst} is outside the group's planes and their neighbours", where)
        return Instruction(row, col, "EAG", "LD", dst, (), rgi, dist, min(max(dz, 0), h.p - 1), dz, dy)
    if op == "ST":
        if plane_of is None or dst != f"p{plane}.out" or plane >= h.p:
            raise StencilmapError(f"ST writes a plane's result pJ.out (J < {h.p}), not '{_clip(dst)}'", where)
        if rgi != RGI_ZERO:
            raise StencilmapError(f"ST writes its LMM from address 0, not {_clip(rgi)}", where)
        _check_rgi(op, (match["a"],), rgi, where)
        return Instruction(row, col, "EAG", "ST", dst, (match["a"],), rgi, 0, plane)
    srcs = tuple(match[k] for k in ("a", "b") if k in match.groupdict())
    _check_rgi(op, srcs, rgi, where)
    if op == "FIFO":
        dx = _int(match["dx"], "FIFO tap", where)
        if not 0 < abs(dx) <= h.degree:
            raise StencilmapError(
                f"a FIFO holds x−{h.degree}..x+{h.degree}; @x{dx:+d} is not a neighbour tap", where
            )
        return Instruction(row, col, "EX1", "FIFO", dst, srcs, rgi, 0, plane, dx=dx)
    coeff = _float(match["c"], where) if op in ("FMUL", "FMA") else 0.0
    return Instruction(row, col, unit, op, dst, srcs, rgi, 0, plane, coeff=coeff)  # type: ignore[arg-type]


_SHAPES = {
    "LD": "A[z±dz][y±dy] <- lmm[RGI:+N]",
    "ST": "pJ.out <- lmm[0:+N] <- SRC",
    "FIFO": "DST <- SRC @x±k",
    "FMUL": "DST <- SRC * COEFF",
    "FMA": "DST <- SRC0, SRC1 * COEFF",
    "FADD": "DST <- SRC0, SRC1",
}


def _check_rgi(op: str, srcs: tuple[str, ...], rgi: str, where: Location) -> None:
    if "rgi" in srcs[1:] or (op != "FMA" and "rgi" in srcs):
        raise StencilmapError("only FMA reads rgi, as its first operand (the RGI constant, EMAX §3.3)", where)
    if op == "FMA" and srcs[0] == "rgi":
        _float(rgi, where)
        return
    if rgi != RGI_ZERO:
        raise StencilmapError(
            f"RGI {_clip(rgi)} is never read: only an FMA whose first operand is rgi reads it", where
        )


def _check_rules(placed: list[tuple[int, Instruction]], h: Header, ref: EmaxMapping, file: str) -> None:
    """One op per unit, registers written once, operands reachable, FIFOs per row, planes stored."""
    units: dict[tuple[int, int, str], int] = {}
    writer: dict[str, tuple[int, Instruction]] = {}
    for n, i in placed:
        key = (i.row, i.col, i.unit)
        if key in units:
            raise StencilmapError(
                f"PE ({i.row}, {i.col}) {i.unit} already runs line {units[key]}'s op: one op per unit (EMAX §3.3)",
                Location(file, n),
            )
        units[key] = n
        if i.dst == "rgi":
            raise StencilmapError("rgi is the RGI constant, not a register", Location(file, n))
        if i.dst in writer:
            raise StencilmapError(
                f"register '{_clip(i.dst)}' is written twice (line {writer[i.dst][0]})", Location(file, n)
            )
        writer[i.dst] = (n, i)
    fifos: dict[int, int] = {}
    stored: dict[int, int] = {}
    for n, i in placed:
        where = Location(file, n)
        for s in i.srcs:
            if s == "rgi":
                continue
            if s not in writer:
                raise StencilmapError(f"'{_clip(s)}' is written by no instruction", where)
            _check_reach(i, s, writer[s], where)
        if i.op == "FIFO":
            fifos[i.row] = fifos.get(i.row, 0) + 1
            if fifos[i.row] > FIFOS_PER_ROW:
                raise StencilmapError(f"row {i.row} has more than {FIFOS_PER_ROW} FIFOs (EMAX §3.1)", where)
        if i.op == "ST":
            if i.plane in stored:
                raise StencilmapError(f"plane {i.plane} is stored twice (line {stored[i.plane]})", where)
            stored[i.plane] = n
    missing = [j for j in range(h.p) if j not in stored]
    if missing:
        raise StencilmapError(
            f"plane {missing[0]}'s result is never stored (no ST p{missing[0]}.out)",
            Location(file, placed[-1][0]),
        )
    used = max(i.row for _, i in placed) + 1
    if used != h.rows or h.rows != ref.rows:
        raise StencilmapError(
            f"the instructions use {used} rows, the header says {h.rows}; EMAX §4.6 gives {ref.rows} for degree {h.degree}, p = {h.p}",
            Location(file, placed[-1][0]),
        )


def _check_reach(i: Instruction, s: str, producer: tuple[int, Instruction], where: Location) -> None:
    """Can ``i`` read register ``s`` of ``producer`` where they are placed (EMAX §3.1)?"""
    line, src = producer
    if i.op == "FIFO":
        if src.op != "LD" or src.row != i.row:
            raise StencilmapError(
                f"FIFO taps '{s}' ({src.op} in row {src.row}, line {line}): a FIFO is filled by an LMM of its own row (EMAX §3.1)",
                where,
            )
        return
    if src.op == "LD":
        return  # prefetched before state 3; the stream reaches every row through the ring (§3.1)
    if src.op == "ST":
        raise StencilmapError(f"'{s}' is an LMM a store wrote, not a register", where)
    if src.row < i.row or (src.row, src.col, src.unit, i.unit) == (i.row, i.col, "EX1", "EX2"):
        return
    raise StencilmapError(
        f"'{s}' comes from PE ({src.row}, {src.col}) {src.unit} (line {line}): a value flows to later rows, or "
        f"EX1 → EX2 of one PE (EMAX §3.1)",
        where,
    )


def _clip(text: str, n: int = 40) -> str:
    """``text`` as a message quotes it: at most ``n`` characters (a hostile token can be megabytes long)."""
    return text if len(text) <= n else text[:n] + "…"


def _int(text: str, what: str, where: Location) -> int:
    """An integer of ASCII digits (no ``_``, no other scripts' digits), at most ``MAX_DIGITS`` of them."""
    if not _INT.fullmatch(text):
        raise StencilmapError(f"{what} '{_clip(text)}' is not an integer", where)
    if len(text.lstrip("+-")) > MAX_DIGITS:
        raise StencilmapError(f"{what} '{_clip(text)}' has more than {MAX_DIGITS} digits", where)
    return int(text)


def _float(text: str, where: Location) -> float:
    try:
        if not text.isascii() or "_" in text:
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise StencilmapError(f"'{_clip(text)}' is not a number", where) from None
    if not math.isfinite(value):
        raise StencilmapError(f"'{_clip(text)}' is not a finite number", where)
    return value
