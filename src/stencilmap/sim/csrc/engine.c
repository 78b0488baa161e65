/* stencilmap's cycle-level engine, in C (compiled by engine.py with the system compiler, cached).
 *
 * Everything the engine touches lives in two flat arrays, I (int64) and F (double), packed by layout.py;
 * the constants naming their regions and columns (H_*, M_*, C_*, K_*, activity codes) come from
 * memory.py and are prepended by engine.py, so Python and C share one definition.
 *
 * Each cycle runs in named phases:
 *  1. refill   - every DRAM bank gains its bandwidth credit for the cycle;
 *  2. evaluate - every module decides from the channel state at the *start* of the cycle whether it
 *                fires (inputs hold a beat, outputs have room, bandwidth is available) and does so;
 *  3. commit   - implicit: a channel stamps the cycle of its last push and pop, and the evaluate phase
 *                discounts both (a token pushed this cycle is not yet visible to its consumer, a slot
 *                freed this cycle not yet to its producer). That is registered-FIFO timing: every
 *                module's decision is independent of the order in which modules are evaluated, so
 *                phase 2 runs the modules kind by kind (a tight loop per kind); memory ports alone keep
 *                the design's order, since they share a bank's credit in that order. (A channel's peak
 *                does see the order: a push before the same cycle's pop counts one beat more. The
 *                order is fixed, and reuse chains keep it.)
 *
 * SODA reuse chains (taps linked by ``next`` through FIFOs) run as one ring buffer each while steady
 * (see "reuse chains" below; I[H_FUSE] turns that on), with results identical to module by module.
 * A PE group whose every input comes from such steady chains then reads their rings directly (the
 * bypass: the channels between them are written back only on leaving it, or in a traced cycle).
 *
 * Adding a module kind: a K_* constant in memory.py, its lowering in model.py, a function here, and
 * one line in the kind table of phase 2.
 */
#include <stdlib.h>
#include <string.h>
#include "arith.h"

typedef uint64_t u64;

/* A PE's expression: straight-line code engine.py generated for this design's stencils (evaluator
 * M_EV of the PE, its constants at k0), or NULL to interpret the bytecode. */
typedef double (*Evaluator)(i64 id, const double *vals, const double *consts, double *temps);

/* The bases of I's and F's regions, read once per call: the compiler then keeps them in registers
 * instead of reloading them after every store into I. */
typedef struct {
    i64 *I;
    double *F;
    i64 mod, ch, list, pipe, dest, code, pinfo, store, mem, scr, stack, temps, stream, out, cnst, pval,
        modf, bw, outx;
    Evaluator ev;
    i64 **row;         /* the channel row of each entry of the input and output lists */
    i64 **rin, **rout; /* each module's first input and output channel row (NULL: none) */
    const char *unit;  /* whether every channel of a module (a tap's next included) is one value wide */
    struct Group **byp; /* per PE group leader: its bypass state when steady chains feed it directly */
    const i64 *cons;    /* each channel's consumer module (-1: none) */
} Ctx;

#define MP(m, col) x->I[x->mod + (m) * MCOLS + (col)] /* module table: parameters and state */
#define CH(c, col) x->I[x->ch + (c) * CCOLS + (col)]  /* channel table */
#define LS(i) x->I[x->list + (i)]                     /* CSR lists: input, output, group channels */
#define LR(i) x->row[i]                               /* the channel row of list entry i */
#define FV x->F

/* ------------------------------------------------------------------------------------------ channels */

/* Channel rows by pointer (one address computation per channel and call, not one per column). */
#define CHR(c) (x->I + x->ch + (c) * CCOLS)

INLINE int avail_r(const i64 *r, i64 now) { return r[C_COUNT] - (r[C_PUSH] == now) > 0; }

INLINE int room_r(const i64 *r, i64 now) { return r[C_COUNT] + (r[C_POP] == now) < r[C_CAP]; }

/* Push one beat (width values from F[src:]) into the channel of row r. */
INLINE void push_r(const Ctx *x, i64 *r, i64 now, i64 src) {
    i64 cap = r[C_CAP], w = r[C_WIDTH], n = r[C_COUNT];
    i64 slot = r[C_HEAD] + n;
    if (slot >= cap) slot -= cap;
    double *at = FV + r[C_BASE] + slot * w;
    const double *from = FV + src;
    if (w == 1) at[0] = from[0];
    else for (i64 i = 0; i < w; i++) at[i] = from[i];
    n += 1;
    r[C_COUNT] = n;
    r[C_PUSH] = now;
    if (n > r[C_PEAK]) r[C_PEAK] = n;
}

/* Pop one beat of the channel of row r into F[dst:]; returns its width. */
INLINE i64 pop_r(const Ctx *x, i64 *r, i64 now, i64 dst) {
    i64 cap = r[C_CAP], w = r[C_WIDTH], h = r[C_HEAD];
    const double *at = FV + r[C_BASE] + h * w;
    double *to = FV + dst;
    if (w == 1) to[0] = at[0];
    else for (i64 i = 0; i < w; i++) to[i] = at[i];
    h += 1;
    r[C_HEAD] = h == cap ? 0 : h;
    r[C_COUNT] -= 1;
    r[C_POP] = now;
    return w;
}

/* Width-1 channels: the value travels in a register instead of through the scratch area. */
INLINE void push1_r(const Ctx *x, i64 *r, i64 now, double value) {
    i64 cap = r[C_CAP], n = r[C_COUNT];
    i64 slot = r[C_HEAD] + n;
    if (slot >= cap) slot -= cap;
    FV[r[C_BASE] + slot] = value;
    n += 1;
    r[C_COUNT] = n;
    r[C_PUSH] = now;
    if (n > r[C_PEAK]) r[C_PEAK] = n;
}

INLINE double pop1_r(const Ctx *x, i64 *r, i64 now) {
    i64 cap = r[C_CAP], h = r[C_HEAD];
    double value = FV[r[C_BASE] + h];
    h += 1;
    r[C_HEAD] = h == cap ? 0 : h;
    r[C_COUNT] -= 1;
    r[C_POP] = now;
    return value;
}

INLINE int avail(const Ctx *x, i64 c, i64 now) { return avail_r(CHR(c), now); }

INLINE int room(const Ctx *x, i64 c, i64 now) { return room_r(CHR(c), now); }

INLINE void push(const Ctx *x, i64 c, i64 now, i64 src) { push_r(x, CHR(c), now, src); }

INLINE i64 pop(const Ctx *x, i64 c, i64 now, i64 dst) { return pop_r(x, CHR(c), now, dst); }

INLINE int outs_room(const Ctx *x, i64 m, i64 now) {
    const i64 *M = x->I + x->mod + m * MCOLS;
    for (i64 i = M[M_OUT0], e = M[M_OUT1]; i < e; i++)
        if (!room_r(LR(i), now)) return 0;
    return 1;
}

INLINE int ins_avail(const Ctx *x, i64 m, i64 now) {
    const i64 *M = x->I + x->mod + m * MCOLS;
    for (i64 i = M[M_IN0], e = M[M_IN1]; i < e; i++)
        if (!avail_r(LR(i), now)) return 0;
    return 1;
}

INLINE void push_all(const Ctx *x, i64 m, i64 now, i64 src) {
    const i64 *M = x->I + x->mod + m * MCOLS;
    for (i64 i = M[M_OUT0], e = M[M_OUT1]; i < e; i++) push_r(x, LR(i), now, src);
}

/* ------------------------------------------------------------------------------------ the stack machine */

