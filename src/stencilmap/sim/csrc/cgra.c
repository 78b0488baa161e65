/* The triggered-instruction CGRA simulator (sim/cgra.py packs the design and prepends the F_* op codes;
 * CGRA paper §II-A, §III).
 *
 * Every cycle, in three phases:
 *   1. PEs, consumers before producers: a PE fires when the heads of its input queues are ready and every
 *      queue it feeds has room; its result enters them `lat` cycles later (the entries in flight count
 *      against the queue's capacity). A LOAD delivers the oldest load that has returned.
 *   2. memory: STOREs, then LOADs issuing (rotating, for fairness), while the cycle's bytes last: the
 *      device's bandwidth per cycle is a credit shared by loads and stores (up to 4 cycles' worth kept);
 *      a LOAD whose load missed the cache waits for the line's fill before it issues again (see Cache).
 *   3. DONE fired: stop; nothing fired for `stall` cycles: a deadlock.
 * A token is (value, tag); tag = strip · NPTS + flat index of the grid point it stands for. A FILTER
 * retags what it keeps with the output point it feeds, and every arithmetic PE checks that its operands
 * stand for the same point (a misrouted mapping is an error, not a result).
 */
#include <math.h>
#include <stdint.h>

typedef int64_t i64;

enum { AGEN = 0, LOAD, FILTER, ARITH, STORE, COUNT, DONE, TYPED };
/* TYPED families: the program's typed operations (arith.h, as the FPGA engine's bytecode computes them) */
enum { T_BIN = 0, T_UN, T_CALL1, T_CALL2, T_MINMAX, T_SEL, T_ROUND, T_FMA };
enum { P_OP = 0, P_LAT, P_IN0, P_NIN, P_OUT0, P_NOUT, P_A, P_B, P_C, P_D, P_E, P_F, P_G, PCOLS };
enum { ST_OK = 0, ST_DEADLOCK = 1, ST_LIMIT = 2, ST_MISALIGNED = 3 };
enum { G_NPTS = 0, G_Z, G_Y, G_X, G_NSTRIPS, G_W, G_LIMIT, G_STALL, NSTATE = 5 };

typedef struct {
    i64 *cap, *head, *cnt, *base, *peak;
    double *val;
    i64 *tag, *rdy;
} Queues;

static int ready(const Queues *q, i64 k, i64 now) { return q->cnt[k] > 0 && q->rdy[q->base[k] + q->head[k]] <= now; }

static int room(const Queues *q, i64 k) { return q->cnt[k] < q->cap[k]; }

static i64 head_tag(const Queues *q, i64 k) { return q->tag[q->base[k] + q->head[k]]; }

static void pop(Queues *q, i64 k, double *v, i64 *t) {
    i64 at = q->base[k] + q->head[k];
    *v = q->val[at];
    *t = q->tag[at];
    q->head[k] = (q->head[k] + 1) % q->cap[k];
    q->cnt[k]--;
}

static void push(Queues *q, i64 k, double v, i64 t, i64 when) {
    i64 at = q->base[k] + (q->head[k] + q->cnt[k]) % q->cap[k];
    q->val[at] = v;
    q->tag[at] = t;
    q->rdy[at] = when;
    q->cnt[k]++;
    if (q->cnt[k] > q->peak[k]) q->peak[k] = q->cnt[k];
}

static int outs_room(const Queues *q, const i64 *outs, const i64 *p) {
    for (i64 j = 0; j < p[P_NOUT]; j++)
        if (!room(q, outs[p[P_OUT0] + j])) return 0;
    return 1;
}

static void emit(Queues *q, const i64 *outs, const i64 *p, double v, i64 t, i64 when) {
    for (i64 j = 0; j < p[P_NOUT]; j++) push(q, outs[p[P_OUT0] + j], v, t, when);
}

