"""The wavefront block driver of the CPU backend (``sm_wave``): temporal blocking that streams axis 0.

Overlapped tiles (``cgen``'s ``sm_block``) recompute a halo on every side of a tile; in 3-D a tile that fits
the L2 cache is about 40 points wide and the halos of a few fused steps are most of its work. ``sm_wave``
tiles only the inner axes and streams the outer one: a tile is a column ``[tlo, thi)`` of axes 1.. that runs
down axis 0 (a chunk of ``tile[0]`` planes), and at each tick ``tau`` every stage — a stencil of one fused
step — computes one plane, ``tau`` plus its axis-0 margin, so a step trails the step it reads by the stencil's
reach. A stage keeps only the planes its readers still need, in a ring of ``RING[r][x]`` planes: in cache,
whatever the grid's depth. Redundant work is left only in the inner axes' halos (none when a tile spans them).

Outputs of the last step are written plane by plane straight into the output, with ordinary stores (``nt = 0``)
or with streaming ones (``nt = 1``: each row is computed into a buffer in L1 and copied out, ``cgen``'s streamed
rows): the output is not read again before it has left the cache, so the store skips the read-for-ownership
of its lines (a third of a streamed step's traffic).
Semantics are ``sm_block``'s: same stencil functions, same margins, same boundaries and masks.
"""

from __future__ import annotations

from stencilmap.program.ir import Stencil

from .plan import Margin, Plan, interior, margins, stencil_refs


def ring_table(plan: Plan, tmax: int) -> str:
    """``SM_R0``/``SM_R1`` (the deepest axis-0 reads of full-rank fields below/above a point) and
    ``RING[r][x]``: the planes stage ``x`` must keep when ``r`` steps follow it. Stage ``x`` writes plane
    ``tau + hi_x`` at tick ``tau``; a reader ``c`` reads down to ``tau + hi_c - R0``, so the ring holds
    ``hi_x - min(hi_c) + R0 + 1`` planes (at least ``R0 + R1 + 1``, which a call's slot arithmetic needs)."""
    r0, r1 = reads_0(plan)
    rows = ["{" + ", ".join(str(k) for k in row) + "}" for row in ring_sizes(plan, tmax)]
    rl = max((lo for st in plan.order for lo, _ in interior(plan, st)[-1:]), default=0)
    return (
        f"#define SM_R0 {r0}\n#define SM_R1 {r1}\n#define SM_RL {rl}\n"
        f"static const int64_t RING[SM_TMAX][SM_NS] = {{{', '.join(rows)}}};\n"
    )


def reads_0(plan: Plan) -> tuple[int, int]:
    """How far below and above a point any stencil reads a full-rank field along axis 0."""
    rank = plan.program.rank
    r0 = r1 = 0
    for st in plan.order:
        for ref in stencil_refs(st):
            if plan.axes(ref.field) == tuple(range(rank)):
                r0, r1 = max(r0, -ref.offset[0]), max(r1, ref.offset[0])
    return r0, r1


def ring_sizes(plan: Plan, steps: int) -> list[list[int]]:
    """``[r][x]``: the planes stage ``x`` keeps when ``r`` steps follow it (0: not computed)."""
    r0, r1 = reads_0(plan)
    table = margins(plan, steps)
    readers: dict[str, list[Stencil]] = {}  # the stencils ``reach`` is not None for, in order, per field
    for y in plan.order:
        keep = plan.preserve_input(y.name)
        for f in dict.fromkeys([*(ref.field for ref in stencil_refs(y)), *([keep] if keep else [])]):
            readers.setdefault(f, []).append(y)
    position = {y.name: x for x, y in enumerate(plan.order)}
    return [
        [_ring(plan, table, r, x, r0, r1, readers, position) for x in range(len(plan.order))]
        for r in range(steps)
    ]