/* Run bytecode instructions [c0, c1) with port values at F[vals:]; returns the stencil's value. */
static double evaluate(const Ctx *x, i64 c0, i64 c1, i64 k0, i64 vals) {
    const i64 *I = x->I;
    double *F = x->F;
    i64 temps = x->temps, consts = x->cnst + k0;
    double *s = F + x->stack;
    i64 sp = 0;
    for (i64 i = c0; i < c1; i++) {
        i64 at = x->code + 3 * i;
        i64 op = I[at], arg = I[at + 1], t = I[at + 2];
        switch (op) {
        case SM_OP_LOAD_PORT: s[sp++] = F[vals + arg]; break;
        case SM_OP_LOAD_CONST: s[sp++] = F[consts + arg]; break;
        case SM_OP_LOAD_TEMP: s[sp++] = F[temps + arg]; break;
        case SM_OP_STORE_TEMP: F[temps + arg] = s[--sp]; break;
        case SM_OP_BINARY: sp -= 1; s[sp - 1] = binop(arg, s[sp - 1], s[sp], t); break;
        case SM_OP_UNARY: s[sp - 1] = unary(arg, s[sp - 1], t); break;
        case SM_OP_CALL:
            if (arg >= SM_FN_MIN_NAN * SM_FN_NARY) { /* n-ary min / max */
                i64 n = arg % SM_FN_NARY;
                double acc = minmax(s + sp - n, n, arg / SM_FN_NARY == SM_FN_MAX_NAN);
                sp -= n - 1;
                s[sp - 1] = round_to(acc, t);
            } else if (arg == SM_FN_FMA_UNFUSED) {
                sp -= 2;
                s[sp - 1] = round_to(s[sp - 1] * s[sp] + s[sp + 1], t);
            } else if (arg >= SM_FN_BINARY) {
                sp -= 1;
                s[sp - 1] = round_to(call2(arg, s[sp - 1], s[sp]), t);
            } else {
                s[sp - 1] = round_to(call1(arg, s[sp - 1]), t);
            }
            break;
        case SM_OP_SELECT: sp -= 2; s[sp - 1] = s[sp - 1] != 0.0 ? s[sp] : s[sp + 1]; break;
        default: s[sp - 1] = round_to(s[sp - 1], t); /* SM_OP_ROUND */
        }
    }
    return s[0];
}

/* ------------------------------------------------------------------------------------------- modules */

INLINE int reader(const Ctx *x, i64 m, i64 now) {
    i64 pos = MP(m, M_S), total = MP(m, M_P + 1), beat = MP(m, M_P + 2), bank = MP(m, M_P + 3);
    if (pos >= total) return FINISHED;
    if (!outs_room(x, m, now)) return BLOCKED;
    double *F = x->F;
    i64 modf = x->modf + 2 * m;
    double cost = F[modf] * beat;
    if (bank >= 0) {
        i64 bw = x->bw + BWCOLS * bank;
        if (F[bw] - cost < F[bw + 3]) return WAIT_BW; /* writers refused last cycle go first */
        F[bw] -= cost;
    }
    F[modf + 1] += cost;
    i64 src = x->stream + MP(m, M_P) + pos;
    for (i64 i = MP(m, M_OUT0), e = MP(m, M_OUT1); i < e; i++) {
        i64 c = LS(i);
        push(x, c, now, src);
        src += CH(c, C_WIDTH);
    }
    MP(m, M_S) = pos + beat;
    return BUSY;
}

INLINE int writer(const Ctx *x, i64 m, i64 now) {
    i64 pos = MP(m, M_S), total = MP(m, M_P + 1), beat = MP(m, M_P + 2), bank = MP(m, M_P + 3);
    if (pos >= total) return FINISHED;
    if (!ins_avail(x, m, now)) return STARVED;
    const i64 *dest = x->I + x->dest + MP(m, M_P) + pos;
    i64 stored = 0;
    for (i64 i = 0; i < beat; i++) stored += dest[i] >= 0;
    double *F = x->F;
    i64 modf = x->modf + 2 * m;
    double cost = F[modf] * (double)stored;
    if (bank >= 0) {
        i64 bw = x->bw + BWCOLS * bank;
        if (F[bw] < cost) {
            F[bw + 4] += cost; /* claim this cycle's credit ahead of the readers next cycle */
            return WAIT_BW;
        }
        F[bw] -= cost;
    }
    F[modf + 1] += cost;
    i64 o = x->scr;
    for (i64 i = MP(m, M_IN0), e = MP(m, M_IN1); i < e; i++) o += pop_r(x, LR(i), now, o);
    for (i64 i = 0; i < beat; i++)
        if (dest[i] >= 0) F[x->out + dest[i]] = F[x->scr + i];
    MP(m, M_S) = pos + beat;
    return BUSY;
}

INLINE int bcast(const Ctx *x, i64 m, i64 now) {
    i64 c_in = LS(MP(m, M_IN0));
    if (!avail(x, c_in, now)) return STARVED;
    if (!outs_room(x, m, now)) return BLOCKED;
    pop(x, c_in, now, x->scr);
    push_all(x, m, now, x->scr);
    return BUSY;
}

/* A FIFO of depth beats with first-word fall-through: an element arriving at an empty FIFO leaves in
 * the same cycle, so a segment of d beats delays by d cycles as the shift register does. */
INLINE int fifo(const Ctx *x, i64 m, i64 now) {
    i64 *M = x->I + x->mod + m * MCOLS;
    i64 depth = M[M_P], w = M[M_P + 1];
    i64 n = M[M_S], h = M[M_S + 1];
    i64 *in = x->rin[m], *out = x->rout[m];
    i64 mem = x->mem + M[M_MEMB];
    int can_in = avail_r(in, now), can_out = room_r(out, now);
    if (n == 0) {
        if (!can_in) return STARVED;
        if (can_out) { /* fall through */
            pop_r(x, in, now, x->scr);
            push_r(x, out, now, x->scr);
            return BUSY;
        }
        pop_r(x, in, now, mem + h * w);
        M[M_S] = 1;
        return BUSY;
    }
    int fired = 0;
    if (can_out) {
        push_r(x, out, now, mem + h * w);
        h += 1;
        if (h == depth) h = 0;
        n -= 1;
        fired = 1;
    }
    if (n < depth && can_in) { /* a slot freed this cycle is reusable (SRL FIFO) */
        i64 slot = h + n;
        if (slot >= depth) slot -= depth;
        pop_r(x, in, now, mem + slot * w);
        n += 1;
        fired = 1;
    }
    M[M_S] = n;
    M[M_S + 1] = h;
    return fired ? BUSY : BLOCKED;
}

/* A SODA forwarding tap at chain offset x: passes every element of its lane down the chain (next) and
 * sends to the PEs, at PE firing n, element n + s of the lane (s = (x - r)/k; placeholders outside the
 * tile). */
INLINE int tap(const Ctx *x, i64 m, i64 now) {
    i64 *M = x->I + x->mod + m * MCOLS;
    i64 s = M[M_P], v = M[M_P + 1];
    i64 recv = M[M_S], sent = M[M_S + 1];
    if (recv >= v && sent >= v) {
        if (M[M_S + 2] + 1 >= M[M_P + 4]) return FINISHED;
        M[M_S + 2] += 1;
        recv = 0;
        sent = 0;
        M[M_S] = 0;
        M[M_S + 1] = 0;
    }
    i64 want = sent + s; /* the lane element the PEs take next from this tap */
    i64 scr = x->scr;
    int blocked = 0;
    if (sent < v && (want < 0 || (want >= v && recv >= v))) {
        /* a placeholder (before the lane's first element or after its last) needs no input */
        if (outs_room(x, m, now)) {
            x->F[scr] = 0.0;
            push_all(x, m, now, scr);
            M[M_S + 1] = sent + 1;
            return BUSY;
        }
        blocked = 1;
    }
    if (recv >= v) return blocked ? BLOCKED : STARVED;
    int emit = sent < v && want == recv;
    if (emit && blocked) return BLOCKED;
    if (!emit && want < recv && recv <= v - 1 + s)
        return blocked ? BLOCKED : IDLE; /* the PEs still need this element: keep it until they do */
    i64 *in = x->rin[m];
    if (!avail_r(in, now)) return blocked ? BLOCKED : STARVED;
    i64 *next = x->rout[m]; /* a tap's row: its ``next`` channel, NULL at the chain's end */
    if (next && !room_r(next, now)) return BLOCKED;
    if (emit && !outs_room(x, m, now)) return BLOCKED;
    if (x->unit[m]) {
        double value = pop1_r(x, in, now);
        if (next) push1_r(x, next, now, value);
        if (emit)
            for (i64 i = M[M_OUT0], e = M[M_OUT1]; i < e; i++) push1_r(x, LR(i), now, value);
    } else {
        pop_r(x, in, now, scr);
        if (next) push_r(x, next, now, scr);
        if (emit) push_all(x, m, now, scr);
    }
    if (emit) M[M_S + 1] = sent + 1;
    M[M_S] = recv + 1;
    return BUSY;
}