static double eval(i64 f, const double *a) {
    switch (f) {
    case F_ADD: return a[0] + a[1];
    case F_SUB: return a[0] - a[1];
    case F_MUL: return a[0] * a[1];
    case F_DIV: return a[0] / a[1];
    case F_MAC: return fma(a[0], a[1], a[2]);
    case F_FMA: return fma(a[0], a[1], a[2]);
    case F_POW: return pow(a[0], a[1]);
    case F_MIN: return fmin(a[0], a[1]);
    case F_MAX: return fmax(a[0], a[1]);
    case F_LT: return a[0] < a[1];
    case F_LE: return a[0] <= a[1];
    case F_GT: return a[0] > a[1];
    case F_GE: return a[0] >= a[1];
    case F_EQ: return a[0] == a[1];
    case F_NE: return a[0] != a[1];
    case F_AND: return a[0] != 0.0 && a[1] != 0.0;
    case F_OR: return a[0] != 0.0 || a[1] != 0.0;
    case F_NEG: return -a[0];
    case F_NOT: return a[0] == 0.0;
    case F_SEL: return a[0] != 0.0 ? a[1] : a[2];
    case F_ROUND: return (double)(float)a[0];
    case F_ATAN2: return atan2(a[0], a[1]);
    case F_HYPOT: return hypot(a[0], a[1]);
    case F_FMOD: return fmod(a[0], a[1]);
    case F_COPYSIGN: return copysign(a[0], a[1]);
    case F_FDIM: return fdim(a[0], a[1]);
    case F_SQRT: return sqrt(a[0]);
    case F_CBRT: return cbrt(a[0]);
    case F_EXP: return exp(a[0]);
    case F_EXP2: return exp2(a[0]);
    case F_EXPM1: return expm1(a[0]);
    case F_LOG: return log(a[0]);
    case F_LOG2: return log2(a[0]);
    case F_LOG10: return log10(a[0]);
    case F_LOG1P: return log1p(a[0]);
    case F_SIN: return sin(a[0]);
    case F_COS: return cos(a[0]);
    case F_TAN: return tan(a[0]);
    case F_ASIN: return asin(a[0]);
    case F_ACOS: return acos(a[0]);
    case F_ATAN: return atan(a[0]);
    case F_SINH: return sinh(a[0]);
    case F_COSH: return cosh(a[0]);
    case F_TANH: return tanh(a[0]);
    case F_ASINH: return asinh(a[0]);
    case F_ACOSH: return acosh(a[0]);
    case F_ATANH: return atanh(a[0]);
    case F_FABS: return fabs(a[0]);
    case F_FLOOR: return floor(a[0]);
    case F_CEIL: return ceil(a[0]);
    case F_TRUNC: return trunc(a[0]);
    case F_RINT: return rint(a[0]);
    case F_ERF: return erf(a[0]);
    case F_ERFC: return erfc(a[0]);
    default: return NAN;
    }
}

/* a typed operation: operands converted to P_E (not a ternary's condition), the result rounded to P_D */
static double typed(const i64 *p, double *a) {
    i64 t = p[P_D], f = p[P_F];
    for (i64 j = 0; j < p[P_C]; j++)
        if (p[P_E] >= 0 && !(p[P_A] == T_SEL && j == 0)) a[j] = round_to(a[j], p[P_E]);
    switch (p[P_A]) {
    case T_BIN: return binop(f, a[0], a[1], t);
    case T_UN: return unary(f, a[0], t);
    case T_CALL1: return round_to(call1(f, a[0]), t);
    case T_CALL2: return round_to(call2(f, a[0], a[1]), t);
    case T_MINMAX: return round_to(minmax(a, 2, (int)f), t);
    case T_SEL: return a[0] != 0.0 ? a[1] : a[2];
    case T_FMA: return round_to(a[0] * a[1] + a[2], t);
    default: return round_to(a[0], t);
    }
}

/* shrink filter: keep a token whose output point (its point less the offset) is in the consumer's box */
static int keep(const i64 *p, i64 tag, const i64 *boxes, const i64 *geo) {
    i64 npts = geo[G_NPTS], Y = geo[G_Y], X = geo[G_X];
    i64 s = tag / npts, idx = tag % npts;
    i64 z = idx / (Y * X) - p[P_B], y = (idx / X) % Y - p[P_C], x = idx % X - p[P_D];
    const i64 *b = boxes + 6 * (p[P_A] + s);
    return b[0] <= z && z < b[1] && b[2] <= y && y < b[3] && b[4] <= x && x < b[5];
}

/* constant-boundary filter: the next output point of its worker, strip by strip (st: s, z, y, x, done) */
static void first_point(i64 *st, const i64 *p, const i64 *boxes, const i64 *geo, i64 s) {
    i64 w = geo[G_W], c = p[P_G];
    for (; s < geo[G_NSTRIPS]; s++) {
        const i64 *b = boxes + 6 * (p[P_A] + s);
        i64 x = b[4] + ((c - b[4]) % w + w) % w;
        if (b[0] < b[1] && b[2] < b[3] && x < b[5]) {
            st[0] = s, st[1] = b[0], st[2] = b[2], st[3] = x, st[4] = 0;
            return;
        }
    }
    st[4] = 1;
}

