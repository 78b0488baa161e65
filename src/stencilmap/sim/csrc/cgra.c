/* The triggered-instruction CGRA simulator (sim/cgra.py packs the design; CGRA paper §II-A, §III).
 *
 * Every cycle, in three phases:
 *   1. PEs, consumers before producers: a PE fires when the heads of its input queues are ready and every
 *      queue it feeds has room; its result enters them `lat` cycles later (the entries in flight count
 *      against the queue's capacity). A LOAD delivers the oldest load that has returned.
 *   2. memory: STOREs, then LOADs issuing (rotating, for fairness), while the cycle's bytes last: the
 *      device's bandwidth per cycle is a credit shared by loads and stores.
 *   3. DONE fired: stop; nothing fired for `stall` cycles: a deadlock.
 * A token is (value, tag); tag = strip · NPTS + flat index of the grid point it stands for. MACs check
 * that their operands belong to the same output point (a misrouted mapping is an error, not a result).
 */
#include <math.h>
#include <stdint.h>

typedef int64_t i64;

enum { AGEN = 0, LOAD, FILTER, MUL, MAC, ADD, STORE, COUNT, DONE };
enum { P_OP = 0, P_LAT, P_IN0, P_NIN, P_OUT0, P_NOUT, P_A, P_B, P_C, P_D, PCOLS };
enum { ST_OK = 0, ST_DEADLOCK = 1, ST_LIMIT = 2, ST_MISALIGNED = 3 };

typedef struct {
    i64 *cap, *head, *cnt, *base, *peak;
    double *val;
    i64 *tag, *rdy;
} Queues;

static int ready(const Queues *q, i64 k, i64 now) { return q->cnt[k] > 0 && q->rdy[q->base[k] + q->head[k]] <= now; }

static int room(const Queues *q, i64 k) { return q->cnt[k] < q->cap[k]; }

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

static double rounded(double v, int r32) { return r32 ? (double)(float)v : v; }

/* geo: NPTS, Z, Y, X, nstrips, r32, max_cycles, stall, elem_bytes */
static int keep(const i64 *p, i64 tag, const i64 *boxes, const i64 *geo) {
    i64 npts = geo[0], Y = geo[2], X = geo[3], ns = geo[4];
    i64 s = tag / npts, idx = tag % npts;
    i64 z = idx / (Y * X) - p[P_B], y = (idx / X) % Y - p[P_C], x = idx % X - p[P_D];
    const i64 *b = boxes + 6 * (p[P_A] * ns + s);
    return b[0] <= z && z < b[1] && b[2] <= y && y < b[3] && b[4] <= x && x < b[5];
}

/* One PE of phase 1; returns 1 when it fired, -1 on a misaligned MAC. */
static int step(i64 i, const i64 *p, double c, const i64 *ins, const i64 *outs, Queues *q, i64 *state,
                const i64 *tags, const i64 *boxes, const i64 *geo, i64 now) {
    double v, a;
    i64 t, ta;
    int r32 = (int)geo[5];
    i64 in0 = p[P_NIN] > 0 ? ins[p[P_IN0]] : -1, when = now + p[P_LAT];
    switch (p[P_OP]) {
    case AGEN:
        if (state[2 * i] >= p[P_B] || !outs_room(q, outs, p)) return 0;
        emit(q, outs, p, 0.0, tags[p[P_A] + state[2 * i]], when);
        state[2 * i]++;
        return 1;
    case LOAD: /* deliver the oldest returned load */
        if (!ready(q, p[P_B], now) || !outs_room(q, outs, p)) return 0;
        pop(q, p[P_B], &v, &t);
        emit(q, outs, p, v, t, now + 1);
        return 1;
    case FILTER:
        if (!ready(q, in0, now)) return 0;
        {
            i64 at = q->base[in0] + q->head[in0];
            int k = keep(p, q->tag[at], boxes, geo);
            if (k && !outs_room(q, outs, p)) return 0;
            pop(q, in0, &v, &t);
            if (k) emit(q, outs, p, v, t, when);
        }
        return 1;
    case MUL:
        if (!ready(q, in0, now) || !outs_room(q, outs, p)) return 0;
        pop(q, in0, &v, &t);
        emit(q, outs, p, rounded(v * c, r32), t - p[P_A], when);
        return 1;
    case MAC: {
        i64 xin = ins[p[P_IN0] + 1];
        if (!ready(q, in0, now) || !ready(q, xin, now) || !outs_room(q, outs, p)) return 0;
        pop(q, in0, &a, &ta);
        pop(q, xin, &v, &t);
        if (t - p[P_A] != ta) return -1;
        emit(q, outs, p, rounded(fma(v, c, a), r32), ta, when);
        return 1;
    }
    case ADD:
        if (!ready(q, in0, now) || !outs_room(q, outs, p)) return 0;
        pop(q, in0, &v, &t);
        emit(q, outs, p, rounded(v + c, r32), t, when);
        return 1;
    case COUNT:
        if (!ready(q, in0, now)) return 0;
        if (state[2 * i] + 1 == p[P_A] && !outs_room(q, outs, p)) return 0;
        pop(q, in0, &v, &t);
        if (++state[2 * i] == p[P_A]) emit(q, outs, p, 0.0, 0, when);
        return 1;
    case DONE:
        for (i64 j = 0; j < p[P_NIN]; j++)
            if (!ready(q, ins[p[P_IN0] + j], now)) return 0;
        for (i64 j = 0; j < p[P_NIN]; j++) pop(q, ins[p[P_IN0] + j], &v, &t);
        state[2 * i] = 1;
        return 1;
    default: /* STORE: phase 2 */
        return 0;
    }
}