/* A window buffer (StencilFlow internal buffer, PCM shift register): output o carries, at firing n,
 * elements n*P + x_o + [0, w_o) of the stream; it stores at most size elements, in a ring whose
 * positions of firing n*P and of the next input are kept in M_T, M_T + 1 (no division per element). */
INLINE int window(const Ctx *x, i64 m, i64 now) {
    i64 p = MP(m, M_P), v = MP(m, M_P + 1), size = MP(m, M_P + 2), x_min = MP(m, M_P + 3);
    i64 x_hi = MP(m, M_P + 4), per_tile = MP(m, M_P + 5), ring = MP(m, M_P + 6), tiles = MP(m, M_P + 7);
    i64 recv = MP(m, M_S), fired = MP(m, M_S + 1);
    if (fired >= v && recv >= per_tile) {
        if (MP(m, M_S + 2) + 1 >= tiles) return FINISHED;
        MP(m, M_S + 2) += 1;
        recv = 0;
        fired = 0;
        MP(m, M_S) = 0;
        MP(m, M_S + 1) = 0;
        MP(m, M_T) = 0;
        MP(m, M_T + 1) = 0;
    }
    double *F = x->F;
    double *mem = F + x->mem + MP(m, M_MEMB);
    i64 scr = x->scr;
    int act = IDLE;
    if (fired < v) {
        i64 need = fired * p + x_hi;
        if (recv >= (per_tile < need ? per_tile : need)) {
            if (outs_room(x, m, now)) {
                i64 at = MP(m, M_T); /* ring position of element fired * p */
                for (i64 i = MP(m, M_OUT0), e = MP(m, M_OUT1); i < e; i++) {
                    i64 c = LS(i), o = x->I[x->outx + i];
                    i64 first = fired * p + o, w = CH(c, C_WIDTH);
                    i64 r = at + o;
                    while (r < 0) r += ring;
                    while (r >= ring) r -= ring;
                    for (i64 j = 0; j < w; j++) {
                        i64 a = first + j;
                        F[scr + j] = (0 <= a && a < per_tile) ? mem[r] : 0.0;
                        if (++r == ring) r = 0;
                    }
                    push(x, c, now, scr);
                }
                fired += 1;
                MP(m, M_S + 1) = fired;
                at += p;
                while (at >= ring) at -= ring;
                MP(m, M_T) = at;
                act = BUSY;
            } else {
                act = BLOCKED;
            }
        } else {
            act = STARVED;
        }
    }
    if (recv < per_tile) {
        i64 oldest = fired * p + x_min; /* what a firing this cycle consumed is free again */
        if (oldest < 0) oldest = 0;
        if (recv + p - oldest <= size && ins_avail(x, m, now)) {
            i64 o = scr;
            for (i64 i = MP(m, M_IN0), e = MP(m, M_IN1); i < e; i++) o += pop_r(x, LR(i), now, o);
            i64 r = MP(m, M_T + 1); /* ring position of element recv */
            for (i64 j = 0; j < p; j++) {
                mem[r] = F[scr + j];
                if (++r == ring) r = 0;
            }
            MP(m, M_T + 1) = r;
            MP(m, M_S) = recv + p;
            act = BUSY;
        }
    }
    return act;
}

typedef struct {
    i64 *ch;  /* an internal channel's row, or NULL for a FIFO's memory */
    i64 mod;  /* the FIFO, or the channel's producer */
    int push_first; /* a channel whose producer is evaluated before its consumer: it holds one beat more
                     * than its count between the two in a steady cycle (its peak) */
} Store;

typedef struct Chain {
    i64 n_mod, n_st, n_tap, n_emit;
    i64 *mods;       /* the chain's modules, from the head down */
    i64 *order;      /* the same in evaluation order: FIFOs, then taps, each in design order */
    Store *st;       /* internal storage, from the head down */
    i64 *tap;        /* the taps, from the head down */
    i64 *tap_st;     /* storages above each tap */
    i64 *em_d;       /* steady: the beats stored above each emitting tap */
    i64 *em_n;       /* steady: how many PE channels each emitting tap feeds */
    i64 n_out;       /* steady: the emitting taps' PE channels, all together */
    i64 **out;       /* steady: their rows, emitting tap by emitting tap */
    char *emits;     /* steady: whether tap k emits */
    i64 *in;         /* the head's input channel row */
    double *ring;
    u64 mask, r;     /* ring: r counts the elements the head received while steady (from mask + 1) */
    i64 t, tmax;     /* steady cycles so far, and how many the taps' phases allow */
    int steady;
    /* bypass: while steady, the chain's PE channels are not materialised: the PE group they all feed reads
     * the ring; each channel holds n0 + delta beats (delta: chain steps less group firings since entry) */
    int byp;
    i64 delta, dmax, minroom, minn0, last_step, next_try;
    u64 r0;
    i64 *n0;   /* per PE channel (c->out order): its beats at entry */
    i64 *dist; /* per PE channel: the beats stored above its tap */
    u64 *poff; /* per PE channel: ring offset n0 + dist */
    struct Group *grp; /* the group it feeds in the bypass */
} Chain;

/* A PE group whose every input channel comes from steady chains in bypass: port j of the group (lane by
 * lane) pops, at the group's firing f since entry, ring[j][(base[j] + f) & mask[j]]. */
typedef struct Group {
    int on;
    i64 n_c, fires, last_fire, ports, total; /* total: the group's firings in bypasses already left */
    Chain **cs;
    const double **ring;
    u64 *mask, *base;
} Group;

/* Send the oldest result on when it has matured and the output has room (II = 1 pipeline). */
INLINE int pe_retire(const Ctx *x, i64 m, i64 now) {
    i64 lat = MP(m, M_P + 5), w = MP(m, M_P + 7);
    i64 n_pipe = MP(m, M_S + 1), h = MP(m, M_S + 2);
    if (n_pipe == 0 || x->I[x->pipe + MP(m, M_E + 7) + h] > now) return IDLE;
    i64 *out = x->rout[m];
    if (!room_r(out, now)) return BLOCKED;
    if (w == 1 && x->unit[m]) push1_r(x, out, now, x->F[x->mem + MP(m, M_MEMB) + h]);
    else push_r(x, out, now, x->mem + MP(m, M_MEMB) + h * w);
    h += 1;
    MP(m, M_S + 2) = h == lat ? 0 : h;
    MP(m, M_S + 1) = n_pipe - 1;
    return BUSY;
}

/* IDLE when the PE can fire now, else why not (FINISHED, BLOCKED on a full pipeline, STARVED). */
INLINE int pe_ready(const Ctx *x, i64 m, i64 now, int avail) {
    if (MP(m, M_S) >= MP(m, M_E + 1) * MP(m, M_E + 6)) return FINISHED;
    if (MP(m, M_S + 1) >= MP(m, M_P + 5)) return BLOCKED;
    if (avail < 0 ? !ins_avail(x, m, now) : !avail) return STARVED;
    return IDLE;
}

