"""C source of one program for the compiled CPU backend: a loop nest per stencil and an OpenMP block driver.

The generated file exports one function::

    int sm_block(const int64_t *n, const int64_t *olo, const int64_t *ohi, int64_t steps,
                 const int64_t *tile, int threads, const sm_buf *inputs, const sm_buf *outputs,
                 void *const *params);

It applies ``steps`` (≤ ``SM_TMAX``) iterations of the program to the owned box ``[olo, ohi)`` of a grid of
shape ``n``, as overlapped tiles of shape ``tile`` run in parallel: each tile computes every stencil of every
step on its box grown by the margins of ``plan.margins`` into per-thread scratch buffers (cache-resident), and
writes only its own points of the outputs. An ``sm_buf`` addresses a field by global coordinates:
element ``sum(g[a] * s[a] for a < last) + g[last] - off``, so a buffer may hold any box of the grid (a tile's
scratch, a Dask chunk with its halo, the whole grid). Each stencil's loop nest runs the interior of every
row without bounds checks (vectorised) and the few points near the grid's edges with them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from stencilmap.program import dtypes as dt
from stencilmap.program.ir import Stencil
from stencilmap.scalar.ctypes_ import Dialect

from . import cexpr, cvec, cwave
from .cexpr import CTYPES
from .plan import Plan, interior, margins, stencil_refs

#: Bytes per element of each C type (vector lengths of the unchecked rows).
CSIZE = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "float16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
}

#: The most steps one block may fuse (the margin tables are this long).
TMAX = 64
#: Output arrays at least this large are written with streaming stores (they leave the cache anyway).
NT_BYTES = 32 * 1024 * 1024

HEADER = """\
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <omp.h>
/* k > 0: a ring of k planes along axis 0 (plane g lives in slot g mod k); the caller sets q, a multiple of
   k with every plane a call touches in [q, q + 2k), so a slot is one compare-and-subtract, not a division. */
typedef struct { void *v; uint8_t *m; int64_t s[3]; int64_t off; int64_t k; int64_t q; } sm_buf;
#define SM_W(x, k) ((x) >= (k) ? (x) - (k) : (x))
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SM_SFENCE() _mm_sfence()
#else
#define SM_SFENCE() ((void)0)
#endif
/* Bytes of one chunk of a row written with streaming stores (computed into a buffer in L1 first). */
#define SM_CHUNK 4096
/* One unit, or several compiled in parallel (SM_SPLIT; each defines the SM_PART_<k> of its stencils, one of
   them SM_PART_DRIVER): every function below is then compiled in exactly one of them. */
#ifdef SM_SPLIT
#define SM_ST __attribute__((visibility("hidden")))
#else
#define SM_ST static
#endif

/* Copy len bytes; nt: with streaming stores (no read-for-ownership, no cache pollution), then ordinary
   ones for the unaligned head and the tail. */
static inline void sm_put(char *dst, const char *src, int64_t len, int nt) {
#if defined(__AVX512F__) || defined(__AVX2__)
  if (nt) {
    int64_t head = (int64_t)((64 - ((uintptr_t)dst & 63)) & 63);
    if (head > len) head = len;
    memcpy(dst, src, (size_t)head);
    dst += head; src += head; len -= head;
    for (; len >= 64; len -= 64, dst += 64, src += 64) {
#if defined(__AVX512F__)
      _mm512_stream_si512((void *)dst, _mm512_loadu_si512((const void *)src));
#else
      _mm256_stream_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)src));
      _mm256_stream_si256((__m256i *)(dst + 32), _mm256_loadu_si256((const __m256i *)(src + 32)));
#endif
    }
  }
#else
  (void)nt;
#endif
  memcpy(dst, src, (size_t)len);
}

