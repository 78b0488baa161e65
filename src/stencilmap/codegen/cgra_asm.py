"""The CGRA assembly (CGRA paper §V: "a high-level assembly program for the created DFG") as a program:
``print_asm`` writes a worker mapping (``design.cgra.mapping.CgraMapping``) as text and ``parse_asm``
reads the text back into the mapping the CGRA simulator (``sim.cgra``) runs, so what a user edits is what
runs. ``print_asm(parse_asm(text)) == text`` for every text ``print_asm`` writes.

The format (README "CGRA assembly"): one directive or instruction per line; ``#`` starts a comment (the
printer's comments are derived from the rest and regenerated); tokens are separated by blanks; a name that
is not a plain word is %-encoded (``%XX`` per UTF-8 byte; never raw, so a hostile name cannot end a line). Directives, in this order::

    .program NAME                       the program's name
    .fabric DEVICE grid=RxC queue_entries=N storage_words=N mem_latency=N
    .shape Z,Y,X rank=R                 the grid (padded to 3 axes, C order) and the program's rank
    .dtype T                            the outputs' element type
    .workers W                          compute workers (§III-A)
    .layers Q                           compute layers (time steps chained on chip, §IV)
    .kind linear|dag [output=NAME dtype=T constant=C]   MUL/MAC chains (§III) or an expression DAG
    .preserve                           (only with ``border: preserve``)
    .input NAME dtype=T strides=SZ,SY,SX addr=A   one per input field; addr: its first word in memory
    .stage NAME dtype=T flops=N [output]           one per stage, then its reads:
    .read FIELD DZ,DY,DX [KIND]                    KIND: shrink (default), constant, copy
    .strips X0,X1 ...                   the output columns of each vertical strip (§III-B, Fig. 10)
    .span FIELD X0,X1 ...               per input, the columns its readers load in each strip
    .region LAYER Z0,Z1,Y0,Y1,X0,X1 ... per layer, where each stage is defined
    .box ID Z0,Z1,Y0,Y1,X0,X1 ...       per layer × stage, what it computes in each strip

then one instruction per PE, in the order the mapping lists them::

    OP NAME @ROW,COL [key=value ...] [PORT<-SOURCE[DEPTH] ...]

``OP`` is the PE's one instruction (AGEN LOAD FILTER STORE COUNT DONE, MUL MAC ADD, or a DAG op); ``@ROW,COL``
its place; the keys ``layer``, ``worker``, ``stage``, ``field``, ``offset=DZ,DY,DX``, ``lat`` (latency),
``boundary``, ``dtype``, ``cast``, ``const`` (only where they differ from their defaults: -1, -1, -1, none,
0,0,0, 1, shrink, none, none, and for a linear chain's MUL/MAC/ADD its immediate operand, else 0) and
``ops=`` (the operands in evaluation order: an input port or an immediate constant — the coefficient a
MUL/MAC multiplies by); each ``PORT<-SOURCE[DEPTH]`` is an input queue, its trigger: the PE fires when every
input queue holds a token and the queues it feeds have room. Each instruction's comment says what it does
(addresses an AGEN generates, Fig. 6's filter pattern 0^m 1^n 0^p, the stores a COUNT waits for).

Malformed text is one ``FILE:LINE: message`` (``StencilmapError``): among others a directive given twice,
workers without their readers and writers (each worker reads every input and writes every output, §III-A, so
the count cannot exceed what the instructions place), a queue deeper than its entries and the scratchpad
together, a latency past the simulator's stall window. ``read_asm`` reads only a regular file of at most
``MAX_ASM_BYTES`` and also refuses a ``.fabric`` that is not its device's (a grid beyond the device's PEs,
other queue entries, scratchpad words or load latency).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from stencilmap.design.cgra.mapping import CgraMapping, Pe, Queue
from stencilmap.design.cgra.regions import Box, Span, Stage
from stencilmap.design.cgra.terms import LinearStencil, Offset, Term
from stencilmap.design.cgra.traffic import reads_of, residues, stores_of
from stencilmap.errors import Location, StencilmapError
from stencilmap.names import comment
from stencilmap.program.dtypes import DTYPES, WEAK_TYPES

__all__ = ["CONTROL_OPS", "LINEAR_OPS", "MAX_ASM_BYTES", "canonical", "parse_asm", "print_asm", "read_asm"]

#: Largest assembly file ``read_asm`` reads (a full 32×32 fabric's text is under 200 kB).
MAX_ASM_BYTES = 4 * 2**20
#: Largest magnitude of an integer in the text (no grid, address or count comes near it; the simulator's
#: int64 arithmetic stays exact).
MAX_INT = 2**48
#: Largest FILTER offset along an axis beyond the grid's extent there (a stencil's reach).
MAX_REACH = 2**20

#: The PEs of the readers, writers and synchronization workers (§III-A).
CONTROL_OPS = ("AGEN", "LOAD", "FILTER", "STORE", "COUNT", "DONE")
#: A linear chain's arithmetic PEs (§III-A, Fig. 5).
LINEAR_OPS = ("MUL", "MAC", "ADD")
BOUNDARIES = ("shrink", "constant", "copy", "preserve", "ring")
READ_KINDS = ("shrink", "constant", "copy")
FORMAT = "stencilmap CGRA assembly, format 1"

_WORD = re.compile(r"[A-Za-z0-9_.+\-/:]+")
_PLAIN = re.compile(r"[A-Za-z0-9_]")
_TOKEN = re.compile(r'(?:[^\s"#]|"(?:[^"\\]|\\.)*")+')
_QUEUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)<-(.+)\[(-?\d+)\]$")
_KEY = re.compile(r"^([a-z_]+)=(.*)$")
_INT = re.compile(r"[-+]?[0-9]+")


# ------------------------------------------------------------------------------------------ printing


def _name(s: str) -> str:
    """``s`` bare when it is a plain word (that cannot be read as a number); else percent-encoded — every
    character but letters, digits and ``_`` as ``%XX`` of its UTF-8 bytes, the first one always — so that a
    hostile name never appears raw in the text (``""`` for the empty name)."""
    if _WORD.fullmatch(s) and not _is_number(s):
        return s
    if not s:
        return '""'
    return _percent(s[0]) + "".join(ch if _PLAIN.fullmatch(ch) else _percent(ch) for ch in s[1:])


def _percent(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8"))


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _ints(values: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(v) for v in values)


def _const_default(m: CgraMapping, p: Pe) -> float:
    """What ``const`` is when the text does not say: a linear chain PE's immediate operand, else 0."""
    if m.linear is not None and p.op in LINEAR_OPS:
        return next((o for o in p.operands if isinstance(o, float)), 0.0)
    return 0.0