/* Consume one beat per port, evaluate the stencil for the lane's point(s), enter the pipeline. */
static void pe_fire(const Ctx *x, i64 m, i64 now, const Group *b, i64 o) {
    const i64 *I = x->I;
    double *F = x->F;
    i64 c0 = MP(m, M_P), c1 = MP(m, M_P + 1), k0 = MP(m, M_P + 2), p0 = MP(m, M_P + 3);
    i64 n_ports = MP(m, M_P + 4), lat = MP(m, M_P + 5), lane = MP(m, M_P + 6), w = MP(m, M_P + 7);
    i64 lanes = MP(m, M_E), v = MP(m, M_E + 1), per_tile = MP(m, M_E + 2);
    i64 s0 = MP(m, M_E + 3), s1 = MP(m, M_E + 4), s2 = MP(m, M_E + 5);
    i64 fired = MP(m, M_S), n_pipe = MP(m, M_S + 1), h = MP(m, M_S + 2);
    i64 scr = x->scr;
    i64 in0 = MP(m, M_IN0), in1 = MP(m, M_IN1);
    if (b) { /* fed by chains in bypass: the beats they would have pushed, straight from their rings */
        u64 f = (u64)b->fires;
        for (i64 j = o; j < o + in1 - in0; j++) F[scr + j - o] = b->ring[j][(b->base[j] + f) & b->mask[j]];
    } else if (x->unit[m] && w == 1) {
        for (i64 i = in0; i < in1; i++) F[scr + i - in0] = pop1_r(x, LR(i), now);
    } else {
        for (i64 i = in0; i < in1; i++) {
            i64 j = i - in0;
            i64 got = pop_r(x, LR(i), now, scr + j * w);
            if (got == 1)
                for (i64 e = 1; e < w; e++) F[scr + j * w + e] = F[scr + j * w];
        }
    }
    i64 vals = scr + n_ports * w;
    i64 n_tile = MP(m, M_T); /* fired % v, and its point: kept in M_T.. rather than divided out */
    i64 slot = h + n_pipe;
    if (slot >= lat) slot -= lat;
    i64 out = x->mem + MP(m, M_MEMB) + slot * w;
    const i64 *port = I + x->pinfo + 6 * p0;
    const double *pval = F + x->pval + p0;
    int preserve = MP(m, M_R) == 1;
    i64 addr = n_tile * lanes + lane;
    i64 x0 = MP(m, M_T + 1), x1 = MP(m, M_T + 2), x2 = MP(m, M_T + 3);
    const i64 *in = &MP(m, M_IN); /* every port is in bounds inside this box */
    for (i64 e = 0; e < w; e++, addr++) {
        double result = 0.0;
        if (addr < per_tile) {
            const double *at = F + vals;
            if (w == 1 && in[0] <= x0 && x0 < s0 - in[3] && in[1] <= x1 && x1 < s1 - in[4] && in[2] <= x2 &&
                x2 < s2 - in[5]) {
                at = F + scr; /* the popped beats are the values, in port order */
            } else {
                for (i64 j = 0; j < n_ports; j++) {
                    const i64 *q = port + 6 * j;
                    i64 y0 = x0 + q[0], y1 = x1 + q[1], y2 = x2 + q[2];
                    double value;
                    if (0 <= y0 && y0 < s0 && 0 <= y1 && y1 < s1 && 0 <= y2 && y2 < s2)
                        value = F[scr + j * w + e];
                    else if (q[3] == 0)
                        value = pval[j];
                    else if (q[3] == 1)
                        value = F[scr + q[4] * w + e];
                    else
                        value = 0.0;
                    F[vals + j] = value;
                }
            }
            double *point = F + x->temps; /* temporaries 0-5: the point and the grid (InBounds guards) */
            point[0] = (double)x0, point[1] = (double)x1, point[2] = (double)x2;
            point[3] = (double)s0, point[4] = (double)s1, point[5] = (double)s2;
            result = x->ev ? x->ev(MP(m, M_EV), at, F + x->cnst + k0, F + x->temps)
                           : evaluate(x, c0, c1, k0, at - F);
            if (preserve && !(MP(m, M_R + 2) <= x0 && x0 < s0 - MP(m, M_R + 5) && MP(m, M_R + 3) <= x1 &&
                              x1 < s1 - MP(m, M_R + 6) && MP(m, M_R + 4) <= x2 && x2 < s2 - MP(m, M_R + 7)))
                result = F[scr + MP(m, M_R + 1) * w + e]; /* border: preserve keeps the input value */
        }
        F[out + e] = result;
        /* the next lane element: advance the point (x0, x1, x2) in C order */
        if (++x2 == s2) {
            x2 = 0;
            if (++x1 == s1) {
                x1 = 0;
                ++x0;
            }
        }
    }
    x->I[x->pipe + MP(m, M_E + 7) + slot] = now + lat;
    MP(m, M_S + 1) = n_pipe + 1;
    MP(m, M_S) = fired + 1;
    /* the next firing's point: lanes further in C order, or the lane's first point of the next tile */
    if (++n_tile == v) {
        n_tile = 0;
        x2 = lane % s2, x1 = (lane / s2) % s1, x0 = lane / (s2 * s1);
    } else {
        x0 = MP(m, M_T + 1), x1 = MP(m, M_T + 2), x2 = MP(m, M_T + 3) + lanes;
        while (x2 >= s2) {
            x2 -= s2;
            if (++x1 == s1) {
                x1 = 0;
                ++x0;
            }
        }
    }
    MP(m, M_T) = n_tile;
    MP(m, M_T + 1) = x0;
    MP(m, M_T + 2) = x1;
    MP(m, M_T + 3) = x2;
}

/* A PE group (SODA's k PEs of a stage; one PE elsewhere) works as one: its leader retires every lane's
 * oldest result, then fires all lanes together when all can; other lanes report what the leader did
 * for them. */
INLINE int pe(const Ctx *x, i64 m, i64 now) {
    if (MP(m, M_GROUP) == m) {
        i64 g0 = MP(m, M_GRP0), g1 = MP(m, M_GRP1);
        for (i64 g = g0; g < g1; g++) {
            i64 q = LS(g);
            MP(q, M_ACT) = pe_retire(x, q, now);
        }
        Group *b = x->byp[m];
        int avail = -1;
        if (b && b->on) {
            avail = 1;
            for (i64 k = 0; k < b->n_c; k++) {
                const Chain *c = b->cs[k];
                avail &= c->delta - (c->last_step == now) > -c->minn0;
            }
        } else {
            b = NULL;
        }
        int why = IDLE;
        for (i64 g = g0; g < g1; g++) {
            int r = pe_ready(x, LS(g), now, avail);
            if (r != IDLE) {
                why = r;
                break;
            }
        }
        for (i64 g = g0, o = 0; g < g1; g++) {
            i64 q = LS(g);
            if (why == IDLE) {
                pe_fire(x, q, now, b, o);
                MP(q, M_FIRE) = BUSY;
            } else {
                MP(q, M_FIRE) = why;
            }
            o += MP(q, M_IN1) - MP(q, M_IN0);
        }
        if (b && why == IDLE) {
            b->fires += 1;
            b->last_fire = now;
            for (i64 k = 0; k < b->n_c; k++) b->cs[k]->delta -= 1;
        }
    }
    i64 act = MP(m, M_ACT), f = MP(m, M_FIRE);
    if (f == BUSY || act == BUSY) return BUSY;
    if (act == IDLE) return (int)f;
    return (int)act;
}

/* A network link between two devices (StencilFlow §VI-B): a beat taken at cycle t leaves at t + latency
 * at the earliest, at most cap beats in flight, and a token bucket of num/den beats per cycle (credit
 * capped at one beat) limits the rate. Ready times live in the int64 pipe region at base P+5. */
INLINE int net(const Ctx *x, i64 m, i64 now) {
    i64 cap = MP(m, M_P), w = MP(m, M_P + 1), lat = MP(m, M_P + 2), num = MP(m, M_P + 3);
    i64 den = MP(m, M_P + 4), ready = x->pipe + MP(m, M_P + 5);
    i64 n = MP(m, M_S), h = MP(m, M_S + 1), credit = MP(m, M_S + 2) + num;
    i64 c_in = LS(MP(m, M_IN0)), c_out = LS(MP(m, M_OUT0));
    i64 mem = x->mem + MP(m, M_MEMB);
    if (credit > den) credit = den;
    int fired = 0, waiting = 0;
    if (n > 0) {
        if (x->I[ready + h] > now) {
            waiting = 1;
        } else if (room(x, c_out, now)) {
            push(x, c_out, now, mem + h * w);
            h = h + 1 == cap ? 0 : h + 1;
            n -= 1;
            fired = 1;
        }
    }
    if (n < cap && avail(x, c_in, now)) {
        if (credit >= den) {
            i64 slot = h + n >= cap ? h + n - cap : h + n;
            pop(x, c_in, now, mem + slot * w);
            x->I[ready + slot] = now + lat;
            n += 1;
            credit -= den;
            fired = 1;
        } else {
            waiting = 1;
        }
    }
    MP(m, M_S) = n;
    MP(m, M_S + 1) = h;
    MP(m, M_S + 2) = credit;
    if (fired) return BUSY;
    if (waiting) return WAIT_BW;
    return n == 0 ? STARVED : BLOCKED;
}

/* ------------------------------------------------------------------------------------- reuse chains */