static void next_point(i64 *st, const i64 *p, const i64 *boxes, const i64 *geo) {
    i64 w = geo[G_W], c = p[P_G];
    const i64 *b = boxes + 6 * (p[P_A] + st[0]);
    st[3] += w;
    if (st[3] < b[5]) return;
    st[3] = b[4] + ((c - b[4]) % w + w) % w;
    if (++st[2] < b[3]) return;
    st[2] = b[2];
    if (++st[1] < b[1]) return;
    first_point(st, p, boxes, geo, st[0] + 1);
}

/* drop the head of queue k when no later point needs it (its tag is below the current want) */
static int behind(Queues *q, i64 k, i64 want, i64 now) {
    double v;
    i64 t;
    if (k < 0 || !ready(q, k, now) || head_tag(q, k) >= want) return 0;
    pop(q, k, &v, &t);
    return 1;
}

/* take the token tagged `want` from queue k and emit it as point o: 1 done, 0 wait, -1 it never comes */
static int take(Queues *q, const i64 *outs, const i64 *p, i64 k, i64 want, i64 o, i64 now) {
    double v;
    i64 t;
    if (!ready(q, k, now)) return 0;
    if (head_tag(q, k) > want) return -1;
    if (head_tag(q, k) < want || !outs_room(q, outs, p)) return 0;
    pop(q, k, &v, &t);
    emit(q, outs, p, v, o, now + p[P_LAT]);
    return 1;
}

static int in_box(const i64 *b, i64 z, i64 y, i64 x) {
    return b[0] <= z && z < b[1] && b[2] <= y && y < b[3] && b[4] <= x && x < b[5];
}

/* constant (mode 1), copy (2) or preserve (3) filter: walks its worker's points; outside the grid the
 * constant, or the centre point's value from the second input; preserve: a point outside the previous
 * layer's region (the ring) from the second input, the readers' */
static int fill(const i64 *p, double c, const i64 *ins, const i64 *outs, Queues *q, i64 *st, const i64 *boxes,
                const i64 *geo, i64 now) {
    i64 npts = geo[G_NPTS], Z = geo[G_Z], Y = geo[G_Y], X = geo[G_X];
    i64 in0 = ins[p[P_IN0]], centre = p[P_F] >= 2 ? ins[p[P_IN0] + 1] : -1;
    double v;
    i64 t;
    if (st[4]) { /* every point served: drop the rest of the streams */
        int f = 0;
        if (ready(q, in0, now)) pop(q, in0, &v, &t), f = 1;
        if (centre >= 0 && ready(q, centre, now)) pop(q, centre, &v, &t), f = 1;
        return f;
    }
    i64 o = st[0] * npts + (st[1] * Y + st[2]) * X + st[3], want = o + p[P_E];
    i64 z = st[1] + p[P_B], y = st[2] + p[P_C], x = st[3] + p[P_D];
    int dropped = behind(q, in0, want, now) | behind(q, centre, p[P_F] == 3 ? want : o, now), got;
    if (p[P_F] == 3) {
        got = take(q, outs, p, in_box(boxes + 6 * (p[P_A] + st[0]), z, y, x) ? in0 : centre, want, o, now);
    } else if (z < 0 || z >= Z || y < 0 || y >= Y || x < 0 || x >= X) {
        if (centre >= 0) {
            got = take(q, outs, p, centre, o, o, now);
        } else if ((got = outs_room(q, outs, p))) {
            emit(q, outs, p, c, o, now + p[P_LAT]);
        }
    } else {
        got = take(q, outs, p, in0, want, o, now);
    }
    if (got < 0) return -1;
    if (got) next_point(st, p, boxes, geo);
    return got | dropped;
}