"""


def generate(plan: Plan) -> str:
    """The whole C file for a program: helpers every unit compiles, then one part per distinct stencil
    function and the driver's part, each of which a split build (``split``) compiles in one unit only.

    A stencil function reads its fields through its own slots (``F[0]`` … in the sorted order of its
    reads; the driver gathers them, ``RD``), so stencils that differ only in the fields they read and
    write — a chain of one sweep, the levels or tracers of a weather code — have the same text: it is
    compiled once and every such stencil calls it (``FN``)."""
    parts = [HEADER, cvec.LOAD, cexpr.prelude(plan.program)]
    first: dict[str, int] = {}  # a function's text, its own number written ``#``: the first stencil with it
    fn: list[int] = []  # the function each stencil calls
    for k, st in enumerate(plan.order):
        edge, nest = _stencil_function(plan, k, st)
        own = re.compile(rf"\b(st|edge)_{k}\b")  # its own names: the same text whatever its number
        same = first.setdefault(own.sub(r"\1_#", edge + nest), k)
        fn.append(same)
        if same == k:
            parts += [_part(f"{k}E", edge), _part(str(k), nest)]
    driver = [f"SM_ST void st_{k}({ST_PARAMS});" for k in sorted(set(fn))]
    driver += [_tables(plan, fn), _driver(plan)]
    if plan.program.rank >= 2:
        driver += [cwave.ring_table(plan, TMAX), cwave.WAVE]
    parts.append(_part("DRIVER", "\n".join(driver)))
    return "\n".join(parts)


#: A field's variables in a stencil function (``f<i>_v``, ``f<i>_s0``, …; ``i``: the field's number).
_FIELD_VAR = re.compile(r"\bf(\d+)_")

#: The parameters of every stencil's loop nest ``st_<k>``.
ST_PARAMS = "const int64_t *lo, const int64_t *hi, const int64_t *n, const sm_buf *F, sm_buf D, void *const *P, int nt"
_PART = re.compile(
    r"^#if !defined\(SM_SPLIT\) \|\| defined\(SM_PART_(\w+)\)$(.*?)^#endif /\* SM_PART_\1 \*/$", re.M | re.S
)


def _part(name: str, text: str) -> str:
    return (
        f"#if !defined(SM_SPLIT) || defined(SM_PART_{name})\n{text.rstrip()}\n#endif /* SM_PART_{name} */\n"
    )


def _weight(name: str, text: str) -> float:
    """A part's compile time in characters of -O3 code: an edge function (-O1, part ``<k>E``) costs about a
    quarter as much a character (``contrast.soda``: 60 K characters of edge in 0.41 s, 33 K of loop nest in
    0.86 s)."""
    return len(text) * (0.25 if name.endswith("E") else 1.0)


def loop_nest_chars(source: str) -> int:
    """Characters of the largest loop-nest part of ``source`` (not an edge function's, nor the driver's)."""
    return max(
        (len(m[2]) for m in _PART.finditer(source) if not m[1].endswith("E") and m[1] != "DRIVER"), default=0
    )


def split(source: str, ways: int) -> tuple[tuple[str, ...], ...]:
    """The ``-D`` flags of each unit of a build of ``source`` in at most ``ways`` units compiled in parallel:
    its parts (``generate``) dealt heaviest first (``_weight``) to the unit with the least work so far. One
    unit (no flags) where ``ways`` < 2 or the source has fewer than two parts."""
    parts = sorted(((_weight(m[1], m[2]), m[1]) for m in _PART.finditer(source)), key=lambda p: (-p[0], p[1]))
    ways = min(ways, len(parts))
    if ways < 2:
        return ()
    units: list[tuple[float, list[str]]] = [(0.0, []) for _ in range(ways)]
    for size, name in parts:
        j = min(range(ways), key=lambda i: units[i][0])
        units[j] = (units[j][0] + size, [*units[j][1], name])
    return tuple(("-DSM_SPLIT", *(f"-DSM_PART_{n}" for n in sorted(names))) for _, names in units)


# ------------------------------------------------------------------------------------- one stencil


def _g(a: int) -> str:
    return f"g{a}"


def _index(plan: Plan, var: str, field: str, offset: tuple[int, ...], ring: bool = False) -> str:
    """Element index of ``field`` at the current point plus ``offset`` (over the field's own axes);
    ``ring``: full-rank fields may be rings of planes (``sm_buf.k``), the CPU backend's buffers."""
    axes = plan.axes(field)
    if not axes:
        return "0"
    terms = []
    ring = ring and _ringed(plan, field)
    for j, (a, o) in enumerate(zip(axes, offset, strict=True)):
        pos = f"({_g(a)} + {o})" if o else _g(a)
        if j == 0 and ring:
            pos = f"SM_W({_g(a)} + {o} - {var}_q, {var}_k)"
        terms.append(pos if j == len(axes) - 1 else f"{pos} * {var}_s{j}")
    return " + ".join(terms) + f" - {var}_off"


def _ringed(plan: Plan, field: str) -> bool:
    """Full-rank fields of programs of rank ≥ 2 may live in a ring of planes (the wavefront driver)."""
    rank = plan.program.rank
    return rank >= 2 and plan.axes(field) == tuple(range(rank))


def _stencil_function(plan: Plan, k: int, st: Stencil) -> tuple[str, str]:
    """Two functions, each a part of the file (``split``): the edge point (bounds-checked, compiled at -O1:
    big windows make -O3 slow to build and edges are few) and the loop nest that calls it near edges and runs
    the interior unchecked (which declares the edge function, compiled in another unit in a split build)."""
    rank = plan.program.rank
    reads = stencil_reads(plan, st)
    prologue: list[str] = []
    for j, f in enumerate(reads):
        prologue += _bind(plan, f"f{plan.index(f)}", f"F[{j}]", f, const=True)
    prologue += _bind(plan, "d", "D", st.name, const=False)
    for j, par in enumerate(plan.program.params):
        prologue.append(f"  const {CTYPES[par.dtype]} *restrict p{j} = (const {CTYPES[par.dtype]} *)P[{j}];")
    prologue += [f"  const int64_t n{a} = n[{a}];" for a in range(rank)]
    last = rank - 1
    outer = "".join(f"int64_t g{a}, " for a in range(last))
    # The fully checked code, out of line at -O1: it runs on the few rows near the ends of the outer axes
    # (the ends of rows are ``near``'s), and at -O3 gcc takes tens of seconds on big windows and most of a
    # program's compile time on small ones.
    attr = 'SM_ST __attribute__((noinline, optimize("O1")))'
    signature = (
        f"{attr} void edge_{k}({outer}int64_t from, int64_t to, const int64_t *n, const sm_buf *F, sm_buf D, "
        "void *const *P)"
    )
    edge = [
        f"{signature} {{",
        *prologue,
        *_edge_loops(plan, st, last, short=len(stencil_refs(st)) > 32),
        "}",
    ]
    args = "".join(f"g{a}, " for a in range(last))
    lines = [
        f"{signature};",
        f"SM_ST void st_{k}({ST_PARAMS}) {{",
        *prologue,
    ]
    call = f"edge_{k}({args}{{lo}}, {{hi}}, n, F, D, P);"
    vl = _vl(st)
    vec = cvec.row_loop(plan, st, _index) if vl else None
    near = _near(plan, st, last) if vl else None
    fast = _body(plan, st, checked=False, ring=True)
    row = _prefetch(plan, st) + _row_code(rank, interior(plan, st), call, fast, vl, vec, near)
    streamed = _streamed_row(plan, st, row)
    bounds = f"const int64_t rlo = lo[{last}], rhi = hi[{last}];"
    if rank >= 2 and near is not None:
        plain = _runs(plan, st, reads, call, fast, vec, near)
    else:
        plain = _outer(rank, [bounds, *row], "")
    # Only outputs are ever streamed (``nt``), and a big window is bound by its arithmetic, not by the
    # store's read for ownership: no second copy of the loop nest for the others.
    if st.name not in plan.program.outputs or not vl:
        lines += ["  (void)nt;", *["  " + line for line in plain], "}"]
        return _slots(plan, reads, "\n".join(edge) + "\n"), _slots(plan, reads, "\n".join(lines) + "\n")
    lines += [
        "  if (!nt) {",
        *["    " + line for line in plain],
        "  } else {",
        "    _Alignas(64) char sm_rb[SM_CHUNK];",
        *(["    uint8_t sm_mb[SM_CHUNK];"] if st.name in plan.masked else []),
        *_outer(rank, streamed, "    "),
        "  }",
        "}",
    ]
    return _slots(plan, reads, "\n".join(edge) + "\n"), _slots(plan, reads, "\n".join(lines) + "\n")


def stencil_reads(plan: Plan, st: Stencil) -> list[str]:
    """The fields a stencil function reads, in the order of its slots ``F[0]``, ``F[1]``, …: every field
    of its expression and the input it preserves, sorted by name."""
    return sorted({r.field for r in stencil_refs(st)} | set(filter(None, [plan.preserve_input(st.name)])))


def _slots(plan: Plan, reads: list[str], text: str) -> str:
    """``text`` with each read field's variables named by its slot (``f<j>_``, ``F[j]`` bound to it), not
    by its number in the program: the same code for stencils that read other fields the same way."""
    slot = {str(plan.index(f)): str(j) for j, f in enumerate(reads)}
    return _FIELD_VAR.sub(lambda m: f"f{slot[m[1]]}_", text)


def _runs(
    plan: Plan,
    st: Stencil,
    reads: list[str],
    call: str,
    fast: list[str],
    vec: list[str] | None,
    near: list[str],
) -> list[str]:
    """The loop nest of a stencil of rank ≥ 2 with vector rows, row by row along axis ``rank - 2`` in runs:
    each run's interior is one call of the vector loop, then the points at the ends of each of its rows,
    checked along the last axis only (inline; a call of the fully checked ``edge_k`` per end cost a 3-D row
    of 256 points a quarter of its time). Rows near the other axes' ends call ``edge_k`` whole. In rank ≥ 3,
    when the box spans whole rows of buffers whose rows lie back to back (``flat``), a run is every
    following interior row of the plane: their interiors counted on as one row (a 3-D row of 256 points
    otherwise pays its set-up every 16 vectors), the ends of each row computed again after it, right (the
    run wrote them from the neighbours across the row's end). Otherwise a run is a row; so too where a
    program input is read straight from memory, whose rows ``_prefetch`` fetches ahead row by row (a single
    3-D step: 3.69 GCell/s so against 3.16 in runs)."""
    rank = plan.program.rank
    last, mid = rank - 1, rank - 2
    inner = interior(plan, st)
    full = [f for f in reads if plan.axes(f) == tuple(range(rank))]
    flat = rank >= 3 and vec is not None
    cond = " && ".join(
        [f"lo[{last}] == 0", f"hi[{last}] == n{last}", f"d_s{mid} == n{last}"]
        + [f"f{plan.index(f)}_s{mid} == n{last}" for f in full]
        + [f"f{plan.index(f)}_k" for f in full if _prefetch_input(plan, f)]
    )
    extend = [
        f"  if (flat && f0 < f1) {{ const int64_t e = n{mid} - {inner[mid][1]} < hi[{mid}] ? "
        f"n{mid} - {inner[mid][1]} : hi[{mid}]; if (e > gm) run = e - gm; }}"
    ]
    vl = _vl(st)

    def body(planes: int, rows: list[str]) -> list[str]:
        return [
            f"for (int64_t gm = lo[{mid}], run = 1; gm < hi[{mid}]; gm += run) {{",
            f"  const int64_t g{mid} = gm;",
            f"  const int64_t rlo = lo[{last}], rhi = hi[{last}];",
            "  run = 1;",
            *["  " + x for x in _row_bounds(inner, last, extend if flat else [])],
            *["  " + x for x in _each(planes, _prefetch(plan, st))],
            "  if (f0 == rhi) {",
            *["    " + x for x in _each(planes, [f"if (rlo < rhi) {call.format(lo='rlo', hi='rhi')}"])],
            "    continue;",
            "  }",
            "  const int64_t e0 = f0, e1 = f1;",
            f"  f1 += (run - 1) * n{last};",
            *["  " + x for x in rows],
            *[
                "  " + x
                for x in _each(
                    planes,
                    [
                        "for (int64_t q = 0; q < run; ++q) {",
                        f"  const int64_t g{mid} = gm + q;",
                        *["  " + x for x in _ends(last, near)],
                        "}",
                    ],
                )
            ],
            "}",
        ]

    single_row = _row("", last, fast, vl, vec)
    head = [f"const int flat = {cond};"] if flat else []
    planes = joint_planes(plan, st)
    joint = cvec.row_loop(plan, st, _index, planes) if planes > 1 else None
    if joint is None:
        return head + _outer(mid + 1, body(1, single_row), "")
    scalar = [f"for (int64_t g{last} = f0; g{last} < f1; ++g{last}) {{", *["  " + x for x in fast], "}"]
    rows = [
        f"if (f1 - f0 >= {vl}) {{",
        f"  const int64_t fm = f0 + (f1 - f0) / {vl} * {vl};",
        *["  " + x for x in joint],
        "  (void)fv;",
        "} else {",
        *["  " + x for x in _each(planes, scalar)],
        "}",
    ]
    if rank == 2:  # axis 0 is the rows' own loop: a row at a time where not all the planes are inside
        bounds = "const int64_t rlo = lo[1], rhi = hi[1];"
        joined = [bounds, *_checked_row(inner, last, call, near, rows, planes)]
        single = [bounds, *_checked_row(inner, last, call, near, single_row)]
    else:
        joined, single = body(planes, rows), body(1, single_row)
    lo0, hi0 = inner[0]
    return [
        *head,
        "for (int64_t g0 = lo[0]; g0 < hi[0]; ++g0) {",
        f"  if (g0 >= {lo0} && g0 + {planes} <= hi[0] && g0 + {planes - 1} < n0 - {hi0}) {{",
        *["    " + x for x in joined],
        f"    g0 += {planes - 1};",
        "    continue;",
        "  }",
        *["  " + x for x in single],
        "}",
    ]


#: The most vectors the joint row loop of several planes may keep live from block to block (of the 32
#: AVX-512 registers: the rest hold a block's reads and sums).
JOINT_REGS = 24


def joint_planes(plan: Plan, st: Stencil) -> int:
    """Planes (along axis 0; in 2-D, rows) of a stencil of rank 2 or 3 with vector rows computed at once
    (``cvec.row_loop``'s ``planes``): 4, or 2, or 1 when even two would keep more than ``JOINT_REGS`` vectors
    live. Reads the planes share are loaded once: a 7-point step's row of 4 planes makes 10 loads of new
    rows against 12 plane by plane, and a stage of the wavefront with rings in L3 ran 1.5× faster so; 2-D
    5-point rows 4 at once, 4096² × 50: 12.5 → 14.7 GCell/s (``docs/guide/host.md``)."""
    if plan.program.rank not in (2, 3) or cvec.row_loop(plan, st, _index) is None:
        return 1
    for planes in (4, 2):
        if cvec.joint_groups(plan, st, planes) <= JOINT_REGS:
            return planes
    return 1


def _each(planes: int, lines: list[str]) -> list[str]:
    """``lines`` (code at ``g0``) once per plane ``g0 .. g0 + planes - 1``."""
    if planes == 1:
        return lines
    return [
        f"for (int64_t gp = g0; gp < g0 + {planes}; ++gp) {{",
        "  const int64_t g0 = gp;",
        *["  " + x for x in lines],
        "}",
    ]


def _vl(st: Stencil) -> int:
    """Points per 64-byte vector of the stencil's type (0: a big window, no full-vector tail)."""
    return 64 // CSIZE.get(st.dtype, 8) if len(stencil_refs(st)) <= 32 else 0


#: Rows ahead (along axis 1) that a 3-D stencil prefetches of the leading plane of its inputs.
PREFETCH_ROWS = 2


def _prefetch(plan: Plan, st: Stencil) -> list[str]:
    """Software prefetch of the row ``PREFETCH_ROWS`` ahead in the leading plane (the deepest axis-0 read)
    of each full-rank program input, in programs of rank ≥ 3: that plane is the only one coming from memory
    (the others were read for earlier planes and are in L2), and its rows, a plane's stride apart from the
    rows read beside them, are not prefetched by the hardware in time (a one-thread step: +30 %). Rings
    (``k`` > 0, the wavefront's cache-resident buffers) are skipped; prefetches of addresses beyond a buffer
    do not fault."""
    rank = plan.program.rank
    if rank < 3:
        return []
    inputs = {i.name for i in plan.program.inputs}
    out: list[str] = []
    for f in sorted({r.field for r in stencil_refs(st)} & inputs):
        if plan.axes(f) != tuple(range(rank)):
            continue
        offs = [r.offset for r in stencil_refs(st) if r.field == f]
        m0 = max(o[0] for o in offs)
        m1 = max(o[1] for o in offs if o[0] == m0)
        var = f"f{plan.index(f)}"
        esize = CSIZE.get(plan.program.field_dtype(f), 8)
        lead = _index(plan, var, f, (m0, m1 + PREFETCH_ROWS) + (0,) * (rank - 2))
        out += [
            f"if (!{var}_k) {{",
            f"  const int64_t g{rank - 1} = rlo;",
            f"  const uintptr_t pf = (uintptr_t){var}_v + (uintptr_t)(({lead}) * {esize});",
            f"  for (int64_t q = 0; q < (rhi - rlo) * {esize}; q += 64) __builtin_prefetch((const void *)(pf + (uintptr_t)q));",
            "}",
        ]
    return out


def _prefetch_input(plan: Plan, field: str) -> bool:
    """Whether ``_prefetch`` prefetches ``field`` (a full-rank program input of rank ≥ 3) when read straight."""
    rank = plan.program.rank
    return (
        rank >= 3
        and field in {i.name for i in plan.program.inputs}
        and plan.axes(field) == tuple(range(rank))
    )


def _streamed_row(plan: Plan, st: Stencil, row: list[str]) -> list[str]:
    """A row computed in chunks into a cache-resident buffer (``D`` and its bindings shadowed by the
    chunk's), each chunk then copied to ``D`` with streaming stores (``sm_put``): the output's lines are
    written whole without being read first (no read-for-ownership: a third of a streamed step's traffic)."""
    rank = plan.program.rank
    last = rank - 1
    t = CTYPES[st.dtype]
    esize = CSIZE.get(st.dtype, 8)
    masked = st.name in plan.masked
    dst = _index(plan, "d", st.name, (0,) * rank, ring=True)
    shadow = [
        f"{t} *restrict d_v = ({t} *)sm_rb;",
        *(["uint8_t *restrict d_m = sm_mb;"] if masked else []),
        *[f"const int64_t d_s{j} = 0;" for j in range(rank - 1)],
        "const int64_t d_off = c0;",
        *(["const int64_t d_k = 0, d_q = 0;"] if _ringed(plan, st.name) else []),
        "(void)d_v;",
        f"sm_buf D = {{sm_rb, {'sm_mb' if masked else '0'}, {{0, 0, 0}}, c0, 0, 0}};",
        "const int64_t rlo = c0, rhi = c1;",
    ]
    return [
        f"for (int64_t c0 = lo[{last}], c1; c0 < hi[{last}]; c0 = c1) {{",
        f"  c1 = c0 + SM_CHUNK / {esize} < hi[{last}] ? c0 + SM_CHUNK / {esize} : hi[{last}];",
        "  int64_t at;",
        f"  {{ const int64_t g{last} = c0; at = {dst}; }}",
        "  {",
        *["    " + line for line in shadow],
        *["    " + line for line in row],
        "  }",
        f"  sm_put((char *)(d_v + at), sm_rb, (c1 - c0) * {esize}, 1);",
        *(["  memcpy(d_m + at, sm_mb, (size_t)(c1 - c0));"] if masked else []),
        "}",
    ]


def _outer(rank: int, row: list[str], ind: str) -> list[str]:
    """The loops over every axis but the last around the code of one row."""
    lines = []
    for a in range(rank - 1):
        lines.append(f"{ind}for (int64_t g{a} = lo[{a}]; g{a} < hi[{a}]; ++g{a}) {{")
        ind += "  "
    lines += [ind + line for line in row]
    for _ in range(rank - 1):
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    return lines


def _edge_loops(plan: Plan, st: Stencil, last: int, short: bool) -> list[str]:
    """The checked loop over [from, to). Mostly a point or two at a row's ends: a vectorised loop's masks
    and set-up cost more than that (a third of a 256-point row), and gcc does not vectorise a loop holding
    an asm statement; whole edge rows (16 points or more) keep a vectorisable copy (not for big windows)."""
    body = _body(plan, st, checked=True, ring=True)
    head = f"for (int64_t g{last} = from; g{last} < to; ++g{last}) {{"
    scalar = [head, *["  " + line for line in body], '  __asm__ volatile("");', "}"]
    dead = _dead_row(plan, st, last)
    if short:
        return dead + ["  " + line for line in scalar]
    return [
        *dead,
        "  if (to - from >= 16) {",
        f"    {head}",
        *["      " + line for line in body],
        "    }",
        "  } else {",
        *["    " + line for line in scalar],
        "  }",
    ]


def _dead(plan: Plan, st: Stencil, last: int, outer: bool, count: str | None) -> tuple[str, list[str]] | None:
    """Where a point is undefined whatever it reads, under ``border: preserve`` a copy of the preserved
    input: the condition that a read with a ``shrink`` boundary falls beyond the end of an outer axis
    (``outer``; the same for a whole row) or of the last axis (a row's end points), and the statements
    copying the value (and mask) of ``count`` points from ``g{last}`` on (None: the one point). None where
    no read can make a point so."""
    keep = plan.preserve_input(st.name)
    if keep is None:
        return None
    conds = sorted(
        {
            f"(uint64_t)({_g(a)} + {o}) >= (uint64_t)n{a}"
            for ref in stencil_refs(st)
            if st.boundary_of(ref.field).kind == "shrink"
            for a, o in zip(plan.axes(ref.field), ref.offset, strict=True)
            if o != 0 and (a != last if outer else a == last)
        }
    )
    if not conds:
        return None
    rank = plan.program.rank
    var = f"f{plan.index(keep)}"
    src, dst = _index(plan, var, keep, (0,) * rank, True), _index(plan, "d", st.name, (0,) * rank, True)
    mask = f"{var}_m[{src}]" if keep in plan.masked else ("1" if st.name in plan.masked else None)
    if count is None:
        copy = [f"d_v[{dst}] = {var}_v[{src}];", *([f"d_m[{dst}] = {mask};"] if mask else [])]
    else:
        copy = [f"memcpy(&d_v[{dst}], &{var}_v[{src}], {count} * sizeof({CTYPES[st.dtype]}));"]
        if mask == "1":
            copy.append(f"memset(&d_m[{dst}], 1, {count});")
        elif mask:
            copy.append(f"memcpy(&d_m[{dst}], &{mask}, {count});")
    return " || ".join(conds), copy


def _dead_row(plan: Plan, st: Stencil, last: int) -> list[str]:
    """A row whose every point is undefined for a read beyond an outer axis's end, copied from the preserved
    input's row (its mask too) with one ``memcpy`` instead of the checked code per point. A 3-D grid's two
    end planes and two end rows of every plane are such rows: 1.6 % of a 256³ grid's points, and a tenth of a
    fused run's time point by point (``benchmarks/host_bench.py``'s 3-D rows)."""
    dead = _dead(plan, st, last, outer=True, count="(size_t)(to - from)")
    if dead is None:
        return []
    cond, copy = dead
    return [
        f"  if ({cond}) {{",
        f"    const int64_t g{last} = from;",
        *["    " + x for x in copy],
        "    return;",
        "  }",
    ]


def _near(plan: Plan, st: Stencil, last: int) -> list[str]:
    """A point at a row's end, checked along the last axis only; a point undefined for a read beyond the
    row's end (``_dead``) copied from the preserved input without computing it."""
    body = _body(plan, st, checked=True, ring=True, only=last)
    dead = _dead(plan, st, last, outer=False, count=None)
    if dead is None:
        return body
    cond, copy = dead
    return [f"if ({cond}) {{", *["  " + x for x in copy], "  continue;", "}", *body]


def _bind(plan: Plan, var: str, src: str, field: str, const: bool) -> list[str]:
    t = CTYPES[plan.program.field_dtype(field)]
    q = "const " if const else ""
    out = [f"  {q}{t} *restrict {var}_v = ({q}{t} *){src}.v;"]
    if field in plan.masked:
        out.append(f"  {q}uint8_t *restrict {var}_m = {src}.m;")
    out += [f"  const int64_t {var}_s{j} = {src}.s[{j}];" for j in range(max(0, len(plan.axes(field)) - 1))]
    out.append(f"  const int64_t {var}_off = {src}.off;")
    if _ringed(plan, field):
        out.append(f"  const int64_t {var}_k = {src}.k, {var}_q = {src}.q;")
    return out


def _row(ind: str, last: int, fast: list[str], vl: int, vec: list[str] | None = None) -> list[str]:
    """The unchecked part of a row, [f0, f1). gcc finishes a vector loop with a scalar one (up to a vector
    less one point: a tenth of a 256-point row's time); with ``vl`` (points per 64-byte vector) the remainder
    is instead one more full vector ending at f1, recomputing a few points with the same values. ``vec``
    (``cvec.row_loop``): register-reusing code for rows of a vector or more instead, whole."""

    def loop(a: str, b: str, extra: str) -> list[str]:
        return [
            f"{ind}{extra}#pragma GCC ivdep",
            f"{ind}{extra}for (int64_t g{last} = {a}; g{last} < {b}; ++g{last}) {{",
            *[ind + extra + "  " + s for s in fast],
            f"{ind}{extra}}}",
        ]

    plain = loop("f0", "f1", "")
    if not vl:
        return plain
    if vec:  # the vector loop does every row of a vector or more; shorter ones point by point
        return [
            f"{ind}if (f1 - f0 >= {vl}) {{",
            f"{ind}  const int64_t fm = f0 + (f1 - f0) / {vl} * {vl};",
            *[f"{ind}  {line}" for line in vec],
            f"{ind}  (void)fv;",
            f"{ind}}} else {{",
            f"{ind}  for (int64_t g{last} = f0; g{last} < f1; ++g{last}) {{",
            *[ind + "    " + s for s in fast],
            f'{ind}    __asm__ volatile("");',
            f"{ind}  }}",
            f"{ind}}}",
        ]
    inner = loop("f0", "fm", "  ")
    tail = loop(f"f1 - {vl}", "f1", "  ")
    return [
        f"{ind}if (f1 - f0 >= {vl}) {{",
        f"{ind}  const int64_t fm = f0 + (f1 - f0) / {vl} * {vl};",
        *inner,
        f"{ind}  if (fm < f1) {{",
        *["  " + line for line in tail],
        f"{ind}  }}",
        f"{ind}}} else {{",
        *["  " + line for line in plain],
        f"{ind}}}",
    ]


def _row_code(
    rank: int,
    inner: tuple[tuple[int, int], ...],
    edge_call: str,
    fast: list[str],
    vl: int = 0,
    vec: list[str] | None = None,
    near: list[str] | None = None,
) -> list[str]:
    """One row's points [rlo, rhi) (at g0.., the outer axes): the checked edges and the unchecked interior.
    ``near``: a point's code checked along the last axis only, for the few points at the ends of a row whose
    other axes are inside (inline: a call of the fully checked ``edge_k`` per end cost a 3-D row of 256
    points a quarter of its time); rows near the other axes' ends keep the call."""
    last = rank - 1
    if near is None or not last:
        return [
            *_row_bounds(inner, last),
            "if (rlo < f0) " + edge_call.format(lo="rlo", hi="f0"),
            *_row("", last, fast, vl, vec),
            "if (f1 < rhi) " + edge_call.format(lo="f1", hi="rhi"),
        ]
    return _checked_row(inner, last, edge_call, near, _row("", last, fast, vl, vec))


def _checked_row(
    inner: tuple[tuple[int, int], ...],
    last: int,
    call: str,
    near: list[str],
    rows: list[str],
    planes: int = 1,
) -> list[str]:
    """A row at ``g0..`` (``rlo``/``rhi`` bound), or the same row of ``planes`` planes from ``g0`` at once:
    near the other axes' ends the fully checked ``edge_k`` call, elsewhere ``rows`` (the interior) and the
    row's end points checked along the last axis only (``near``)."""
    return [
        *_row_bounds(inner, last),
        "if (f0 == rhi) {",
        *["  " + x for x in _each(planes, [f"if (rlo < rhi) {call.format(lo='rlo', hi='rhi')}"])],
        "} else {",
        "  const int64_t e0 = f0, e1 = f1;",
        *["  " + x for x in rows],
        *["  " + x for x in _each(planes, _ends(last, near))],
        "}",
    ]


def _row_bounds(inner: tuple[tuple[int, int], ...], last: int, extra: Sequence[str] = ()) -> list[str]:
    """``f0``/``f1``: the interior of the row ``[rlo, rhi)`` (empty, at ``rhi``, for a row near the ends of
    the other axes); ``extra`` runs where the row is inside them."""
    row_ok = " && ".join(f"g{a} >= {inner[a][0]} && g{a} < n{a} - {inner[a][1]}" for a in range(last)) or "1"
    lo_l, hi_l = inner[last]
    return [
        "int64_t f0 = rhi, f1 = rhi;",
        f"if ({row_ok}) {{",
        f"  f0 = rlo > {lo_l} ? rlo : {lo_l}; if (f0 > rhi) f0 = rhi;",
        f"  f1 = n{last} - {hi_l} < rhi ? n{last} - {hi_l} : rhi; if (f1 < f0) f1 = f0;",
        *extra,
        "}",
    ]


def _ends(last: int, near: list[str]) -> list[str]:
    """The points ``[rlo, e0)`` and ``[e1, rhi)`` at the two ends of a row, checked along the last axis only
    (``near``), in one loop (one copy of the code)."""
    return [
        f"for (int64_t g{last} = rlo; g{last} < rhi; ++g{last}) {{",
        f"  if (g{last} == e0) {{ g{last} = e1; if (g{last} >= rhi) break; }}",
        *["  " + line for line in near],
        '  __asm__ volatile("");',
        "}",
    ]


def _body(
    plan: Plan,
    st: Stencil,
    checked: bool,
    ring: bool = False,
    dialect: Dialect = "c99",
    only: int | None = None,
) -> list[str]:
    """Statements computing one point of ``st`` (in ``dialect``: the cpu's C or the gpu's CUDA): reads,
    temporaries, value, definedness, store (``checked``: reads outside the grid take the boundary's value;
    along axis ``only`` alone, where the others are known inside)."""
    lines = ["int ok = 1;"]
    names: dict[object, str] = {}
    for j, ref in enumerate(stencil_refs(st)):
        names[ref] = f"r{j}"
        lines += _read(plan, st, ref, f"r{j}", checked, ring, dialect, only)
    params = {p.name: f"p{j}" for j, p in enumerate(plan.program.params)}
    temps, value = cexpr.stencil_lines(
        plan.program, st, lambda r: names[r], params, lambda a: (_g(a), f"n{a}"), dialect
    )
    lines += temps
    lines.append(f"{CTYPES[st.dtype]} v = {value};")
    keep = plan.preserve_input(st.name)
    if keep is not None:
        var = f"f{plan.index(keep)}"
        centre = _index(plan, var, keep, (0,) * plan.program.rank, ring)
        lines.append(f"if (!ok) v = {var}_v[{centre}];")
        lines.append(f"ok = {var}_m[{centre}];" if keep in plan.masked else "ok = 1;")
    didx = _index(plan, "d", st.name, (0,) * plan.program.rank, ring)
    lines.append(f"d_v[{didx}] = v;")
    if st.name in plan.masked:
        lines.append(f"d_m[{didx}] = (uint8_t)ok;")
    else:
        lines.append("(void)ok;")
    return lines


def _read(
    plan: Plan,
    st: Stencil,
    ref: object,
    name: str,
    checked: bool,
    ring: bool,
    dialect: Dialect = "c99",
    only: int | None = None,
) -> list[str]:
    from stencilmap.program.expr import Ref

    assert isinstance(ref, Ref)
    f = ref.field
    var = f"f{plan.index(f)}"
    t = CTYPES[plan.program.field_dtype(f)]
    masked = f in plan.masked
    idx = _index(plan, var, f, ref.offset, ring)
    axes = plan.axes(f)
    conds = [
        f"(uint64_t)({_g(a)} + {o}) < (uint64_t)n{a}"
        for a, o in zip(axes, ref.offset, strict=True)
        if o != 0 and only in (None, a)
    ]
    if not checked or not conds:
        out = [f"const {t} {name} = {var}_v[{idx}];"]
        if masked:
            out.append(f"ok &= {var}_m[{idx}];")
        return out
    b = st.boundary_of(f)
    centre = _index(plan, var, f, (0,) * len(axes), ring)
    if b.kind == "constant":
        fill, fill_ok = cexpr.boundary_literal(b.value, plan.program.field_dtype(f), dialect), "1"
    elif b.kind == "copy":
        fill, fill_ok = f"{var}_v[{centre}]", (f"{var}_m[{centre}]" if masked else "1")
    else:
        fill, fill_ok = f"(({t})0)", "0"
    inside = " && ".join(conds)
    return [
        f"const int in_{name} = {inside};",
        f"const {t} {name} = in_{name} ? {var}_v[{idx}] : {fill};",
        f"ok &= in_{name} ? {(var + '_m[' + idx + ']') if masked else '1'} : {fill_ok};",
    ]


# ---------------------------------------------------------------------------------------- the driver


def _tables(plan: Plan, fn: Sequence[int]) -> str:
    """The driver's tables; ``fn[x]``: the function stencil ``x`` calls (``generate``)."""
    rank = plan.program.rank
    table = margins(plan, TMAX)
    rows = []
    for r in range(TMAX):
        per = []
        for st in plan.order:
            m = table[r][st.name]
            cells = [[-1, -1]] * rank if m is None else [list(x) for x in m]
            per.append("{" + ", ".join(f"{{{c[0]}, {c[1]}}}" for c in cells) + "}")
        rows.append("{" + ", ".join(per) + "}")
    outs = list(plan.program.outputs)
    feeds_out = {o for _, o in plan.pairs} if plan.feeds else set()
    ns = len(plan.order)
    reads = [stencil_reads(plan, st) for st in plan.order]  # stencil x's slot j is field RD[RD_AT[x] + j]
    text = [
        f"#define SM_RANK {rank}",
        f"#define SM_NS {ns}",
        f"#define SM_NF {len(plan.fields)}",
        f"#define SM_NI {len(plan.program.inputs)}",
        f"#define SM_TMAX {TMAX}",
        f"#define SM_NP {len(plan.pairs) if plan.feeds else 0}",
        f"static const int64_t MARG[SM_TMAX][SM_NS][SM_RANK][2] = {{{', '.join(rows)}}};",
        _int_array("FIELD_OF", [plan.index(s.name) for s in plan.order]),
        _int_array("SLOTS", [2 if s.name in feeds_out else 1 for s in plan.order]),
        _int_array("OUT_OF", [outs.index(s.name) if s.name in outs else -1 for s in plan.order]),
        _int_array("ESIZE", [dt.bits(s.dtype) // 8 if s.dtype != "bool" else 1 for s in plan.order]),
        _int_array("MASKED", [int(s.name in plan.masked) for s in plan.order]),
        _int_array("PAIR_IN", [plan.index(i) for i, _ in plan.pairs] if plan.feeds else [-1]),
        _int_array("PAIR_OUT", [plan.index(o) for _, o in plan.pairs] if plan.feeds else [-1]),
        f"#define SM_NT_BYTES {NT_BYTES}",
        "typedef void (*sm_fn)(const int64_t *, const int64_t *, const int64_t *, const sm_buf *, sm_buf, void *const *, int);",
        f"static const sm_fn FN[SM_NS] = {{{', '.join(f'st_{k}' for k in fn)}}};",
        f"#define SM_NR {max(1, *(len(r) for r in reads))}",
        _int_array("RD_AT", list(itertools.accumulate((len(r) for r in reads), initial=0))),
        _int_array("RD", [plan.index(f) for r in reads for f in r] or [-1]),
    ]
    return "\n".join(text) + "\n"


def _int_array(name: str, values: list[int]) -> str:
    return f"static const int {name}[] = {{{', '.join(str(v) for v in values)}}};"


DRIVER = r"""
static int64_t sm_idx(const sm_buf *b, const int64_t *g) {
  int64_t i = g[SM_RANK - 1] - b->off;
  for (int a = 0; a < SM_RANK - 1; ++a) i += g[a] * b->s[a];
  return i;
}

/* Copy the box [lo, hi) of one field from src to dst, row by row. */
static void sm_copy(const sm_buf *src, const sm_buf *dst, const int64_t *lo, const int64_t *hi, int esize) {
  int64_t g[SM_RANK];
  for (int a = 0; a < SM_RANK; ++a) { g[a] = lo[a]; if (lo[a] >= hi[a]) return; }
  const int64_t len = hi[SM_RANK - 1] - lo[SM_RANK - 1];
  for (;;) {
    const int64_t i = sm_idx(src, g), j = sm_idx(dst, g);
    memcpy((char *)dst->v + j * esize, (const char *)src->v + i * esize, (size_t)(len * esize));
    if (dst->m) memcpy(dst->m + j, src->m + i, (size_t)len);
    int a = SM_RANK - 2;
    while (a >= 0) { if (++g[a] < hi[a]) break; g[a] = lo[a]; --a; }
    if (a < 0) return;
  }
}

int sm_block(const int64_t *n, const int64_t *olo, const int64_t *ohi, int64_t steps, const int64_t *tile,
             int threads, const sm_buf *inputs, const sm_buf *outputs, void *const *P) {
  if (steps < 1 || steps > SM_TMAX) return -1;
  int64_t mn[SM_RANK], mp[SM_RANK], ext[SM_RANK], nt[SM_RANK], cells = 1, total = 1, grid = 1;
  for (int a = 0; a < SM_RANK; ++a) {
    grid *= n[a];
    mn[a] = mp[a] = 0;
    for (int64_t r = 0; r < steps; ++r)
      for (int x = 0; x < SM_NS; ++x) {
        if (MARG[r][x][a][0] > mn[a]) mn[a] = MARG[r][x][a][0];
        if (MARG[r][x][a][1] > mp[a]) mp[a] = MARG[r][x][a][1];
      }
    ext[a] = tile[a] + mn[a] + mp[a];
    if (ext[a] > n[a]) ext[a] = n[a];
    cells *= ext[a];
    nt[a] = (ohi[a] - olo[a] + tile[a] - 1) / tile[a];
    total *= nt[a];
  }
  int err = 0;
  omp_set_dynamic(0);
  #pragma omp parallel num_threads(threads)
  {
    /* Buffers start at staggered offsets modulo 4 KiB: a load and an earlier store whose addresses agree
       in their low 12 bits stall the core (4K aliasing), and equally aligned buffers make that systematic. */
    void *scr[SM_NS][2] = {{0}}, *base_scr[SM_NS][2] = {{0}};
    uint8_t *msk[SM_NS][2] = {{0}};
    void *base_msk[SM_NS][2] = {{0}};
    int bad = 0, nbuf = 0;
    for (int x = 0; x < SM_NS; ++x)
      for (int k = 0; k < SLOTS[x]; ++k) {
        size_t bytes = ((size_t)(cells * ESIZE[x]) + 63) / 64 * 64 + 4096;
        base_scr[x][k] = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        if (!base_scr[x][k]) { bad = 1; continue; }
        scr[x][k] = (char *)base_scr[x][k] + (size_t)((++nbuf * 1344) % 4096);
        if (MASKED[x]) {
          base_msk[x][k] = aligned_alloc(4096, (((size_t)cells + 63) / 64 * 64 + 8191) / 4096 * 4096);
          if (!base_msk[x][k]) { bad = 1; continue; }
          msk[x][k] = (uint8_t *)base_msk[x][k] + (size_t)((++nbuf * 1344) % 4096);
        }
      }
    if (bad) {
      #pragma omp atomic write
      err = -2;
    }
    #pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < total; ++t) {
      int e;
      #pragma omp atomic read
      e = err;
      if (e) continue;
      int64_t tlo[SM_RANK], thi[SM_RANK], base[SM_RANK], s[3] = {0, 0, 0}, off = 0, rest = t;
      for (int a = SM_RANK - 1; a >= 0; --a) {
        const int64_t k = rest % nt[a];
        rest /= nt[a];
        tlo[a] = olo[a] + k * tile[a];
        thi[a] = tlo[a] + tile[a] < ohi[a] ? tlo[a] + tile[a] : ohi[a];
        base[a] = tlo[a] - mn[a] > 0 ? tlo[a] - mn[a] : 0;
      }
      int64_t stride = 1;
      for (int a = SM_RANK - 1; a >= 0; --a) { if (a < SM_RANK - 1) s[a] = stride; off += base[a] * stride; stride *= ext[a]; }
      sm_buf F[SM_NF];
      memset(F, 0, sizeof F);
      for (int i = 0; i < SM_NI; ++i) F[i] = inputs[i];
      int direct[SM_NS];
      memset(direct, 0, sizeof direct);
      for (int64_t st = 0; st < steps; ++st) {
        const int64_t r = steps - 1 - st;
        for (int x = 0; x < SM_NS; ++x) {
          const int64_t (*m)[2] = MARG[r][x];
          if (m[0][0] < 0) continue;
          int64_t lo[SM_RANK], hi[SM_RANK];
          int zero = 1, empty = 0;
          for (int a = 0; a < SM_RANK; ++a) {
            lo[a] = tlo[a] - m[a][0] > 0 ? tlo[a] - m[a][0] : 0;
            hi[a] = thi[a] + m[a][1] < n[a] ? thi[a] + m[a][1] : n[a];
            if (m[a][0] || m[a][1]) zero = 0;
            if (lo[a] >= hi[a]) empty = 1;
          }
          sm_buf D = {0};
          int stream = 0;
          if (r == 0 && OUT_OF[x] >= 0 && zero) {
            D = outputs[OUT_OF[x]];
            direct[x] = 1;
            stream = grid * ESIZE[x] >= SM_NT_BYTES;
          } else {
            const int k = SLOTS[x] == 2 ? (int)(st & 1) : 0;
            D.v = scr[x][k]; D.m = msk[x][k]; D.off = off;
            memcpy(D.s, s, sizeof s);
          }
          if (!empty) {
            sm_buf L[SM_NR];  /* the fields it reads, in its slots */
            for (int j = RD_AT[x]; j < RD_AT[x + 1]; ++j) L[j - RD_AT[x]] = F[RD[j]];
            FN[x](lo, hi, n, L, D, P, stream);
          }
          F[FIELD_OF[x]] = D;
        }
        for (int p = 0; p < SM_NP; ++p) F[PAIR_IN[p]] = F[PAIR_OUT[p]];
      }
      for (int x = 0; x < SM_NS; ++x)
        if (OUT_OF[x] >= 0 && !direct[x]) sm_copy(&F[FIELD_OF[x]], &outputs[OUT_OF[x]], tlo, thi, ESIZE[x]);
    }
    for (int x = 0; x < SM_NS; ++x)
      for (int k = 0; k < 2; ++k) { free(base_scr[x][k]); free(base_msk[x][k]); }
    SM_SFENCE();  /* streaming stores are weakly ordered: drain them before the caller reads */
  }
  return err;
}
"""


def _driver(plan: Plan) -> str:
    del plan
    return DRIVER