/* A SODA reuse chain: taps linked by their ``next`` channels, through FIFOs, from a head tap (fed by a
 * reader or a PE) to a tap without ``next``. Each cycle every module of the chain is evaluated as above,
 * except while the chain is *steady*: every internal channel holds 1..cap-1 beats and every tap is in
 * a phase where it fires each cycle (emitting to the PEs as it passes elements on, or passing elements
 * on ahead of the PEs). Then, as long as the head's input holds a beat and the emitting taps' PE
 * channels have room, every module of the chain fires, every internal channel and FIFO keeps its count
 * (one beat in, one out) and the chain is a delay line: it runs as one ring buffer of the elements the
 * head received, tap k sending the element D_k behind the newest, D_k being the beats stored between the
 * head and tap k. Internal channels and FIFOs are written back from the ring, and the taps' counters and
 * the modules' busy counts advanced, when the chain leaves that state (or the call ends): every count,
 * peak, statistic and trace entry is the one module-by-module evaluation gives. */

/* Follow the chain from tap h: its modules and storages (into mods, st), or -1 when the links are not
 * a plain chain of one-value-wide taps and FIFOs. */
static i64 chain_walk(const Ctx *x, const i64 *consumer, i64 n_mod, i64 h, i64 *mods, Store *st, i64 *n_st) {
    i64 n = 0, ns = 0, cur = h;
    if (!x->unit[h] || MP(h, M_IN1) - MP(h, M_IN0) != 1) return -1;
    mods[n++] = h;
    for (;;) {
        i64 next = MP(cur, M_P + 3);
        if (next < 0) break;
        i64 q = consumer[next];
        st[ns++] = (Store){CHR(next), cur, 0};
        while (q >= 0 && MP(q, M_KIND) == K_FIFO && n < n_mod) {
            if (MP(q, M_P + 1) != 1 || !x->unit[q] || MP(q, M_IN1) - MP(q, M_IN0) != 1 ||
                MP(q, M_OUT1) - MP(q, M_OUT0) != 1)
                return -1;
            mods[n++] = q;
            st[ns++] = (Store){NULL, q, 0};
            i64 c = LS(MP(q, M_OUT0));
            st[ns++] = (Store){CHR(c), q, 0};
            q = consumer[c];
        }
        if (q < 0 || n >= n_mod || MP(q, M_KIND) != K_TAP || !x->unit[q] || MP(q, M_IN1) - MP(q, M_IN0) != 1)
            return -1;
        mods[n++] = q;
        cur = q;
    }
    *n_st = ns;
    return n;
}

INLINE i64 store_count(const Ctx *x, const Store *s) { return s->ch ? s->ch[C_COUNT] : MP(s->mod, M_S); }

/* Element i (0: the oldest) of a storage. */
INLINE double *store_at(const Ctx *x, const Store *s, i64 i) {
    if (s->ch) {
        i64 slot = s->ch[C_HEAD] + i, cap = s->ch[C_CAP];
        if (slot >= cap) slot -= cap;
        return x->F + s->ch[C_BASE] + slot;
    }
    i64 slot = MP(s->mod, M_S + 1) + i, depth = MP(s->mod, M_P);
    if (slot >= depth) slot -= depth;
    return x->F + x->mem + MP(s->mod, M_MEMB) + slot;
}

/* Enter the steady state when the chain is in one (see above); the ring takes the stored elements. */
static void chain_enter(const Ctx *x, Chain *c) {
    for (i64 j = 0; j < c->n_st; j++) {
        const i64 *ch = c->st[j].ch;
        if (ch && (ch[C_COUNT] < 1 || ch[C_COUNT] >= ch[C_CAP])) return;
    }
    i64 tmax = INT64_MAX, n_emit = 0, d = 0, j = 0;
    for (i64 k = 0; k < c->n_tap; k++) {
        for (; j < c->tap_st[k]; j++) d += store_count(x, &c->st[j]);
        const i64 *M = x->I + x->mod + c->tap[k] * MCOLS;
        i64 s = M[M_P], v = M[M_P + 1], recv = M[M_S], sent = M[M_S + 1], want = sent + s, left;
        if (recv >= v) return;
        if (sent < v && want == recv) { /* emitting: both counters advance */
            left = v - (sent > recv ? sent : recv);
            c->em_d[n_emit] = d;
            c->em_n[n_emit++] = M[M_OUT1] - M[M_OUT0];
            c->emits[k] = 1;
        } else if (want > recv) { /* passing elements on ahead of the PEs */
            left = (want < v ? want : v) - recv;
            c->emits[k] = 0;
        } else {
            return;
        }
        if (left < tmax) tmax = left;
    }
    u64 r = c->mask + 1, age = 0;
    for (j = 0; j < c->n_st; j++)
        for (i64 i = store_count(x, &c->st[j]) - 1; i >= 0; i--)
            c->ring[(r - 1 - age++) & c->mask] = *store_at(x, &c->st[j], i);
    c->r = r;
    c->n_emit = n_emit;
    c->n_out = 0;
    for (i64 k = 0; k < c->n_tap; k++) {
        const i64 *M = x->I + x->mod + c->tap[k] * MCOLS;
        if (c->emits[k])
            for (i64 i = M[M_OUT0]; i < M[M_OUT1]; i++) c->out[c->n_out++] = LR(i);
    }
    c->t = 0;
    c->tmax = tmax;
    c->steady = 1;
    c->byp = 0;
    c->next_try = 0;
}

/* Leave the steady state: storages from the ring, counters and statistics advanced by its cycles. */
static void chain_leave(const Ctx *x, Chain *c, i64 now) {
    i64 t = c->t;
    c->steady = 0;
    if (t == 0) return;
    u64 age = 0;
    for (i64 j = 0; j < c->n_st; j++) {
        Store *s = &c->st[j];
        for (i64 i = store_count(x, s) - 1; i >= 0; i--)
            *store_at(x, s, i) = c->ring[(c->r - 1 - age++) & c->mask];
        if (!s->ch) continue;
        s->ch[C_PUSH] = s->ch[C_POP] = now - 1; /* pushed and popped every steady cycle */
        i64 peak = s->ch[C_COUNT] + s->push_first;
        if (peak > s->ch[C_PEAK]) s->ch[C_PEAK] = peak;
    }
    for (i64 k = 0; k < c->n_tap; k++) {
        MP(c->tap[k], M_S) += t;
        if (c->emits[k]) MP(c->tap[k], M_S + 1) += t;
    }
    for (i64 i = 0; i < c->n_mod; i++) MP(c->mods[i], M_BUSY) += t;
}

/* One steady cycle of the chain, or 0 (nothing done) when some module would not fire in it. */
INLINE int chain_step(const Ctx *x, Chain *c, i64 now) {
    if (c->t >= c->tmax || !avail_r(c->in, now)) return 0;
    i64 **out = c->out;
    u64 r = c->r, mask = c->mask;
    double *ring = c->ring;
    if (c->byp) { /* the PE channels' beats: their counts only (the PE group reads the ring) */
        if (c->delta >= c->minroom) return 0;
        ring[r & mask] = pop1_r(x, c->in, now);
        c->delta += 1;
        if (c->delta > c->dmax) c->dmax = c->delta;
        c->last_step = now;
        c->r = r + 1;
        c->t += 1;
        return 1;
    }
    for (i64 i = 0, n = c->n_out; i < n; i++)
        if (!room_r(out[i], now)) return 0;
    ring[r & mask] = pop1_r(x, c->in, now);
    for (i64 e = 0, n = c->n_emit; e < n; e++) {
        double value = ring[(r - (u64)c->em_d[e]) & mask];
        for (i64 i = 0, end = c->em_n[e]; i < end; i++) push1_r(x, *out++, now, value);
    }
    c->r = r + 1;
    c->t += 1;
    return 1;
}


/* Leave the bypass of group b: the PE channels' beats, heads, stamps and peaks, as the pushes and pops
 * would have left them. */
static void bypass_leave(const Ctx *x, Group *b) {
    if (!b || !b->on) return;
    b->on = 0;
    b->total += b->fires;
    for (i64 k = 0; k < b->n_c; k++) {
        Chain *c = b->cs[k];
        c->byp = 0;
        for (i64 i = 0; i < c->n_out; i++) {
            i64 *ch = c->out[i];
            i64 cap = ch[C_CAP], n = c->n0[i] + c->delta, head = (ch[C_HEAD] + b->fires) % cap;
            for (i64 j = 0; j < n; j++) {
                i64 slot = head + j;
                if (slot >= cap) slot -= cap;
                x->F[ch[C_BASE] + slot] = c->ring[(c->r - (u64)n + (u64)j - (u64)c->dist[i]) & c->mask];
            }
            ch[C_HEAD] = head;
            ch[C_COUNT] = n;
            ch[C_PUSH] = c->last_step;
            ch[C_POP] = b->last_fire;
            if (c->n0[i] + c->dmax > ch[C_PEAK]) ch[C_PEAK] = c->n0[i] + c->dmax;
        }
    }
}