/* One PE of phase 1; returns 1 when it fired, -1 on misaligned operands. */
static int step(i64 i, const i64 *p, const double *c, const i64 *ins, const i64 *outs, Queues *q, i64 *state,
                const i64 *tags, const i64 *boxes, const i64 *geo, i64 now) {
    double v, a[3];
    i64 t, t0 = -1;
    i64 in0 = p[P_NIN] > 0 ? ins[p[P_IN0]] : -1, when = now + p[P_LAT];
    i64 *st = state + NSTATE * i;
    switch (p[P_OP]) {
    case AGEN:
        if (st[0] >= p[P_B] || !outs_room(q, outs, p)) return 0;
        emit(q, outs, p, 0.0, tags[p[P_A] + st[0]], when);
        st[0]++;
        return 1;
    case LOAD: /* deliver the oldest returned load */
        if (!ready(q, p[P_B], now) || !outs_room(q, outs, p)) return 0;
        pop(q, p[P_B], &v, &t);
        emit(q, outs, p, v, t, now + 1);
        return 1;
    case FILTER:
        if (p[P_F] == 4) { /* ring writer's filter: keep the points outside the output's region */
            if (!ready(q, in0, now)) return 0;
            int k = !keep(p, head_tag(q, in0), boxes, geo);
            if (k && !outs_room(q, outs, p)) return 0;
            pop(q, in0, &v, &t);
            if (k) emit(q, outs, p, v, t, when);
            return 1;
        }
        if (p[P_F]) return fill(p, c[0], ins, outs, q, st, boxes, geo, now);
        if (!ready(q, in0, now)) return 0;
        {
            int k = keep(p, head_tag(q, in0), boxes, geo);
            if (k && !outs_room(q, outs, p)) return 0;
            pop(q, in0, &v, &t);
            if (k) emit(q, outs, p, v, t - p[P_E], when);
        }
        return 1;
    case ARITH:
    case TYPED: {
        i64 n = 0;
        for (i64 j = 0; j < p[P_NIN]; j++)
            if (!ready(q, ins[p[P_IN0] + j], now)) return 0;
        if (!outs_room(q, outs, p)) return 0;
        for (i64 j = 0; j < p[P_C]; j++) {
            if (p[P_B] >> j & 1) {
                a[j] = c[j];
            } else {
                pop(q, ins[p[P_IN0] + n++], &a[j], &t);
                if (t0 >= 0 && t != t0) return -1;
                t0 = t;
            }
        }
        if (p[P_OP] == ARITH) {
            v = eval(p[P_A], a);
            v = round_to(v, p[P_D]); /* the linear stencil's float type (arith.h) */
        } else {
            v = typed(p, a);
        }
        emit(q, outs, p, v, t0, when);
        return 1;
    }
    case COUNT: /* st: stores counted, raised */
        if (st[0] == p[P_A]) {
            if (st[1] || !outs_room(q, outs, p)) return 0;
            emit(q, outs, p, 0.0, 0, when);
            st[1] = 1;
            return 1;
        }
        if (!ready(q, in0, now)) return 0;
        pop(q, in0, &v, &t);
        st[0]++;
        return 1;
    case DONE:
        for (i64 j = 0; j < p[P_NIN]; j++)
            if (!ready(q, ins[p[P_IN0] + j], now)) return 0;
        for (i64 j = 0; j < p[P_NIN]; j++) pop(q, ins[p[P_IN0] + j], &v, &t);
        st[0] = 1;
        return 1;
    default: /* STORE: phase 2 */
        return 0;
    }
}

/* The loads' cache (CGRA §VIII: the paper's simulator models the caches the memory PEs reach; sizes are the
 * device's): sets x ways lines of line_bytes bytes, LRU, shared by the LOADs; stores write through around it.
 * A LOAD's byte address is P_F (its field's first byte, the inputs one after another) + index x P_G bytes.
 * A load that misses holds its LOAD's port for `fill` more cycles (the line's beats arriving over the port)
 * before that LOAD issues again; a load to a line already held or on its way hits. sets = 0: no cache. */
typedef struct {
    i64 sets, ways, line_bytes, fill;
    i64 *tag, *used; /* per set x way: the line held (-1 none), its last use */
    i64 misses;
} Cache;

/* 1 when the line of byte `addr` missed (it is now held), 0 on a hit. */
static int cache_miss(Cache *c, i64 addr, i64 now) {
    i64 line = addr / c->line_bytes, set = line % c->sets, victim = 0;
    i64 *tg = c->tag + set * c->ways, *us = c->used + set * c->ways;
    for (i64 w = 0; w < c->ways; w++) {
        if (tg[w] == line) {
            us[w] = now;
            return 0;
        }
        if (us[w] < us[victim]) victim = w;
    }
    tg[victim] = line;
    us[victim] = now;
    c->misses++;
    return 1;
}