def canonical(m: CgraMapping) -> CgraMapping:
    """``m`` as the assembly says it: its queues in the order the text lists them (per PE, in order, its
    input ports in order; the simulator's results do not depend on the queues' order) and the §VI
    roofline's count of workers (a model's fact, not in the text) replaced by the workers."""
    from dataclasses import replace

    return replace(m, queues=tuple(_queues_in_order(m)), roofline_workers=m.workers)


def _queues_in_order(m: CgraMapping) -> Iterator[Queue]:
    into: dict[tuple[str, str], Queue] = {(q.dst, q.port): q for q in m.queues}
    for p in m.pes:
        for port in p.inputs:
            yield into[(p.name, port)]


def print_asm(m: CgraMapping) -> str:
    """The assembly of ``m`` (see the module docstring)."""
    counts = ", ".join(f"{op} {n}" for op, n in m.op_counts().items())
    out = [
        f"# {FORMAT} (CGRA §V; README 'CGRA assembly')",
        f"# {comment(m.program)}: CGRA worker mapping on {comment(m.device)} (CGRA §III): {m.workers} workers, "
        f"{m.layers} layer(s), {len(m.strips)} strip(s), grid {m.grid[0]}×{m.grid[1]}",
        f"# {len(m.pes)} PEs: {counts}",
        "# a PE fires when every input queue (PORT<-SOURCE[DEPTH]) holds a token and each queue it feeds has room",
        f".program {_name(m.program)}",
        f".fabric {_name(m.device)} grid={m.grid[0]}x{m.grid[1]} queue_entries={m.queue_entries} "
        f"storage_words={m.storage_words} mem_latency={m.mem_latency}",
        f".shape {_ints(m.shape)} rank={m.rank}",
        f".dtype {m.dtype}",
        f".workers {m.workers}",
        f".layers {m.layers}",
    ]
    if m.linear is not None:
        lin = m.linear
        out.append(f".kind linear output={_name(lin.output)} dtype={lin.dtype} constant={lin.constant!r}")
    else:
        out.append(".kind dag")
    if m.preserve:
        out.append(".preserve")
    for addr, (f, dtype, strides) in zip(_addresses(m), m.inputs, strict=True):
        out.append(f".input {_name(f)} dtype={dtype} strides={_ints(strides)} addr={addr}")
    for s in m.stages:
        out.append(
            f".stage {_name(s.name)} dtype={s.dtype} flops={s.flops}" + (" output" if s.output else "")
        )
        for f, o, kind in s.reads:
            out.append(f".read {_name(f)} {_ints(o)}" + ("" if kind == "shrink" else f" {kind}"))
    out.append(".strips " + " ".join(_ints(s) for s in m.strips))
    for (f, _, _), spans in zip(m.inputs, m.spans, strict=True):
        out.append(f".span {_name(f)} " + " ".join(_ints(s) for s in spans))
    for t, regs in enumerate(m.regions):
        out.append(f".region {t} " + " ".join(_ints(b) for b in regs))
    for b, boxes in enumerate(m.boxes):
        out.append(f".box {b} " + " ".join(_ints(x) for x in boxes))
    out.append(f"# {'op':<6s} {'pe':<20s} {'place':<7s} instruction")
    into = {(q.dst, q.port): q for q in m.queues}
    by_name = {p.name: p for p in m.pes}
    for p in m.pes:
        words = [f"{p.op:<6s}", f"{_name(p.name):<20s}", f"{'@' + str(p.row) + ',' + str(p.col):<7s}"]
        words += _keys(m, p)
        words += [
            f"{port}<-{_name(into[(p.name, port)].src)}[{into[(p.name, port)].depth}]" for port in p.inputs
        ]
        line = " ".join(words)
        note = _note(m, p, by_name, into)
        out.append(f"{line}  # {note}" if note else line)
    return "\n".join(out) + "\n"


def _keys(m: CgraMapping, p: Pe) -> list[str]:
    keys: list[str] = []
    if p.layer != -1:
        keys.append(f"layer={p.layer}")
    if p.worker != -1:
        keys.append(f"worker={p.worker}")
    if p.stage != -1:
        keys.append(f"stage={p.stage}")
    if p.field:
        keys.append(f"field={_name(p.field)}")
    if p.offset != (0, 0, 0):
        keys.append(f"offset={_ints(p.offset)}")
    if p.latency != 1:
        keys.append(f"lat={p.latency}")
    if p.boundary != "shrink":
        keys.append(f"boundary={p.boundary}")
    if p.dtype:
        keys.append(f"dtype={p.dtype}")
    if p.cast:
        keys.append(f"cast={p.cast}")
    if repr(p.const) != repr(_const_default(m, p)):
        keys.append(f"const={p.const!r}")
    if p.operands:
        keys.append("ops=" + ",".join(o if isinstance(o, str) else repr(o) for o in p.operands))
    return keys


def _addresses(m: CgraMapping) -> list[int]:
    """Each input's first word in the simulator's memory: the fields one after another."""
    z, y, x = m.shape
    out, at = [], 0
    for _, _, strides in m.inputs:
        out.append(at)
        at += _words(strides, (z, y, x))
    return out


def _words(strides: tuple[int, int, int], shape: tuple[int, int, int]) -> int:
    n = 1
    for s, d in zip(strides, shape, strict=True):
        if s:
            n *= d
    return n