/* Whether steady chain c's PE channels (every one pushed at its last step) hold exactly what its ring
 * gives (bitwise: a placeholder sent before the chain was steady may not); fills n0, dist, poff. */
static int bypass_ready(const Ctx *x, Chain *c) {
    if (!c->steady || c->byp || c->n_out == 0) return 0;
    for (i64 e = 0, i = 0; e < c->n_emit; e++)
        for (i64 j = 0; j < c->em_n[e]; j++, i++) c->dist[i] = c->em_d[e];
    c->minroom = c->minn0 = INT64_MAX;
    c->last_step = c->out[0][C_PUSH];
    for (i64 i = 0; i < c->n_out; i++) {
        const i64 *ch = c->out[i];
        i64 k = ch[C_COUNT], cap = ch[C_CAP];
        if (ch[C_PUSH] != c->last_step || k < 1 || c->t < k) return 0;
        for (i64 j = 0; j < k; j++) {
            i64 slot = ch[C_HEAD] + j;
            if (slot >= cap) slot -= cap;
            double a = x->F[ch[C_BASE] + slot];
            double v = c->ring[(c->r - (u64)k + (u64)j - (u64)c->dist[i]) & c->mask];
            u64 ba, bv;
            memcpy(&ba, &a, 8);
            memcpy(&bv, &v, 8);
            if (ba != bv) return 0;
        }
        c->n0[i] = k;
        c->poff[i] = (u64)(k + c->dist[i]);
        if (cap - k < c->minroom) c->minroom = cap - k;
        if (k < c->minn0) c->minn0 = k;
    }
    return 1;
}

/* Enter the bypass for the PE group that chain c feeds (between the chains and the PEs of a cycle) when
 * every input of the group is a PE channel of a steady chain and every PE channel of those chains goes to
 * the group, one value wide. */
static void bypass_enter(const Ctx *x, Chain *c, Chain *chains, const i64 *chan_chain, Group *groups) {
    c->next_try = c->t + 64;
    if (c->n_out == 0) return;
    i64 g = x->cons[(c->out[0] - x->I - x->ch) / CCOLS];
    if (g < 0 || MP(g, M_KIND) != K_PE) return;
    g = MP(g, M_GROUP);
    Group *b = &groups[g];
    if (b->on) return;
    i64 ports = 0;
    for (i64 k = MP(g, M_GRP0); k < MP(g, M_GRP1); k++) {
        i64 q = LS(k);
        if (!x->unit[q] || MP(q, M_P + 7) != 1) return;
        ports += MP(q, M_IN1) - MP(q, M_IN0);
    }
    if (!b->ring || !b->mask || !b->base || !b->cs) { /* first try (or an earlier one ran out of memory) */
        free(b->ring);
        free(b->mask);
        free(b->base);
        free(b->cs);
        b->ring = malloc(sizeof(double *) * (size_t)ports);
        b->mask = malloc(sizeof(u64) * (size_t)ports);
        b->base = malloc(sizeof(u64) * (size_t)ports);
        b->cs = malloc(sizeof(Chain *) * (size_t)ports);
        b->ports = ports;
        if (!b->ring || !b->mask || !b->base || !b->cs) return; /* the bypass is only a speed-up */
    }
    b->n_c = 0;
    i64 total = 0, last_pop = 0, first = 1;
    for (i64 k = MP(g, M_GRP0), o = 0; k < MP(g, M_GRP1); k++) {
        i64 q = LS(k);
        for (i64 i = MP(q, M_IN0); i < MP(q, M_IN1); i++, o++) {
            i64 *row = LR(i), ci = chan_chain[(row - x->I - x->ch) / CCOLS];
            if (ci < 0) return;
            Chain *h = &chains[ci];
            i64 seen = 0;
            for (i64 z = 0; z < b->n_c; z++) seen |= b->cs[z] == h;
            if (!seen) {
                if (!bypass_ready(x, h)) return;
                b->cs[b->n_c++] = h;
                total += h->n_out;
            }
            i64 f = 0;
            while (f < h->n_out && h->out[f] != row) f++;
            if (f == h->n_out) return;
            if (first) last_pop = row[C_POP], first = 0;
            if (row[C_POP] != last_pop) return;
            b->ring[o] = h->ring;
            b->mask[o] = h->mask;
            b->base[o] = h->r - h->poff[f];
        }
    }
    if (total != ports) return;
    for (i64 z = 0; z < b->n_c; z++) {
        Chain *h = b->cs[z];
        h->byp = 1;
        h->grp = b;
        h->delta = h->dmax = 0;
        h->r0 = h->r;
    }
    b->fires = 0;
    b->last_fire = last_pop;
    b->on = 1;
    x->byp[g] = b;
}

static void chains_free(Chain *chains, i64 n_chain) {
    if (!chains) return;
    for (i64 k = 0; k < n_chain; k++) {
        Chain *c = &chains[k];
        free(c->mods);
        free(c->order);
        free(c->st);
        free(c->tap);
        free(c->tap_st);
        free(c->em_n);
        free(c->out);
        free(c->em_d);
        free(c->emits);
        free(c->ring);
        free(c->n0);
        free(c->dist);
        free(c->poff);
    }
    free(chains);
}