/* Phase 2 for one memory PE; returns 1 when it used the memory. */
static int memory(const i64 *p, const i64 *ins, const i64 *outs, Queues *q, const double *mem_in,
                  double *mem_out, const i64 *geo, double *credit, double elem, i64 now, i64 *moved) {
    double v;
    i64 t, in0 = ins[p[P_IN0]];
    if (*credit < elem || !ready(q, in0, now)) return 0;
    if (p[P_OP] == STORE) {
        if (!outs_room(q, outs, p)) return 0;
        pop(q, in0, &v, &t);
        mem_out[p[P_A] + t % geo[0]] = v;
        emit(q, outs, p, 0.0, t, now + p[P_LAT]);
    } else { /* LOAD issue into its response queue */
        if (!room(q, p[P_B])) return 0;
        pop(q, in0, &v, &t);
        push(q, p[P_B], mem_in[p[P_A] + t % geo[0]], t, now + p[P_LAT]);
    }
    *credit -= elem;
    (*moved)++;
    return 1;
}

/* out: status, cycles, firings, loads + stores, failing PE */
void run(const i64 *pe, const double *consts, i64 npe, const i64 *order, const i64 *ins, const i64 *outs,
         const i64 *mem_pes, i64 nstore, i64 nload, i64 *qcap, i64 *qhead, i64 *qcnt, i64 *qbase, i64 *qpeak, double *qval,
         i64 *qtag, i64 *qrdy, const i64 *tags, const double *mem_in, double *mem_out, const i64 *boxes,
         const i64 *geo, double bytes_per_cycle, i64 *state, i64 *fires, i64 *out) {
    Queues q = {qcap, qhead, qcnt, qbase, qpeak, qval, qtag, qrdy};
    double credit = 0.0, elem = (double)geo[8];
    i64 now = 0, idle = 0, firings = 0, moved = 0, done_pe = -1;
    int status = ST_LIMIT;
    for (i64 j = 0; j < npe; j++)
        if (pe[order[j] * PCOLS + P_OP] == DONE) done_pe = order[j];
    for (now = 0; now < geo[6]; now++) {
        i64 fired = 0;
        credit += bytes_per_cycle;
        if (credit > 4 * bytes_per_cycle) credit = 4 * bytes_per_cycle;
        for (i64 j = 0; j < npe; j++) {
            i64 i = order[j];
            int f = step(i, pe + i * PCOLS, consts[i], ins, outs, &q, state, tags, boxes, geo, now);
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
            int f = memory(pe + i * PCOLS, ins, outs, &q, mem_in, mem_out, geo, &credit, elem, now, &moved);
            fires[i] += f;
            fired += f;
        }
        firings += fired;
        if (done_pe >= 0 && state[2 * done_pe]) {
            status = ST_OK;
            now++;
            break;
        }
        idle = fired ? 0 : idle + 1;
        if (idle > geo[7]) {
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
}