def _note(m: CgraMapping, p: Pe, by_name: dict[str, Pe], into: dict[tuple[str, str], Queue]) -> str:
    """What the instruction does, in words (derived: regenerated on every print)."""
    try:
        return _describe(m, p, by_name, into)
    except (ValueError, IndexError, KeyError, ZeroDivisionError):  # an edited text the words cannot follow
        return ""


def _describe(m: CgraMapping, p: Pe, by_name: dict[str, Pe], into: dict[tuple[str, str], Queue]) -> str:
    if p.op in ("MUL", "MAC") and m.linear is not None:
        c = next((o for o in p.operands if isinstance(o, float)), p.const)
        return f"x * {c!r}" + (" + acc" if p.op == "MAC" else "")
    if p.operands:
        return f"{p.op.lower()}(" + ", ".join(o if isinstance(o, str) else repr(o) for o in p.operands) + ")"
    if p.op == "AGEN":
        f = [name for name, _, _ in m.inputs].index(p.field)
        return f"{p.field}[x ≡ {p.worker} mod {m.workers}] row by row, {reads_of(m, f, p.worker):,} addresses"
    if p.op == "LOAD":
        return f"load {p.field}, broadcast"
    if p.op == "FILTER":
        return _pattern(m, p, by_name[into[(p.name, "x")].src])
    if p.op == "STORE":
        return f"store {p.field}"
    if p.op == "COUNT":
        return f"raise after {stores_of(m, p.stage, p.worker):,} stores"
    if p.op == "DONE":
        return "raise done when every count is reached"
    return ""


def _pattern(m: CgraMapping, p: Pe, source: Pe) -> str:
    """The filter's keep test on the row/column ids, and Fig. 6's 0^m 1^n 0^p over one row of the stream
    (first strip): m points before the needed ones, n needed, p after."""
    dz, dy, dx = p.offset
    z0, z1, y0, y1, x0, x1 = m.boxes[p.stage][0]
    if source.op == "LOAD":
        lo, hi = m.spans[[name for name, _, _ in m.inputs].index(source.field)][0]
    else:
        lo, hi = m.boxes[_stage_of(m, source)][0][4:]
    w, r = m.workers, (p.worker + dx) % m.workers
    total = residues(lo, hi, w, r)
    before = residues(lo, max(lo, min(hi, x0 + dx)), w, r)
    kept = residues(max(lo, x0 + dx), min(hi, x1 + dx), w, r)
    rows = f"{_minus('y', dy)} in [{y0},{y1}) " if m.rank >= 2 else ""
    planes = f"{_minus('z', dz)} in [{z0},{z1}) " if m.rank == 3 else ""
    after = total - before - kept
    fill = {
        "constant": f"; outside the grid: {p.const!r}",
        "copy": "; outside the grid: the centre's value",
    }.get(p.boundary, "")
    return f"keep {planes}{rows}{_minus('x', dx)} in [{x0},{x1}): per row 0^{before} 1^{kept} 0^{after}{fill}"


def _stage_of(m: CgraMapping, p: Pe) -> int:
    """The box of the stage a compute PE belongs to."""
    if m.linear is not None:
        return m.box_id(p.layer, 0)
    return p.stage if p.stage >= 0 else m.box_id(p.layer, 0)


def _minus(axis: str, d: int) -> str:
    """The id of the output point a token at ``axis`` feeds through offset d: axis − d."""
    return axis if d == 0 else f"{axis}{-d:+d}"


# ------------------------------------------------------------------------------------------- parsing


@dataclass
class _Header:
    program: str | None = None
    device: str | None = None
    grid: tuple[int, int] | None = None
    queue_entries: int = 0
    storage_words: int = 0
    mem_latency: int = 0
    shape: tuple[int, int, int] | None = None
    rank: int = 0
    dtype: str | None = None
    workers: int | None = None
    layers: int | None = None
    kind: str | None = None
    linear: tuple[str, str, float] | None = None
    preserve: bool = False
    inputs: list[tuple[str, str, tuple[int, int, int], int, int]] = field(
        default_factory=list
    )  # + addr, line
    stages: list[tuple[str, str, int, bool, list[tuple[str, Offset, str]]]] = field(default_factory=list)
    strips: list[Span] | None = None
    spans: dict[str, tuple[list[Span], int]] = field(default_factory=dict)
    regions: dict[int, tuple[list[Box], int]] = field(default_factory=dict)
    boxes: dict[int, tuple[list[Box], int]] = field(default_factory=dict)
    at: dict[str, int] = field(default_factory=dict)  # the line of each directive given once


def _clip(text: str, n: int = 40) -> str:
    """``text`` as a message quotes it: at most ``n`` characters (a hostile token can be megabytes long)."""
    return text if len(text) <= n else text[:n] + "…"