/* The design's reuse chains of two modules or more (members marked); 0 when memory ran out. */
static int chains_build(const Ctx *x, i64 n_mod, i64 n_ch, char *member, Chain **out, i64 *n_out) {
    i64 *consumer = malloc(sizeof(i64) * (size_t)(n_ch + 1));
    char *below = calloc((size_t)n_mod + 1, 1); /* reached from another tap's ``next`` */
    i64 *producer = malloc(sizeof(i64) * (size_t)(n_ch + 1));
    i64 *rank = malloc(sizeof(i64) * (size_t)(n_mod + 1));
    i64 *mods = malloc(sizeof(i64) * (size_t)(n_mod + 1));
    Store *st = malloc(sizeof(Store) * (size_t)(2 * n_mod + 2));
    Chain *chains = calloc((size_t)n_mod + 1, sizeof(Chain));
    int ok = consumer && producer && rank && below && mods && st && chains;
    i64 n_chain = 0;
    if (ok) {
        for (i64 c = 0; c < n_ch; c++) consumer[c] = producer[c] = -1;
        for (i64 m = 0; m < n_mod; m++) {
            for (i64 i = MP(m, M_IN0); i < MP(m, M_IN1); i++) consumer[LS(i)] = m;
            for (i64 i = MP(m, M_OUT0); i < MP(m, M_OUT1); i++) producer[LS(i)] = m;
            if (MP(m, M_KIND) == K_TAP && MP(m, M_P + 3) >= 0) producer[MP(m, M_P + 3)] = m;
        }
        for (i64 m = 0; m < n_mod; m++) {
            if (MP(m, M_KIND) != K_TAP || MP(m, M_P + 3) < 0) continue;
            i64 q = consumer[MP(m, M_P + 3)];
            for (i64 hops = 0; q >= 0 && MP(q, M_KIND) == K_FIFO && MP(q, M_OUT1) > MP(q, M_OUT0) && hops < n_mod;
                 hops++)
                q = consumer[LS(MP(q, M_OUT0))];
            if (q >= 0) below[q] = 1;
        }
    }
    for (i64 h = 0; ok && h < n_mod; h++) {
        if (MP(h, M_KIND) != K_TAP || below[h]) continue;
        i64 n_st = 0, n = chain_walk(x, consumer, n_mod, h, mods, st, &n_st);
        if (n < 2) continue;
        /* the chain runs where the kind lists put its taps: after every kind but taps, windows, links and
         * PEs; so no channel may join it to a tap outside it */
        i64 p = producer[LS(MP(h, M_IN0))];
        int apart = p < 0 || MP(p, M_KIND) != K_TAP;
        for (i64 i = 0; i < n; i++)
            for (i64 e = MP(mods[i], M_OUT0); e < MP(mods[i], M_OUT1) && MP(mods[i], M_KIND) == K_TAP; e++)
                apart &= consumer[LS(e)] < 0 || MP(consumer[LS(e)], M_KIND) != K_TAP;
        if (!apart) continue;
        Chain *c = &chains[n_chain];
        i64 n_tap = 0, room = 1;
        for (i64 i = 0; i < n; i++) n_tap += MP(mods[i], M_KIND) == K_TAP;
        for (i64 j = 0; j < n_st; j++) room += st[j].ch ? st[j].ch[C_CAP] : MP(st[j].mod, M_P);
        i64 n_outs = 0, most = 0; /* the taps' PE channels: their beats stay in the ring in the bypass */
        for (i64 i = 0; i < n; i++)
            if (MP(mods[i], M_KIND) == K_TAP) {
                n_outs += MP(mods[i], M_OUT1) - MP(mods[i], M_OUT0);
                for (i64 e = MP(mods[i], M_OUT0); e < MP(mods[i], M_OUT1); e++)
                    if (CH(LS(e), C_CAP) > most) most = CH(LS(e), C_CAP);
            }
        room += most + 1;
        u64 size = 1;
        while (size < (u64)room) size <<= 1;
        c->mods = malloc(sizeof(i64) * (size_t)n);
        c->order = malloc(sizeof(i64) * (size_t)n);
        c->st = malloc(sizeof(Store) * (size_t)(n_st + 1));
        c->tap = malloc(sizeof(i64) * (size_t)n_tap);
        c->tap_st = malloc(sizeof(i64) * (size_t)n_tap);
        c->em_n = malloc(sizeof(i64) * (size_t)n_tap);
        c->out = malloc(sizeof(i64 *) * (size_t)(n_outs + 1));
        c->em_d = malloc(sizeof(i64) * (size_t)n_tap);
        c->emits = malloc((size_t)n_tap);
        c->ring = malloc(sizeof(double) * size);
        c->n0 = malloc(sizeof(i64) * (size_t)(n_outs + 1));
        c->dist = malloc(sizeof(i64) * (size_t)(n_outs + 1));
        c->poff = malloc(sizeof(u64) * (size_t)(n_outs + 1));
        n_chain += 1;
        if (!c->mods || !c->order || !c->st || !c->tap || !c->tap_st || !c->em_n || !c->out || !c->em_d ||
            !c->emits || !c->ring || !c->n0 || !c->dist || !c->poff) {
            ok = 0;
            break;
        }
        c->n_mod = n;
        c->n_st = n_st;
        c->n_tap = n_tap;
        c->mask = size - 1;
        c->in = x->rin[h];
        /* evaluation order: FIFOs, then taps, each by module number (as the kind lists run them) */
        for (i64 i = 0; i < n; i++) {
            i64 m = mods[i], key = (MP(m, M_KIND) == K_TAP) * n_mod + m, j = i;
            for (; j > 0 && (MP(c->order[j - 1], M_KIND) == K_TAP) * n_mod + c->order[j - 1] > key; j--)
                c->order[j] = c->order[j - 1];
            c->order[j] = m;
        }
        for (i64 i = 0; i < n; i++) rank[c->order[i]] = i;
        for (i64 j = 0; j < n_st; j++) {
            c->st[j] = st[j];
            if (st[j].ch)
                c->st[j].push_first = rank[st[j].mod] < rank[consumer[(st[j].ch - x->I - x->ch) / CCOLS]];
        }
        for (i64 i = 0, k = 0, j = 0; i < n; i++) {
            c->mods[i] = mods[i];
            member[mods[i]] = 1;
            if (MP(mods[i], M_KIND) == K_TAP) {
                c->tap[k] = mods[i];
                c->tap_st[k++] = j;
                j += i + 1 < n; /* a tap's ``next`` */
            } else {
                j += 2; /* a FIFO's memory and its output */
            }
        }
    }
    free(consumer);
    free(producer);
    free(rank);
    free(below);
    free(mods);
    free(st);
    if (!ok) {
        chains_free(chains, n_chain);
        return 0;
    }
    *out = chains;
    *n_out = n_chain;
    return 1;
}

/* ---------------------------------------------------------------------------------------- cycle loop */

/* What a cycle's evaluate phase learned: for the deadlock test and the done test. */
typedef struct {
    i64 progress, waiting, done; /* words, not ints: the PE loop tests two flags as one load, which must not
                                  * wait on two narrower stores (a failed store forwarding, ~5% of a cycle) */
    i64 firings;
} Cycle;

/* Account for module m's activity this cycle: statistics and the trace. */
INLINE void account(const Ctx *x, Cycle *cy, int8_t *trace_row, i64 m, int act) {
    if (act == WAIT_BW) {
        cy->waiting = 1; /* bandwidth credit accrues with time */
        act = BLOCKED;
    }
    if (act == BUSY) {
        MP(m, M_BUSY) += 1;
        cy->firings += 1;
        cy->progress = 1;
    } else if (act == STARVED) {
        MP(m, M_STARVED) += 1;
    } else if (act == BLOCKED) {
        MP(m, M_BLOCKED) += 1;
    }
    if (trace_row) trace_row[m] = (int8_t)act;
}

/* Modules of each kind, in design order; memory ports (readers and writers) share one list. */
enum { L_PORTS, L_BCAST, L_FIFO, L_TAP, L_WINDOW, L_NET, L_PE, N_LISTS };

static int list_of(i64 kind) {
    switch (kind) {
    case K_READER: case K_WRITER: return L_PORTS;
    case K_BCAST: return L_BCAST;
    case K_FIFO: return L_FIFO;
    case K_TAP: return L_TAP;
    case K_WINDOW: return L_WINDOW;
    case K_NET: return L_NET;
    default: return L_PE;
    }
}

/* Advance the design from cycle now0 for at most limit cycles. trace [trace_len x n_mod] and occupancy
 * [trace_len x n_ch] record each module's activity and each channel's beats at the end of the cycles
 * from trace_from on. Writes (status, cycle reached, module firings, of which by steady reuse chains,
 * PE group firings fed by chains in bypass) to outcome; status is RUNNING, DONE or DEADLOCK; -1 when
 * memory ran out. */