def _ring(
    plan: Plan,
    table: list[dict[str, Margin | None]],
    r: int,
    x: int,
    r0: int,
    r1: int,
    readers: dict[str, list[Stencil]],
    position: dict[str, int],
) -> int:
    st = plan.order[x]
    m = table[r][st.name]
    if m is None:
        return 0
    his = [_hi(table[r][y.name]) for y in readers.get(st.name, []) if position[y.name] > x]
    if r == 0 and st.name in plan.program.outputs:
        his.append(0)  # copied out at the tick of its own plane
    if plan.feeds and r > 0:
        for i, o in plan.pairs:
            if o == st.name:
                his += [_hi(table[r - 1][y.name]) for y in readers.get(i, [])]
    his = [h for h in his if h >= 0]
    low = min(his, default=0)
    return max(_hi(m) - low + r0 + 1, r0 + r1 + 1)


def _hi(m: Margin | None) -> int:
    """A stage's axis-0 lead (its margin above), or -1 for a stage not computed."""
    return -1 if m is None else m[0][1]


WAVE = r"""
static int64_t sm_fdiv(int64_t a, int64_t b) { const int64_t d = a / b; return (a % b && a < 0) ? d - 1 : d; }

static int64_t sm_slot(const sm_buf *b, int64_t p) { return b->k ? p % b->k : p; }

/* Copy plane p of the box [lo, hi) (axes 1..) of one field from src to dst (either may be a ring). */
static void sm_plane_copy(const sm_buf *src, const sm_buf *dst, int64_t p, const int64_t *lo, const int64_t *hi,
                          int esize, int nt) {
  int64_t g[SM_RANK];
  for (int a = 1; a < SM_RANK; ++a) { g[a] = lo[a]; if (lo[a] >= hi[a]) return; }
  const int64_t len = hi[SM_RANK - 1] - lo[SM_RANK - 1];
  const int64_t ps = sm_slot(src, p) * src->s[0], pd = sm_slot(dst, p) * dst->s[0];
  for (;;) {
    int64_t i = ps + g[SM_RANK - 1] - src->off, j = pd + g[SM_RANK - 1] - dst->off;
    for (int a = 1; a < SM_RANK - 1; ++a) { i += g[a] * src->s[a]; j += g[a] * dst->s[a]; }
    sm_put((char *)dst->v + j * esize, (const char *)src->v + i * esize, len * esize, nt);
    if (dst->m) sm_put((char *)dst->m + j, (const char *)src->m + i, len, nt);
    int a = SM_RANK - 2;
    while (a >= 1) { if (++g[a] < hi[a]) break; g[a] = lo[a]; --a; }
    if (a < 1) return;
  }
}

enum { SM_UNUSED, SM_RING, SM_DIRECT };

/* Per-thread rings of every stage (st, x), laid out [slot][axes 1..] over a tile's column with its halo. */
static int sm_rings(int64_t steps, int64_t blk, const int64_t *ext, int64_t plane, sm_buf *ring, char *kind,
                    void **mem) {
  int nbuf = 0;
  for (int64_t st = 0; st < steps; ++st)
    for (int x = 0; x < SM_NS; ++x) {
      const int64_t r = steps - 1 - st, i = st * SM_NS + x;
      const int64_t (*m)[2] = MARG[r][x];
      if (m[0][0] < 0) continue;
      int zero = 1;
      for (int a = 0; a < SM_RANK; ++a) if (m[a][0] || m[a][1]) zero = 0;
      const int direct = r == 0 && OUT_OF[x] >= 0 && zero;
      kind[i] = direct ? SM_DIRECT : SM_RING;
      if (kind[i] == SM_DIRECT) continue;
      const int64_t k = RING[r][x] + blk - 1;  /* a tick writes blk planes */
      size_t bytes = ((size_t)(k * plane * ESIZE[x]) + 63) / 64 * 64 + 4096;
      mem[2 * i] = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
      if (!mem[2 * i]) return -2;
      /* Staggered modulo 4 KiB (4K aliasing: see sm_block), and shifted so that a row's first interior
         point (SM_RL in) starts a cache line: the centre reads and the store of every vector are aligned. */
      const size_t shift = (size_t)((64 - (SM_RL * ESIZE[x]) % 64) % 64);
      ring[i].v = (char *)mem[2 * i] + (size_t)((++nbuf * 1344) % 4096) + shift;
      if (MASKED[x]) {
        mem[2 * i + 1] = aligned_alloc(4096, (((size_t)(k * plane) + 63) / 64 * 64 + 8191) / 4096 * 4096);
        if (!mem[2 * i + 1]) return -2;
        ring[i].m = (uint8_t *)mem[2 * i + 1] + (size_t)((++nbuf * 1344) % 4096);
      }
      ring[i].k = k;
      ring[i].s[0] = plane;
      for (int a = 1; a < SM_RANK - 1; ++a) {
        int64_t s = 1;
        for (int b = a + 1; b < SM_RANK; ++b) s *= ext[b];
        ring[i].s[a] = s;
      }
    }
  return 0;
}

/* One tick of one tile: every stage computes its planes [tau + lead, tau + lead + blk) (a call per stage and
   tick: ``blk`` planes share its cost); finished planes of outputs go out. */
static void sm_tick(int64_t tau, int64_t blk, int64_t steps, const int64_t *n, const int64_t *tlo,
                    const int64_t *thi, sm_buf *ring, const char *kind, const sm_buf *inputs,
                    const sm_buf *outputs, void *const *P, int nt) {
  sm_buf F[SM_NF];
  memset(F, 0, sizeof F);
  for (int i = 0; i < SM_NI; ++i) F[i] = inputs[i];
  for (int64_t st = 0; st < steps; ++st) {
    const int64_t r = steps - 1 - st;
    for (int x = 0; x < SM_NS; ++x) {
      const int64_t i = st * SM_NS + x;
      const int64_t (*m)[2] = MARG[r][x];
      if (kind[i] == SM_UNUSED) continue;
      sm_buf D = kind[i] == SM_DIRECT ? outputs[OUT_OF[x]] : ring[i];
      int64_t lo[SM_RANK], hi[SM_RANK];
      lo[0] = tau + m[0][1];
      hi[0] = lo[0] + blk;
      if (lo[0] < tlo[0] - m[0][0]) lo[0] = tlo[0] - m[0][0];
      if (lo[0] < 0) lo[0] = 0;
      if (hi[0] > thi[0] + m[0][1]) hi[0] = thi[0] + m[0][1];
      if (hi[0] > n[0]) hi[0] = n[0];
      int empty = lo[0] >= hi[0];
      for (int a = 1; a < SM_RANK; ++a) {
        lo[a] = tlo[a] - m[a][0] > 0 ? tlo[a] - m[a][0] : 0;
        hi[a] = thi[a] + m[a][1] < n[a] ? thi[a] + m[a][1] : n[a];
        if (lo[a] >= hi[a]) empty = 1;
      }
      if (!empty) {
        sm_buf L[SM_NR];  /* the fields it reads, in its slots (cgen's RD), their rings placed for lo */
        for (int j = RD_AT[x]; j < RD_AT[x + 1]; ++j) {
          sm_buf *b = &L[j - RD_AT[x]];
          *b = F[RD[j]];
          if (b->k) b->q = sm_fdiv(lo[0] - SM_R0, b->k) * b->k;
        }
        if (D.k) D.q = sm_fdiv(lo[0], D.k) * D.k;
        FN[x](lo, hi, n, L, D, P, nt && kind[i] == SM_DIRECT);
      }
      F[FIELD_OF[x]] = D;
    }
    for (int q = 0; q < SM_NP; ++q) F[PAIR_IN[q]] = F[PAIR_OUT[q]];
  }
  for (int64_t t = tau > tlo[0] ? tau : tlo[0]; t < tau + blk && t < thi[0]; ++t)
    for (int x = 0; x < SM_NS; ++x)
      if (OUT_OF[x] >= 0 && kind[(steps - 1) * SM_NS + x] == SM_RING)
        sm_plane_copy(&F[FIELD_OF[x]], &outputs[OUT_OF[x]], t, tlo, thi, ESIZE[x], nt);
}

int sm_wave(const int64_t *n, const int64_t *olo, const int64_t *ohi, int64_t steps, const int64_t *tile,
            int threads, const sm_buf *inputs, const sm_buf *outputs, void *const *P, int nt, int64_t blk) {
  if (steps < 1 || steps > SM_TMAX || SM_RANK < 2 || blk < 1) return -1;
  int64_t mn[SM_RANK], mp[SM_RANK], ext[SM_RANK], nt_[SM_RANK], plane = 1, total = 1, lead = 0;
  for (int a = 0; a < SM_RANK; ++a) {
    mn[a] = mp[a] = 0;
    for (int64_t r = 0; r < steps; ++r)
      for (int x = 0; x < SM_NS; ++x) {
        if (MARG[r][x][a][0] > mn[a]) mn[a] = MARG[r][x][a][0];
        if (MARG[r][x][a][1] > mp[a]) mp[a] = MARG[r][x][a][1];
        if (a == 0 && MARG[r][x][0][0] >= 0 && MARG[r][x][0][0] + MARG[r][x][0][1] > lead)
          lead = MARG[r][x][0][0] + MARG[r][x][0][1];
      }
    ext[a] = tile[a] + mn[a] + mp[a];
    if (ext[a] > n[a]) ext[a] = n[a];
    if (a == SM_RANK - 1) ext[a] = (ext[a] + 15) / 16 * 16;  /* rows start cache lines alike (see sm_rings) */
    if (a > 0) plane *= ext[a];
    nt_[a] = (ohi[a] - olo[a] + tile[a] - 1) / tile[a];
    total *= nt_[a];
  }
  const int64_t ns = steps * SM_NS;
  int err = 0;
  omp_set_dynamic(0);
  #pragma omp parallel num_threads(threads)
  {
    sm_buf *ring = calloc((size_t)ns, sizeof(sm_buf));
    char *kind = calloc((size_t)ns, 1);
    void **mem = calloc((size_t)(2 * ns), sizeof(void *));
    if (!ring || !kind || !mem || sm_rings(steps, blk, ext, plane, ring, kind, mem)) {
      #pragma omp atomic write
      err = -2;
    }
    #pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < total; ++t) {
      int e;
      #pragma omp atomic read
      e = err;
      if (e) continue;
      int64_t tlo[SM_RANK], thi[SM_RANK], off = 0, rest = t, stride = 1;
      for (int a = SM_RANK - 1; a >= 0; --a) {
        const int64_t k = rest % nt_[a];
        rest /= nt_[a];
        tlo[a] = olo[a] + k * tile[a];
        thi[a] = tlo[a] + tile[a] < ohi[a] ? tlo[a] + tile[a] : ohi[a];
        if (a > 0) { off += (tlo[a] - mn[a] > 0 ? tlo[a] - mn[a] : 0) * stride; stride *= ext[a]; }
      }
      for (int64_t i = 0; i < ns; ++i) ring[i].off = off;
      for (int64_t tau = tlo[0] - lead; tau < thi[0]; tau += blk)
        sm_tick(tau, blk, steps, n, tlo, thi, ring, kind, inputs, outputs, P, nt);
    }
    SM_SFENCE();  /* streaming stores are weakly ordered: drain them before the caller reads */
    if (mem)
      for (int64_t i = 0; i < 2 * ns; ++i) free(mem[i]);
    free(mem); free(kind); free(ring);
  }
  return err;
}
"""