/* Phase 2 for one memory PE (`st`: its state; a LOAD's st[0] is the cycle its port is free again);
 * returns 1 when it used the memory. */
static int memory(const i64 *p, const i64 *ins, const i64 *outs, Queues *q, const double *mem_in,
                  double *mem_out, const i64 *geo, double *credit, double elem, i64 now, Cache *c, i64 *st) {
    double v;
    i64 t, in0 = ins[p[P_IN0]], npts = geo[G_NPTS], Y = geo[G_Y], X = geo[G_X];
    if (*credit < elem || !ready(q, in0, now)) return 0;
    if (p[P_OP] == STORE) {
        if (!outs_room(q, outs, p)) return 0;
        pop(q, in0, &v, &t);
        mem_out[p[P_A] + t % npts] = v;
        emit(q, outs, p, 0.0, t, now + p[P_LAT]);
    } else { /* LOAD issue into its response queue; the address projects the point on the field's axes */
        if (!room(q, p[P_B]) || now < st[0]) return 0;
        pop(q, in0, &v, &t);
        i64 idx = t % npts, z = idx / (Y * X), y = (idx / X) % Y, x = idx % X;
        i64 at = z * p[P_C] + y * p[P_D] + x * p[P_E];
        if (c->sets && cache_miss(c, p[P_F] + at * p[P_G], now)) st[0] = now + 1 + c->fill;
        push(q, p[P_B], mem_in[p[P_A] + at], t, now + p[P_LAT]);
    }
    *credit -= elem;
    return 1;
}

/* out: status, cycles, firings, memory operations, failing PE */
void run(const i64 *pe, const double *consts, i64 npe, const i64 *order, const i64 *ins, const i64 *outs,
         const i64 *mem_pes, i64 nstore, i64 nload, i64 *qcap, i64 *qhead, i64 *qcnt, i64 *qbase, i64 *qpeak,
         double *qval, i64 *qtag, i64 *qrdy, const i64 *tags, const double *mem_in, double *mem_out,
         const i64 *boxes, const i64 *geo, double bytes_per_cycle, const double *elem_bytes, i64 *state,
         i64 *fires, i64 *out, const i64 *cache_cfg, i64 *cache_tag, i64 *cache_used) {
    Queues q = {qcap, qhead, qcnt, qbase, qpeak, qval, qtag, qrdy};
    Cache c = {cache_cfg[0], cache_cfg[1], cache_cfg[2], cache_cfg[3], cache_tag, cache_used, 0};
    double credit = 0.0;
    i64 now = 0, idle = 0, firings = 0, moved = 0, done_pe = -1;
    int status = ST_LIMIT;
    for (i64 j = 0; j < npe; j++) {
        const i64 *p = pe + order[j] * PCOLS;
        if (p[P_OP] == DONE) done_pe = order[j];
        if (p[P_OP] == FILTER && p[P_F] && p[P_F] < 4) first_point(state + NSTATE * order[j], p, boxes, geo, 0);
    }
    for (now = 0; now < geo[G_LIMIT]; now++) {
        i64 fired = 0;
        credit += bytes_per_cycle;
        if (credit > 4 * bytes_per_cycle) credit = 4 * bytes_per_cycle;
        for (i64 j = 0; j < npe; j++) {
            i64 i = order[j];
            int f = step(i, pe + i * PCOLS, consts + 3 * i, ins, outs, &q, state, tags, boxes, geo, now);
            if (f < 0) {
                status = ST_MISALIGNED;
                out[4] = i;
                goto end;
            }
            fires[i] += f;
            fired += f;
        }
        for (i64 j = 0; j < nstore + nload; j++) {
            i64 i = j < nstore ? mem_pes[j] : mem_pes[nstore + (j - nstore + now) % nload];
            int f = memory(pe + i * PCOLS, ins, outs, &q, mem_in, mem_out, geo, &credit, elem_bytes[i], now, &c,
                           state + NSTATE * i);
            fires[i] += f;
            fired += f;
            moved += f;
        }
        firings += fired;
        if (done_pe >= 0 && state[NSTATE * done_pe]) {
            status = ST_OK;
            now++;
            break;
        }
        idle = fired ? 0 : idle + 1;
        if (idle > geo[G_STALL]) {
            status = ST_DEADLOCK;
            now -= idle;
            break;
        }
    }
end:
    out[0] = status;
    out[1] = now;
    out[2] = firings;
    out[3] = moved;
    out[5] = c.misses;
}