void run(i64 *I, double *F, int8_t *trace, i64 *occupancy, i64 trace_len, i64 trace_from, i64 now0,
         i64 limit, i64 *outcome, Evaluator ev) {
    const i64 n_mod = I[H_NMOD], n_ch = I[H_NCH], n_bank = I[H_NBANK];
    i64 *lists = malloc(sizeof(i64) * (size_t)(n_mod + 1));
    i64 n_list = 0;
    for (i64 m = 0; m < n_mod; m++) {
        i64 *r = I + I[H_MOD] + m * MCOLS;
        if (r[M_IN1] > n_list) n_list = r[M_IN1];
        if (r[M_OUT1] > n_list) n_list = r[M_OUT1];
    }
    i64 **rows = malloc(sizeof(i64 *) * (size_t)(2 * n_mod + 2 + n_list + 1));
    char *unit = malloc((size_t)n_mod + 1);
    Chain **byp = calloc((size_t)n_mod + 1, sizeof(Chain *));
    i64 *cons = malloc(sizeof(i64) * (size_t)(n_ch + 1));
    if (!lists || !rows || !unit || !byp || !cons) {
        free(lists);
        free(rows);
        free(unit);
        free(byp);
        free(cons);
        outcome[0] = -1;
        return;
    }
    const Ctx ctx = {I, F, I[H_MOD], I[H_CH], I[H_LIST], I[H_PIPE], I[H_DEST], I[H_CODE], I[H_PINFO],
                     I[H_STORE], I[H_MEM], I[H_SCR], I[H_STACK], I[H_TEMPS], I[H_STREAM], I[H_OUT],
                     I[H_CONST], I[H_PVAL], I[H_MODF], I[H_BW], I[H_OUTX], ev, rows + 2 * n_mod + 2, rows,
                     rows + n_mod + 1, unit, byp, cons};
    const Ctx *x = &ctx;
    for (i64 c = 0; c < n_ch; c++) cons[c] = -1;
    for (i64 m = 0; m < n_mod; m++) {
        rows[m] = MP(m, M_IN1) > MP(m, M_IN0) ? CHR(LS(MP(m, M_IN0))) : NULL;
        rows[n_mod + 1 + m] = MP(m, M_OUT1) > MP(m, M_OUT0) ? CHR(LS(MP(m, M_OUT0))) : NULL;
        if (MP(m, M_KIND) == K_TAP) rows[n_mod + 1 + m] = MP(m, M_P + 3) >= 0 ? CHR(MP(m, M_P + 3)) : NULL;
        for (i64 i = MP(m, M_IN0); i < MP(m, M_IN1); i++) ctx.row[i] = CHR(LS(i));
        for (i64 i = MP(m, M_OUT0); i < MP(m, M_OUT1); i++) ctx.row[i] = CHR(LS(i));
        unit[m] = 1;
        for (i64 i = MP(m, M_IN0); i < MP(m, M_IN1); i++) cons[LS(i)] = m;
        for (i64 i = MP(m, M_IN0); i < MP(m, M_IN1); i++) unit[m] &= CH(LS(i), C_WIDTH) == 1;
        for (i64 i = MP(m, M_OUT0); i < MP(m, M_OUT1); i++) unit[m] &= CH(LS(i), C_WIDTH) == 1;
        if (MP(m, M_KIND) == K_TAP && MP(m, M_P + 3) >= 0) unit[m] &= CH(MP(m, M_P + 3), C_WIDTH) == 1;
    }
    /* reuse chains (with I[H_FUSE]): their modules leave the kind lists and run chain by chain */
    Chain *chains = NULL;
    i64 n_chain = 0;
    char *member = calloc((size_t)n_mod + 1, 1);
    if (!member || (I[H_FUSE] && !chains_build(x, n_mod, n_ch, member, &chains, &n_chain))) {
        free(lists);
        free(rows);
        free(unit);
        free(member);
        free(byp);
        free(cons);
        outcome[0] = -1;
        return;
    }
    /* the bypass: the chain of each tap's PE channel, a state per PE group */
    i64 *chan_chain = malloc(sizeof(i64) * (size_t)(n_ch + 1));
    Group *groups = calloc((size_t)n_mod + 1, sizeof(Group));
    if (!chan_chain || !groups) {
        free(chan_chain);
        free(groups);
        chains_free(chains, n_chain);
        free(lists);
        free(rows);
        free(unit);
        free(member);
        free(byp);
        free(cons);
        outcome[0] = -1;
        return;
    }
    for (i64 c = 0; c < n_ch; c++) chan_chain[c] = -1;
    for (i64 k = 0; k < n_chain; k++)
        for (i64 i = 0; i < chains[k].n_tap; i++)
            for (i64 e = MP(chains[k].tap[i], M_OUT0); e < MP(chains[k].tap[i], M_OUT1); e++)
                chan_chain[LS(e)] = k;
    i64 start[N_LISTS + 1] = {0};
    for (i64 m = 0; m < n_mod; m++)
        if (!member[m]) start[list_of(MP(m, M_KIND)) + 1] += 1;
    for (int k = 0; k < N_LISTS; k++) start[k + 1] += start[k];
    i64 fill[N_LISTS];
    for (int k = 0; k < N_LISTS; k++) fill[k] = start[k];
    for (i64 m = 0; m < n_mod; m++)
        if (!member[m]) lists[fill[list_of(MP(m, M_KIND))]++] = m;

    i64 firings = 0, fused = 0, idle_cycles = 0, now = now0, status = RUNNING;
    const i64 end = now0 + limit;
    while (now < end) {
        /* phase 1: refill - bandwidth credit of every bank */
        for (i64 b = 0; b < n_bank; b++) {
            double *bw = F + x->bw + BWCOLS * b;
            double credit = bw[0] + bw[1];
            bw[0] = bw[2] < credit ? bw[2] : credit;
            bw[3] = bw[4]; /* bytes writers were refused last cycle: reserved for them now */
            bw[4] = 0.0;
        }
        Cycle cy = {0, 0, 1, 0};
        const i64 t = now - trace_from;
        int8_t *row = (t >= 0 && t < trace_len) ? trace + t * n_mod : NULL;
        /* phase 2: evaluate every module against the start-of-cycle channel state (and fire it) */
        for (i64 i = start[L_PORTS]; i < start[L_PORTS + 1]; i++) {
            i64 m = lists[i];
            int act;
            if (MP(m, M_KIND) == K_READER) {
                act = reader(x, m, now);
            } else {
                act = writer(x, m, now);
                if (act != FINISHED) cy.done = 0;
            }
            account(x, &cy, row, m, act);
        }
        for (i64 i = start[L_BCAST]; i < start[L_BCAST + 1]; i++) account(x, &cy, row, lists[i], bcast(x, lists[i], now));
        for (i64 i = start[L_FIFO]; i < start[L_FIFO + 1]; i++) account(x, &cy, row, lists[i], fifo(x, lists[i], now));
        for (i64 i = start[L_TAP]; i < start[L_TAP + 1]; i++) account(x, &cy, row, lists[i], tap(x, lists[i], now));
        for (i64 k = 0; k < n_chain; k++) {
            Chain *c = &chains[k];
            if (c->steady) {
                if (row && c->byp) bypass_leave(x, c->grp); /* a traced cycle shows every channel's beats */
                if (chain_step(x, c, now)) {
                    cy.firings += c->n_mod;
                    fused += c->n_mod;
                    cy.progress = 1;
                    if (row)
                        for (i64 i = 0; i < c->n_mod; i++) row[c->mods[i]] = BUSY;
                    continue;
                }
                if (c->byp) bypass_leave(x, c->grp);
                chain_leave(x, c, now);
            }
            int all = 1;
            for (i64 i = 0; i < c->n_mod; i++) {
                i64 m = c->order[i];
                int act = MP(m, M_KIND) == K_TAP ? tap(x, m, now) : fifo(x, m, now);
                all &= act == BUSY;
                account(x, &cy, row, m, act);
            }
            if (all) chain_enter(x, c);
        }
        if (!row)
            for (i64 k = 0; k < n_chain; k++) {
                Chain *c = &chains[k];
                if (c->steady && !c->byp && c->t >= c->next_try)
                    bypass_enter(x, c, chains, chan_chain, groups);
            }
        for (i64 i = start[L_WINDOW]; i < start[L_WINDOW + 1]; i++) account(x, &cy, row, lists[i], window(x, lists[i], now));
        for (i64 i = start[L_NET]; i < start[L_NET + 1]; i++) account(x, &cy, row, lists[i], net(x, lists[i], now));
        for (i64 i = start[L_PE]; i < start[L_PE + 1]; i++) {
            i64 m = lists[i];
            int act = pe(x, m, now);
            /* a result in flight matures with time (asked only while the cycle shows neither progress
             * nor waiting yet: either keeps the deadlock test from counting the cycle idle) */
            if (!cy.progress && !cy.waiting && MP(m, M_S + 1) > 0 &&
                I[x->pipe + MP(m, M_E + 7) + MP(m, M_S + 2)] > now)
                cy.waiting = 1;
            account(x, &cy, row, m, act);
        }
        firings += cy.firings;
        /* phase 3: commit is implicit (push/pop stamps); the cycle ends */
        if (row)
            for (i64 c = 0; c < n_ch; c++) occupancy[t * n_ch + c] = CH(c, C_COUNT);
        now += 1;
        if (cy.done) {
            status = DONE;
            break;
        }
        if (cy.progress || cy.waiting) {
            idle_cycles = 0;
        } else if (++idle_cycles >= 2) {
            status = DEADLOCK;
            break;
        }
    }
    for (i64 k = 0; k < n_chain; k++)
        if (chains[k].steady) {
            if (chains[k].byp) bypass_leave(x, chains[k].grp);
            chain_leave(x, &chains[k], now);
        }
    chains_free(chains, n_chain);
    i64 bypassed = 0;
    for (i64 m = 0; m < n_mod; m++) {
        bypassed += groups[m].total;
        free(groups[m].ring);
        free(groups[m].mask);
        free(groups[m].base);
        free(groups[m].cs);
    }
    free(groups);
    free(chan_chain);
    free(member);
    free(lists);
    free(rows);
    free(unit);
    free(byp);
    free(cons);
    outcome[0] = status;
    outcome[1] = now;
    outcome[2] = firings;
    outcome[3] = fused;
    outcome[4] = bypassed;
}