class _Line:
    """One line's tokens, with errors that name the file and the line."""

    def __init__(self, where: str, number: int, tokens: list[str]) -> None:
        self.where, self.number, self.tokens = where, number, tokens

    def error(self, message: str) -> StencilmapError:
        return StencilmapError(message, Location(self.where, self.number))

    def integer(self, text: str, what: str, low: int | None = None, high: int = MAX_INT) -> int:
        """An integer of ASCII digits (no ``_``, no other scripts' digits) in [low, high]."""
        if not _INT.fullmatch(text):
            raise self.error(f"{what}: expected an integer, got '{_clip(text)}'")
        v = int(text) if len(text) <= 20 else (-1 if text.startswith("-") else 1) * (MAX_INT + 1)
        if low is not None and v < low:
            raise self.error(f"{what}: must be ≥ {low}, got {_clip(text)}")
        if abs(v) > high:
            raise self.error(f"{what}: must be at most {high:,} in magnitude, got {_clip(text)}")
        return v

    def real(self, text: str, what: str) -> float:
        try:
            if not text.isascii() or "_" in text:
                raise ValueError(text)
            return float(text)
        except ValueError:
            raise self.error(f"{what}: expected a number, got '{_clip(text)}'") from None

    def ints(self, text: str, n: int, what: str) -> tuple[int, ...]:
        parts = text.split(",")
        if len(parts) != n:
            raise self.error(f"{what}: expected {n} comma-separated integers, got '{_clip(text)}'")
        return tuple(self.integer(s, what) for s in parts)

    def name(self, text: str, what: str) -> str:
        if "%" in text and not text.startswith('"'):
            try:
                return bytes(_unpercent(text)).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                raise self.error(f"{what}: a malformed %-encoded name '{_clip(text)}'") from None
        if text.startswith('"'):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise self.error(f"{what}: a malformed string {_clip(text)}") from None
            if not isinstance(value, str):
                raise self.error(f"{what}: expected a string, got {_clip(text)}")
            return value
        if not text:
            raise self.error(f"{what}: empty")
        if not _WORD.fullmatch(text):
            raise self.error(
                f"{what}: '{_clip(text)}' is neither a plain word ({_WORD.pattern}) nor %-encoded (%XX per byte)"
            )
        return text

    def dtype(self, text: str, what: str, weak: bool = False) -> str:
        if text not in DTYPES and not (weak and text in WEAK_TYPES):
            raise self.error(f"{what}: unknown type '{_clip(text)}' (known: {', '.join(DTYPES)})")
        return text

    def keys(self, tokens: list[str], allowed: Collection[str], what: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for tok in tokens:
            k = _KEY.match(tok)
            if k is None or k.group(1) not in allowed:
                raise self.error(
                    f"{what}: unexpected '{_clip(tok)}' (expected {', '.join(f'{a}=' for a in allowed)})"
                )
            if k.group(1) in out:
                raise self.error(f"{what}: '{k.group(1)}' given twice")
            out[k.group(1)] = k.group(2)
        return out


def _unpercent(text: str) -> list[int]:
    """The bytes of a %-encoded name (``_name``); ValueError when a ``%`` is not followed by two hex digits."""
    out: list[int] = []
    i = 0
    while i < len(text):
        if text[i] == "%":
            if len(text) < i + 3:
                raise ValueError(text)
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += list(text[i].encode("utf-8"))
            i += 1
    return out


def _tokens(text: str) -> list[str]:
    """The tokens of one line, its comment (from an unquoted ``#``) dropped."""
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        if text[pos] == "#":
            break
        m = _TOKEN.match(text, pos)
        if m is None:  # an unterminated string
            out.append(text[pos:].split("#")[0].strip())
            break
        out.append(m.group(0))
        pos = m.end()
    return out


def read_asm(path: Path, known_ops: Collection[str] | None = None) -> CgraMapping:
    """``parse_asm`` of the file at ``path``: a regular file (a FIFO or device is refused without reading
    it) of at most ``MAX_ASM_BYTES`` of UTF-8 text; anything else is a one-line error."""
    from stencilmap.io import read_user_text

    text = read_user_text(path, str(path), MAX_ASM_BYTES, "a CGRA assembly file")
    return parse_asm(text, str(path), known_ops, check_device=True)


def parse_asm(
    text: str, where: str = "<asm>", known_ops: Collection[str] | None = None, *, check_device: bool = False
) -> CgraMapping:
    """The mapping ``text`` describes (see the module docstring); ``known_ops``: the DAG ops the caller's
    simulator computes (None: any name); ``check_device``: the ``.fabric`` line must be its catalog device's
    (``read_asm``: a text a user wrote; the printer's own text may name any device)."""
    header = _Header()
    pes: list[tuple[Pe, list[tuple[str, str, int]], _Line]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        tokens = _tokens(raw)
        if not tokens:
            continue
        line = _Line(where, number, tokens)
        if tokens[0].startswith("."):
            if pes:
                raise line.error(f"directive {tokens[0]} after the first instruction")
            _directive(header, line)
        else:
            if header.kind is None:
                raise line.error("an instruction before the header (.program … .box) is complete")
            pes.append(_instruction(header, line))
    last = _Line(where, max(1, len(text.splitlines())), [])
    return _mapping(header, pes, last, known_ops, check_device)


#: The directives a header gives once.
_ONCE = (".program", ".fabric", ".shape", ".dtype", ".workers", ".layers", ".kind", ".preserve", ".strips")
_DIRECTIVES = (
    ".program",
    ".fabric",
    ".shape",
    ".dtype",
    ".workers",
    ".layers",
    ".kind",
    ".preserve",
    ".input",
    ".stage",
    ".read",
    ".strips",
    ".span",
    ".region",
    ".box",
)


def _directive(h: _Header, ln: _Line) -> None:
    d, args = ln.tokens[0], ln.tokens[1:]
    if d not in _DIRECTIVES:
        raise ln.error(f"unknown directive '{_clip(d)}' (known: {' '.join(_DIRECTIVES)})")
    if d in _ONCE:
        if d in h.at:
            raise ln.error(f"{d} given twice (first on line {h.at[d]})")
        h.at[d] = ln.number

    def need(n: int, usage: str, most: int | None = None) -> None:
        if len(args) < n:
            raise ln.error(f"{d} needs {usage}")
        if most is not None and len(args) > most:
            raise ln.error(f"{d} takes {usage}, got '{_clip(' '.join(args))}'")

    if d == ".program":
        need(1, "a name", 1)
        h.program = ln.name(args[0], ".program")
    elif d == ".fabric":
        need(1, "a device name")
        h.device = ln.name(args[0], ".fabric")
        k = ln.keys(args[1:], ("grid", "queue_entries", "storage_words", "mem_latency"), ".fabric")
        grid = k.get("grid", "").split("x")
        if len(grid) != 2:
            raise ln.error(".fabric: grid=ROWSxCOLS expected")
        h.grid = (ln.integer(grid[0], "grid rows", 1), ln.integer(grid[1], "grid columns", 1))
        h.queue_entries = ln.integer(k.get("queue_entries", "?"), "queue_entries", 1)
        h.storage_words = ln.integer(k.get("storage_words", "?"), "storage_words", 0)
        h.mem_latency = ln.integer(k.get("mem_latency", "?"), "mem_latency", 0)
    elif d == ".shape":
        need(1, "Z,Y,X")
        z, y, x = ln.ints(args[0], 3, ".shape")
        if min(z, y, x) < 1:
            raise ln.error(f".shape: every axis must be ≥ 1, got {args[0]}")
        h.shape = (z, y, x)
        h.rank = ln.integer(ln.keys(args[1:], ("rank",), ".shape").get("rank", "?"), "rank", 1)
        if h.rank > 3:
            raise ln.error(f".shape: rank must be 1 to 3, got {h.rank}")
    elif d == ".dtype":
        need(1, "a type", 1)
        h.dtype = ln.dtype(args[0], ".dtype")
    elif d == ".workers":
        need(1, "one count", 1)
        h.workers = ln.integer(args[0], ".workers", 1)
    elif d == ".layers":
        need(1, "one count", 1)
        h.layers = ln.integer(args[0], ".layers", 1)
    elif d == ".kind":
        need(1, "linear or dag")
        if args[0] == "dag" and len(args) == 1:
            h.kind = "dag"
        elif args[0] == "linear":
            k = ln.keys(args[1:], ("output", "dtype", "constant"), ".kind linear")
            if set(k) != {"output", "dtype", "constant"}:
                raise ln.error(".kind linear needs output=NAME dtype=T constant=C")
            h.kind = "linear"
            out = ln.name(k["output"], "output")
            h.linear = (out, ln.dtype(k["dtype"], "dtype"), ln.real(k["constant"], "constant"))
        else:
            raise ln.error(
                f".kind: expected 'linear output=… dtype=… constant=…' or 'dag', got {_clip(' '.join(args))}"
            )
    elif d == ".preserve":
        need(0, "no arguments", 0)
        h.preserve = True
    elif d == ".input":
        need(1, "a field name")
        k = ln.keys(args[1:], ("dtype", "strides", "addr"), ".input")
        if set(k) != {"dtype", "strides", "addr"}:
            raise ln.error(".input needs NAME dtype=T strides=SZ,SY,SX addr=A")
        s = ln.ints(k["strides"], 3, "strides")
        h.inputs.append(
            (
                ln.name(args[0], ".input"),
                ln.dtype(k["dtype"], "dtype"),
                (s[0], s[1], s[2]),
                ln.integer(k["addr"], "addr", 0),
                ln.number,
            )
        )
    elif d == ".stage":
        need(1, "a name")
        rest = [a for a in args[1:] if a != "output"]
        k = ln.keys(rest, ("dtype", "flops"), ".stage")
        if set(k) != {"dtype", "flops"}:
            raise ln.error(".stage needs NAME dtype=T flops=N [output]")
        is_output = len(rest) != len(args) - 1
        name = ln.name(args[0], ".stage")
        dtype = ln.dtype(k["dtype"], "dtype", weak=True)
        h.stages.append((name, dtype, ln.integer(k["flops"], "flops", 0), is_output, []))
    elif d == ".read":
        need(2, "FIELD DZ,DY,DX [KIND]")
        if not h.stages:
            raise ln.error(".read before any .stage")
        o = ln.ints(args[1], 3, ".read offset")
        if any(abs(v) > n + MAX_REACH for v, n in zip(o, h.shape or (0, 0, 0), strict=True)):
            raise ln.error(f".read offset {_ints(o)} reaches past the grid")
        kind = args[2] if len(args) > 2 else "shrink"
        if kind not in READ_KINDS or len(args) > 3:
            raise ln.error(
                f".read: the kind must be one of {', '.join(READ_KINDS)}, got {_clip(' '.join(args[2:]))}"
            )
        h.stages[-1][4].append((ln.name(args[0], ".read"), (o[0], o[1], o[2]), kind))
    elif d == ".strips":
        need(1, "X0,X1 per strip")
        h.strips = [_span(ln, a) for a in args]
    elif d == ".span":
        need(1, "a field name")
        f = ln.name(args[0], ".span")
        if f in h.spans:
            raise ln.error(f".span of '{_clip(f)}' given twice")
        h.spans[f] = ([_span(ln, a) for a in args[1:]], ln.number)
    elif d in (".region", ".box"):
        need(1, "an index")
        i = ln.integer(args[0], d, 0)
        table = h.regions if d == ".region" else h.boxes
        if i in table:
            raise ln.error(f"{d} {i} given twice")
        table[i] = ([_box(ln, a) for a in args[1:]], ln.number)


def _span(ln: _Line, text: str) -> Span:
    a, b = ln.ints(text, 2, "columns X0,X1")
    return (a, b)


def _box(ln: _Line, text: str) -> Box:
    b = ln.ints(text, 6, "box Z0,Z1,Y0,Y1,X0,X1")
    return (b[0], b[1], b[2], b[3], b[4], b[5])


_PE_KEYS = ("layer", "worker", "stage", "field", "offset", "lat", "boundary", "dtype", "cast", "const", "ops")


def _instruction(h: _Header, ln: _Line) -> tuple[Pe, list[tuple[str, str, int]], _Line]:
    if len(ln.tokens) < 3 or not ln.tokens[2].startswith("@"):
        raise ln.error("an instruction is OP NAME @ROW,COL [key=value ...] [PORT<-SOURCE[DEPTH] ...]")
    op, name = ln.tokens[0], ln.name(ln.tokens[1], "PE name")
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", op):
        raise ln.error(f"'{_clip(op)}' is not an op (upper-case, e.g. MAC)")
    row, col = ln.ints(ln.tokens[2][1:], 2, "place @ROW,COL")
    keys: list[str] = []
    queues: list[tuple[str, str, int]] = []
    for tok in ln.tokens[3:]:
        q = _QUEUE.match(tok)
        if q is not None:
            depth = ln.integer(q.group(3), f"queue {q.group(1)}: depth", 1)
            if any(port == q.group(1) for port, _, _ in queues):
                raise ln.error(f"input port '{q.group(1)}' given twice")
            queues.append((q.group(1), ln.name(q.group(2), "queue source"), depth))
        elif queues:
            raise ln.error(f"'{_clip(tok)}': keys come before the input queues")
        else:
            keys.append(tok)
    k = ln.keys(keys, _PE_KEYS, op)
    boundary = k.get("boundary", "shrink")
    if boundary not in BOUNDARIES:
        raise ln.error(f"boundary: one of {', '.join(BOUNDARIES)}, got '{_clip(boundary)}'")
    offset = ln.ints(k["offset"], 3, "offset") if "offset" in k else (0, 0, 0)
    ports = [port for port, _, _ in queues]
    operands: list[str | float] = []
    for o in k["ops"].split(",") if "ops" in k else []:
        if _is_number(o):
            operands.append(ln.real(o, "ops"))
        elif o in ports:
            operands.append(o)
        else:
            raise ln.error(
                f"operand '{_clip(o)}' is neither a number nor an input port ({', '.join(ports) or 'none'})"
            )
    pe = Pe(
        name,
        op,
        ln.integer(str(row), "row", 0),
        ln.integer(str(col), "column", 0),
        layer=ln.integer(k.get("layer", "-1"), "layer", -1),
        worker=ln.integer(k.get("worker", "-1"), "worker", -1),
        inputs=tuple(ports),
        const=0.0,
        offset=(offset[0], offset[1], offset[2]),
        field=ln.name(k["field"], "field") if "field" in k else "",
        latency=ln.integer(k.get("lat", "1"), "lat", 1),
        stage=ln.integer(k.get("stage", "-1"), "stage", -1),
        operands=tuple(operands),
        boundary=boundary,
        dtype=ln.dtype(k["dtype"], "dtype", weak=True) if "dtype" in k else "",
        cast=ln.dtype(k["cast"], "cast", weak=True) if "cast" in k else "",
    )
    if "const" in k:
        from dataclasses import replace

        pe = replace(pe, const=ln.real(k["const"], "const"))
    elif h.kind == "linear" and op in LINEAR_OPS:
        from dataclasses import replace

        pe = replace(pe, const=next((o for o in pe.operands if isinstance(o, float)), 0.0))
    return pe, queues, ln


def _mapping(
    h: _Header,
    pes: list[tuple[Pe, list[tuple[str, str, int]], _Line]],
    end: _Line,
    known_ops: Collection[str] | None,
    check_device: bool,
) -> CgraMapping:
    for what, value in (
        (".program", h.program),
        (".fabric", h.device),
        (".shape", h.shape),
        (".dtype", h.dtype),
        (".workers", h.workers),
        (".layers", h.layers),
        (".kind", h.kind),
        (".strips", h.strips),
    ):
        if value is None:
            raise end.error(f"the header lacks {what}")
    assert h.program is not None and h.device is not None and h.grid is not None and h.shape is not None
    assert h.dtype is not None and h.workers is not None and h.layers is not None and h.strips is not None
    if not pes:
        raise end.error("no instructions")
    if not h.stages:
        raise end.error("the header lacks .stage")
    nstrips, nst = len(h.strips), len(h.stages)
    names = [f for f, _, _, _, _ in h.inputs]
    stage_names = [s[0] for s in h.stages]
    _check_inputs(h, end)
    spans: list[tuple[Span, ...]] = []
    for f, _, _, _, number in h.inputs:
        if f not in h.spans:
            raise _Line(end.where, number, []).error(f"input '{f}' has no .span")
        got, at = h.spans[f]
        if len(got) != nstrips:
            raise _Line(end.where, at, []).error(f".span {f}: {len(got)} strip(s), .strips has {nstrips}")
        spans.append(tuple(got))
    for f, (_, at) in h.spans.items():
        if f not in names:
            raise _Line(end.where, at, []).error(f".span of '{f}', which is no .input")
    regions = _table(h.regions, h.layers, nst, ".region", "layer", end)
    boxes = _table(h.boxes, h.layers * nst, nstrips, ".box", "box", end)
    _check_bounds(h, end)
    for s in h.stages:
        for f, _, _ in s[4]:
            if f not in names and f not in stage_names:
                raise end.error(f"stage '{s[0]}' reads '{f}', neither an .input nor a .stage")
    linear = _linear(h, [p for p, _, _ in pes])
    seen: dict[str, _Line] = {}
    for p, _, ln in pes:
        if p.name in seen:
            raise ln.error(f"PE '{p.name}' is defined twice (first on line {seen[p.name].number})")
        seen[p.name] = ln
    queues: list[Queue] = []
    for p, qs, ln in pes:
        _check_pe(h, p, ln, names, nst, known_ops)
        for port, src, depth in qs:
            if src not in seen:
                raise ln.error(f"queue {port}: no PE is called '{src}'")
            if src == p.name:
                raise ln.error(f"queue {port}: a PE cannot feed itself")
            queues.append(Queue(src, p.name, port, depth))
    places: dict[tuple[int, int], str] = {}
    rows, cols = h.grid
    for p, _, ln in pes:
        if not (0 <= p.row < rows and 0 <= p.col < cols):
            raise ln.error(f"place @{p.row},{p.col} is outside the {rows}×{cols} grid (.fabric grid=)")
        if (p.row, p.col) in places:
            raise ln.error(f"place @{p.row},{p.col} already holds PE '{places[(p.row, p.col)]}'")
        places[(p.row, p.col)] = p.name
    _check_graph(h, pes, queues, end)
    if check_device:
        _check_device(h, end)
    _check_limits(h, pes)
    _check_workers(h, pes, names, end)
    stages = tuple(Stage(n, d, tuple(reads), f, out) for n, d, f, out, reads in h.stages)
    return CgraMapping(
        program=h.program,
        device=h.device,
        dtype=h.dtype,
        shape=h.shape,
        rank=h.rank,
        linear=linear,
        stages=stages,
        inputs=tuple((f, d, s) for f, d, s, _, _ in h.inputs),
        workers=h.workers,
        layers=h.layers,
        strips=tuple(h.strips),
        regions=tuple(tuple(r) for r in regions),
        boxes=tuple(tuple(b) for b in boxes),
        spans=tuple(spans),
        pes=tuple(p for p, _, _ in pes),
        queues=tuple(queues),
        grid=h.grid,
        queue_entries=h.queue_entries,
        buffered_words=sum(max(0, q.depth - h.queue_entries) for q in queues),
        storage_words=h.storage_words,
        mem_latency=h.mem_latency,
        roofline_workers=h.workers,  # the §VI choice is the model's, not the program's: not in the text
        preserve=h.preserve,
    )


def _check_device(h: _Header, end: _Line) -> None:
    """The ``.fabric`` line is its device's (``design.cgra.mapping.fabric``): the grid within the device's PE
    array, its queue entries, scratchpad words and load latency."""
    from stencilmap.design.cgra.mapping import fabric
    from stencilmap.program.dtypes import bits

    assert h.device is not None and h.grid is not None and h.dtype is not None
    ln = _Line(end.where, h.at[".fabric"], [])
    try:
        fab = fabric(h.device)
    except StencilmapError as exc:
        raise ln.error(f".fabric {_clip(h.device)}: {exc}") from None
    words = fab.scratchpad_bytes // max(1, bits(h.dtype) // 8)
    for what, said, fact in (
        ("queue_entries", h.queue_entries, fab.queue_entries),
        ("storage_words", h.storage_words, words),
        ("mem_latency", h.mem_latency, fab.mem_latency),
    ):
        if said != fact:
            raise ln.error(f".fabric {what}={said}, but device '{fab.device.name}' has {fact}")
    rows, cols = h.grid
    if rows > fab.rows or cols > fab.cols:
        raise ln.error(
            f".fabric grid={rows}x{cols} is larger than device '{fab.device.name}' ({fab.rows}×{fab.cols} PEs)"
        )


def _check_limits(h: _Header, pes: list[tuple[Pe, list[tuple[str, str, int]], _Line]]) -> None:
    """Each queue no deeper than its entries and the whole scratchpad (§III-B: the scratchpad backs the deep
    queues); each latency below the simulator's stall window (a longer one would read as a deadlock); FILTER
    offsets within the grid's reach."""
    from stencilmap.design.cgra.mapping import STALL_CYCLES

    assert h.shape is not None
    deepest = h.queue_entries + h.storage_words
    for p, qs, pl in pes:
        for port, _, depth in qs:
            if depth > deepest:
                raise pl.error(
                    f"queue {port}: depth {depth} exceeds the {h.queue_entries} entries and the "
                    f"{h.storage_words}-word scratchpad together (.fabric)"
                )
        if p.latency >= STALL_CYCLES:
            raise pl.error(
                f"{p.op}: lat={p.latency}; the simulator takes {STALL_CYCLES:,} cycles without a firing for a deadlock"
            )
        if any(abs(d) > n + MAX_REACH for d, n in zip(p.offset, h.shape, strict=True)):
            raise pl.error(f"{p.op}: offset {_ints(p.offset)} reaches past the grid")


def _check_workers(
    h: _Header, pes: list[tuple[Pe, list[tuple[str, str, int]], _Line]], names: list[str], end: _Line
) -> None:
    """Each worker reads every input (an AGEN) and writes every output (a STORE), §III-A: so no more workers
    than the instructions place (the simulator walks every worker's columns)."""
    assert h.workers is not None
    ln = _Line(end.where, h.at[".workers"], [])
    outputs = [k for k, s in enumerate(h.stages) if s[3]]
    readers = {(p.field, p.worker) for p, _, _ in pes if p.op == "AGEN"}
    writers = {(p.stage, p.worker) for p, _, _ in pes if p.op == "STORE"}
    if len(readers) == h.workers * len(names) and len(writers) == h.workers * len(outputs):
        return  # (the PEs' fields, stages and workers are in range: _check_pe)
    for w in range(min(h.workers, len(pes) + 1)):  # the first worker lacking one comes within the PEs
        for f in names:
            if (f, w) not in readers:
                raise ln.error(
                    f".workers {h.workers}: worker {w} has no AGEN of input '{_clip(f)}' "
                    "(each worker reads every input, CGRA §III-A)"
                )
        for k in outputs:
            if (k, w) not in writers:
                raise ln.error(
                    f".workers {h.workers}: worker {w} has no STORE of output '{_clip(h.stages[k][0])}' "
                    "(each worker writes every output, CGRA §III-A)"
                )
    raise ln.error(f".workers {h.workers}: the instructions place the readers and writers of fewer workers")


def _check_inputs(h: _Header, end: _Line) -> None:
    """Strides a C-order array of the grid (or of its lower-dimensional part) has, at the addresses the
    simulator lays the fields out at."""
    assert h.shape is not None
    at = 0
    seen: set[str] = set()
    for f, _, strides, addr, number in h.inputs:
        ln = _Line(end.where, number, [])
        if f in seen:
            raise ln.error(f".input '{f}' given twice")
        seen.add(f)
        want, inner = [0, 0, 0], 1
        for a in (2, 1, 0):
            if strides[a]:
                want[a] = inner
                inner *= h.shape[a]
        if list(strides) != want:
            raise ln.error(
                f".input {f}: strides={_ints(strides)} do not walk a C-order array of the grid "
                f"(expected {_ints(tuple(want))})"
            )
        if addr != at:
            raise ln.error(
                f".input {f}: addr={addr}, but the fields lie one after another: it starts at {at}"
            )
        at += _words(strides, h.shape)
    if not h.inputs:
        raise end.error("the header lacks .input")


def _check_bounds(h: _Header, end: _Line) -> None:
    """Strips, spans, regions and boxes inside the grid (the simulator addresses memory by them)."""
    assert h.shape is not None and h.strips is not None
    z, y, x = h.shape
    for spans, number in h.spans.values():
        for s in spans:
            lo, hi = s
            if lo < 0 or hi > x:
                raise _Line(end.where, number, []).error(f"columns {lo},{hi} lie outside the grid's [0,{x})")
    for table in (h.regions, h.boxes):
        for boxes, number in table.values():
            for b in boxes:
                if b[0] < 0 or b[1] > z or b[2] < 0 or b[3] > y or b[4] < 0 or b[5] > x:
                    raise _Line(end.where, number, []).error(
                        f"box {_ints(b)} lies outside the grid {z}×{y}×{x}"
                    )


def _table(
    table: dict[int, tuple[list[Box], int]], n: int, width: int, what: str, index: str, end: _Line
) -> list[list[Box]]:
    out: list[list[Box]] = []
    for i in range(n):
        if i not in table:
            raise end.error(f"{what} {i} is missing ({n} expected)")
        got, at = table[i]
        if len(got) != width:
            raise _Line(end.where, at, []).error(f"{what} {i}: {len(got)} box(es), expected {width}")
        out.append(got)
    for i, (_, at) in table.items():
        if i >= n:
            raise _Line(end.where, at, []).error(f"{what} {i}: only {n} {index}(s)")
    return out


def _linear(h: _Header, pes: list[Pe]) -> LinearStencil | None:
    """A linear mapping's products: layer 0, worker 0's chain (each MUL/MAC's field, offset, coefficient)."""
    if h.linear is None:
        return None
    out, dtype, constant = h.linear
    terms = tuple(
        Term(p.field, p.offset, p.const)
        for p in pes
        if p.op in ("MUL", "MAC") and p.layer == 0 and p.worker == 0
    )
    return LinearStencil(out, dtype, constant, terms, tuple(sorted({t.field for t in terms})))


def _check_pe(
    h: _Header, p: Pe, ln: _Line, fields: list[str], stages: int, known_ops: Collection[str] | None
) -> None:
    """What the simulator needs of one instruction to run it (indices in range, the ports it names)."""
    assert h.workers is not None and h.layers is not None
    linear = h.kind == "linear"
    if p.op not in CONTROL_OPS:
        if linear and p.op not in LINEAR_OPS:
            raise ln.error(
                f"unknown op '{p.op}' in a linear mapping (its arithmetic: {', '.join(LINEAR_OPS)})"
            )
        if not linear and known_ops is not None and p.op not in known_ops:
            raise ln.error(f"unknown op '{p.op}' (the simulator computes {', '.join(sorted(known_ops))})")
        if not p.operands:
            raise ln.error(f"{p.op} needs ops= (its operands: input ports and constants)")
        if len(p.operands) > 3:
            raise ln.error(f"{p.op}: at most 3 operands, got {len(p.operands)}")
        used = {o for o in p.operands if isinstance(o, str)}
        if used != set(p.inputs):
            raise ln.error(f"{p.op}: ops= must use every input port once ({', '.join(p.inputs) or 'none'})")
        if not linear and not p.dtype:
            raise ln.error(f"{p.op}: a DAG op needs dtype=")
        if p.layer < 0 or p.layer >= h.layers:
            raise ln.error(f"{p.op}: layer={p.layer} (the mapping has {h.layers} layer(s))")
    if p.op in ("AGEN", "LOAD") and p.field not in fields:
        raise ln.error(f"{p.op}: field='{p.field}' is no .input")
    if p.op != "DONE" and not 0 <= p.worker < h.workers:
        raise ln.error(f"{p.op}: worker={p.worker} (workers are 0 … {h.workers - 1})")
    if p.op == "LOAD" and p.inputs != ("addr",):
        raise ln.error("LOAD takes one input queue, addr<-AGEN")
    if p.op == "AGEN" and p.inputs:
        raise ln.error("AGEN takes no input queue")
    if p.op == "FILTER":
        if not 0 <= p.stage < h.layers * stages:
            raise ln.error(f"FILTER: stage={p.stage} (boxes 0 … {h.layers * stages - 1})")
        want = {"copy": ("x", "centre"), "preserve": ("x", "ring")}.get(p.boundary, ("x",))
        if p.inputs != want:
            raise ln.error(f"FILTER boundary={p.boundary}: its input queues are {', '.join(want)}")
        if p.boundary == "ring" and p.field not in fields:
            raise ln.error(f"FILTER: field='{p.field}' is no .input")
    if p.op in ("STORE", "COUNT"):
        outputs = [k for k, s in enumerate(h.stages) if s[3]]
        if p.stage not in outputs:
            raise ln.error(f"{p.op}: stage={p.stage} is no output stage ({', '.join(map(str, outputs))})")
        if p.inputs != ("x",):
            raise ln.error(f"{p.op} takes one input queue, x")
    if p.op == "DONE" and not p.inputs:
        raise ln.error("DONE needs the input queues of the counts")


def _check_graph(
    h: _Header, pes: list[tuple[Pe, list[tuple[str, str, int]], _Line]], queues: list[Queue], end: _Line
) -> None:
    """One DONE; every PE but DONE feeds something; no cycle of queues (the simulator orders consumers
    before producers)."""
    from graphlib import CycleError, TopologicalSorter

    done = [ln for p, _, ln in pes if p.op == "DONE"]
    if len(done) != 1:
        raise (done[1] if done else end).error(f"a mapping has one DONE, this has {len(done)}")
    feeds = {q.src for q in queues}
    for p, _, ln in pes:
        if p.op != "DONE" and p.name not in feeds:
            raise ln.error(f"PE '{p.name}' feeds no queue: its results would go nowhere")
    graph: dict[str, set[str]] = {p.name: set() for p, _, _ in pes}
    for q in queues:
        graph[q.src].add(q.dst)
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        cycle = " -> ".join(exc.args[1][::-1])
        raise end.error(f"the queues form a cycle ({cycle}): a PE would wait on itself") from None
