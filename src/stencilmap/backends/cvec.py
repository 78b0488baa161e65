"""Register reuse along a row for the CPU backend's unchecked interior (``cgen``'s fast loop).

gcc vectorises the interior loop of a stencil with one load per read: a 5-point Jacobi makes five 64-byte
loads per 16 points, two of them (the ``±1`` reads) unaligned and across a cache-line boundary. In cache —
where the wavefront keeps every fused step — those loads, not the arithmetic, set the speed (a 2-D 5-point
row in L1: 6.5 GCell/s with gcc's loop, 13.7 with neighbours formed in registers; see
``docs/guide/host.md``). This emitter writes the loop in GCC vector extensions instead: the reads of one
row of one field (same offsets but along the last axis) share the 16-point vectors ``cur`` (this block),
``prev`` (kept from the last block) and ``next`` (loaded once), and each read is a shuffle (``SM_SHUF``) of
two of them. The operations on each lane are the scalar expression's, in the same order (``-ffp-contract=off``
applies to vectors too), so results stay bit-exact. With ``planes`` > 1 the loop computes the same row of that
many consecutive planes of axis 0 (``cgen.joint_planes``), the rows they read in common loaded once.

Only simple stencils qualify (``row_loop`` returns None otherwise and the scalar loop stays): float32
everywhere, no masks, every read full-rank with ``|offset|`` < 16 along the last axis, and an expression of
reads, temporaries, float literals and ``+ - * /`` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from stencilmap.program.expr import Ref
from stencilmap.program.ir import Stencil

from . import cexpr
from .plan import Plan, stencil_refs

#: Points per vector (64 bytes of float32).
VL = 16

_LITERAL = re.compile(r"\(float\)(-?0x[0-9a-f]+(?:\.[0-9a-f]*)?p[+-]\d+)")
_TOKENS = re.compile(r"\s*(?:r\d+|t\d+|-?0x[0-9a-f]+(?:\.[0-9a-f]*)?p[+-]\d+f|[-+*/()])")


def vector_expr(text: str) -> str | None:
    """The scalar float32 expression ``text`` for vector operands: exact float literals suffixed ``f``
    (a vector op with a double would not compile), the identity casts ``(float)`` dropped; None when
    anything else (calls, comparisons, parameters, other types) is left."""
    out = _LITERAL.sub(r"\1f", text).replace("(float)", "")
    pos = 0
    while pos < len(out):
        m = _TOKENS.match(out, pos)
        if m is None or m.end() == pos:
            return None if out[pos:].strip() else out
        pos = m.end()
    return out


def row_loop(plan: Plan, st: Stencil, index: object, planes: int = 1) -> list[str] | None:
    """Lines computing the interior points ``[f0, fv)`` of a row in vectors and setting ``fv`` (the rest,
    ``[fv, f1)``, is left to the scalar loops); None when the stencil does not qualify. Rows of a vector or
    more are done whole (``fv = f1``): the last block and the row's last 16 points (overlapping it, the same
    values written twice) load each read on its own, as the block after them may be past the row. ``index`` is
    ``cgen._index``. ``planes`` > 1: the same row of that many planes (``g0``, ``g0 + 1``, …) at once, the
    reads the planes share loaded once (``joint``)."""
    rank = plan.program.rank
    last = rank - 1
    refs = stencil_refs(st)
    fields = {r.field for r in refs} | {st.name}
    if st.dtype != "float32" or any(plan.program.field_dtype(f) != "float32" for f in fields):
        return None
    if fields & set(plan.masked) or not refs or len(refs) > 32:
        return None
    if any(plan.axes(f) != tuple(range(rank)) for f in fields) or plan.program.params:
        return None
    if any(abs(r.offset[last]) >= VL for r in refs):
        return None
    names = {r: f"r{j}" for j, r in enumerate(refs)}
    try:
        temps, value = cexpr.stencil_lines(plan.program, st, lambda r: names[r], {}, None)
    except cexpr.Unsupported:  # a fusion guard needs the point: the scalar loop has it
        return None
    vtemps = []
    for line in temps:
        head, _, rhs = line.partition(" = ")
        expr = vector_expr(rhs.rstrip(";"))
        if not head.startswith("const float t") or expr is None:
            return None
        vtemps.append(f"const sm_vf {head.split()[-1]} = {expr};")
    vvalue = vector_expr(value)
    if vvalue is None:
        return None
    assert callable(index)
    groups = _groups(refs, planes, last)
    number = {key: j for j, key in enumerate(sorted(groups))}
    setup: list[str] = []
    loads: list[str] = []
    carry: list[str] = []
    for (f, at_lead), j in number.items():
        offs = groups[(f, at_lead)]
        var = f"f{plan.index(f)}"
        at = index(plan, var, f, (*at_lead, 0), True)
        lo, hi = min(offs), max(offs)
        setup.append(
            f"const float *restrict sm_w{j}; {{ const int64_t g{last} = f0; sm_w{j} = &{var}_v[{at}]; }}"
        )
        if lo < 0:  # lanes 16+lo.. of the block before f0: loaded from f0+lo (in bounds), moved up
            setup.append(f"sm_vf sm_m{j} = sm_ld(sm_w{j} + ({lo}));")
            rot = ", ".join(str((k - VL - lo) % VL) for k in range(VL))
            setup.append(f"sm_m{j} = SM_SHUF(sm_m{j}, sm_m{j}, {rot});")
        setup.append(f"sm_vf sm_c{j} = sm_ld(sm_w{j});")
        if hi > 0:
            loads.append(f"const sm_vf sm_n{j} = sm_ld(sm_w{j} + j + {VL});")
        if lo < 0:
            carry.append(f"sm_m{j} = sm_c{j};")
        carry.append(f"sm_c{j} = sm_n{j};" if hi > 0 else f"sm_c{j} = sm_ld(sm_w{j} + j + {VL});")
    body: list[str] = []
    final: list[str] = []  # the last block: every read a load of its own (the next block may not exist)
    dst = index(plan, "d", st.name, (0,) * rank, True)
    for p in range(planes):
        reads, ends = [], []
        for r in refs:
            j, o = number[_lead(r, p, last)], r.offset[last]
            ends.append(f"const sm_vf {names[r]} = sm_ld(sm_w{j} + at + ({o}));")
            if o == 0:
                reads.append(f"const sm_vf {names[r]} = sm_c{j};")
            else:
                pair, first = (f"sm_m{j}, sm_c{j}", VL + o) if o < 0 else (f"sm_c{j}, sm_n{j}", o)
                lanes = ", ".join(str(first + k) for k in range(VL))
                reads.append(f"const sm_vf {names[r]} = SM_SHUF({pair}, {lanes});")
        wd = "sm_wd" if planes == 1 else f"sm_wd{p}"
        bind = (
            f"const int64_t g0 = g0p + {p}, g{last} = f0;" if planes > 1 else f"const int64_t g{last} = f0;"
        )
        setup.append(f"float *restrict {wd}; {{ {bind} {wd} = &d_v[{dst}]; }}")
        for out, rd, where in ((body, reads, "j"), (final, ends, "at")):
            block = [
                *rd,
                *vtemps,
                f"const sm_vf v = {vvalue};",
                f"__builtin_memcpy({wd} + {where}, &v, sizeof v);",
            ]
            out += block if planes == 1 else ["{", *["  " + x for x in block], "}"]
    return [
        "int64_t fv = f0;",
        f"if (fm - f0 >= {VL}) {{",
        "  typedef float sm_vf __attribute__((vector_size(64)));",
        "  typedef int32_t sm_vi __attribute__((vector_size(64)));",
        *(["  const int64_t g0p = g0;"] if planes > 1 else []),
        *["  " + s for s in setup],
        f"  const int64_t jn = fm - f0 - {VL};",
        f"  for (int64_t j = 0; j < jn; j += {VL}) {{",
        *["    " + s for s in loads],
        *["    " + s for s in body],
        *["    " + s for s in carry],
        "  }",
        f"  for (int64_t at = jn, end = f1 - f0 - {VL}; ; at = end) {{",
        *["    " + s for s in final],
        "    if (at == end) break;",
        "  }",
        "  fv = f1;",
        "}",
    ]


def joint_groups(plan: Plan, st: Stencil, planes: int) -> int:
    """Vectors ``row_loop`` keeps live from block to block for ``planes`` planes at once: a value, and a
    previous one for reads to the left, per group of reads sharing a row."""
    groups = _groups(stencil_refs(st), planes, plan.program.rank - 1)
    return sum(1 + (min(o) < 0) for o in groups.values())


def _groups(refs: Sequence[Ref], planes: int, last: int) -> dict[tuple[str, tuple[int, ...]], set[int]]:
    """The rows ``planes`` planes of a stencil read (a field and outer offsets from the first plane), with
    the offsets along the row read of each."""
    groups: dict[tuple[str, tuple[int, ...]], set[int]] = {}
    for p in range(planes):
        for r in refs:
            groups.setdefault(_lead(r, p, last), set()).add(r.offset[last])
    return groups


def _lead(r: Ref, plane: int, last: int) -> tuple[str, tuple[int, ...]]:
    """The row a read of the ``plane``-th plane (along axis 0) reads: its field and outer offsets."""
    return r.field, tuple(o + (plane if a == 0 else 0) for a, o in enumerate(r.offset[:last]))


#: Unaligned vector load (gcc makes it one ``vmovups``) and the lanes ``idx`` of two vectors side by side
#: (gcc's ``__builtin_shuffle``, clang's ``__builtin_shufflevector``); macros, for every stencil function.
LOAD = """\
#define sm_ld(p) __extension__ ({ typedef float sm_vf_ __attribute__((vector_size(64))); sm_vf_ x_; \\
  __builtin_memcpy(&x_, (p), sizeof x_); x_; })
#if defined(__clang__)
#define SM_SHUF(a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#else
#define SM_SHUF(a, b, ...) __builtin_shuffle((a), (b), (sm_vi){__VA_ARGS__})
#endif
"""
