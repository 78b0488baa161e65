/* emax.h: stencilmap's stand-in for the EMAX 3D-Stencil Library header (EMAX paper §3.3, §4.1, §4.2,
 * Figs. 3, 5, 6). An application includes it and calls a generated stencil(A, B, C, size_X, size_Y,
 * size_Z); the function holds its EMAX mnemonics as a table written with the macros below, one line per
 * instruction as Fig. 3 frames it (row, col, unit, ALU OP / MEM OP, operands, RGI, dist).
 *
 * On EMAX the library would send that table and the arrays to the accelerator (Fig. 6). Here emax_run
 * EXECUTES the table in plain C with the machine model of stencilmap's EMAX simulator (sim/emax.py): per
 * X chunk and group of p Z planes, one execution per Y row; every load's LMM is placed at
 * ((row + k * dist) mod rows, col) in execution k round the ring (§3.1, Fig. 4); an LMM a shifting load
 * read in execution k - 1 is kept, every other load's LMM is refilled (state 2, DDR3 -> LMM); the rows
 * run on the stream (state 3): LD reads count words from address RGI, FIFO taps its row's LMM at x+dx,
 * FMUL d = C[c] * a, FMA d = a + C[c] * b (a = RGI: the RGI constant), FADD d = a + b, ST writes the
 * PE's LMM; state 4 moves each plane's stored row into B. So an edited coefficient, dist or placement in
 * the table changes what the compiled code computes, as it changes what the simulator computes.
 *
 * The caller defines EMAX_T (float or double) before including this file. emax_run returns 0, or a
 * nonzero code with emax_error() saying why (two loads on one single-port LMM, out of memory).
 */
#ifndef STENCILMAP_EMAX_H
#define STENCILMAP_EMAX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EMAX_T
#define EMAX_T float
#endif

typedef enum { EMAX_EAG, EMAX_EX1, EMAX_EX2 } emax_unit;
typedef enum { EMAX_LD, EMAX_ST, EMAX_FIFO, EMAX_FMUL, EMAX_FMA, EMAX_FADD } emax_op;

/* One mnemonic (Fig. 3). Registers are indices; a = EMAX_RGI reads the RGI constant. */
typedef struct {
    int row, col;
    emax_unit unit;
    emax_op op;
    int dst, a, b;
    int dz, dy, dx; /* LD: the stream A[z+dz][y+dy]; FIFO: the tap x+dx; ST: dz is the plane */
    int c;          /* FMUL / FMA: the index of the coefficient in C */
    double rgi;     /* RGI: LD / ST address, FMA's constant */
    int dist;       /* LD: the rows its LMM shifts per execution along Y (§3.3, Fig. 4) */
} emax_insn;

/* What the library generated the table for (§4.6): degree, p planes, the rows of the ring, the words of
 * one LMM, and the registers the table names. */
typedef struct {
    int degree, p, rows, columns, lmm_words, registers;
} emax_conf;

#define EMAX_RGI (-1)
#define EMAX_NONE (-2)
#define EAG EMAX_EAG
#define EX1 EMAX_EX1
#define EX2 EMAX_EX2
#define RGI EMAX_RGI

/* The mnemonics (Fig. 3): row, col, [unit,] dst <- operands, [coefficient C[c],] RGI, dist. */
#define LD(row, col, dst, dz, dy, rgi, dist) \
    {(row), (col), EMAX_EAG, EMAX_LD, (dst), EMAX_NONE, EMAX_NONE, (dz), (dy), 0, 0, (rgi), (dist)}
#define ST(row, col, plane, src, rgi) \
    {(row), (col), EMAX_EAG, EMAX_ST, EMAX_NONE, (src), EMAX_NONE, (plane), 0, 0, 0, (rgi), 0}
#define FIFO(row, col, unit, dst, src, dx) \
    {(row), (col), (unit), EMAX_FIFO, (dst), (src), EMAX_NONE, 0, 0, (dx), 0, 0.0, 0}
#define FMUL(row, col, unit, dst, a, c) \
    {(row), (col), (unit), EMAX_FMUL, (dst), (a), EMAX_NONE, 0, 0, 0, (c), 0.0, 0}
#define FMA(row, col, unit, dst, a, b, c, rgi) \
    {(row), (col), (unit), EMAX_FMA, (dst), (a), (b), 0, 0, 0, (c), (rgi), 0}
#define FADD(row, col, unit, dst, a, b) \
    {(row), (col), (unit), EMAX_FADD, (dst), (a), (b), 0, 0, 0, 0, 0.0, 0}

static char emax_message[256];

static inline const char *emax_error(void) { return emax_message; }

/* The order of one execution: the loads first, then row by row, EX1 before EX2 (sim: execution_order). */
static inline int emax_order(const emax_insn *i) { return i->op == EMAX_LD ? 0 : 1; }

static inline int emax_before(const emax_insn *x, const emax_insn *y)
{
    if (emax_order(x) != emax_order(y)) return emax_order(x) < emax_order(y);
    if (x->row != y->row) return x->row < y->row;
    if (x->unit != y->unit) return x->unit < y->unit;
    return x->col < y->col;
}

static inline int emax_run(const emax_conf *conf, const emax_insn *table, int count, const EMAX_T *A, EMAX_T *B,
                    const EMAX_T *C, int size_X, int size_Y, int size_Z)
{
    const int d = conf->degree, R = conf->rows, W = conf->columns, L = conf->lmm_words;
    const long X = size_X, Y = size_Y, Z = size_Z;
    int chunks = 1, chunk, k, status = 0;
    const emax_insn **order = malloc(sizeof *order * (size_t)count);
    int *pe = malloc(sizeof *pe * (size_t)count);      /* the LMM each load uses in this execution */
    int *reg_pe = malloc(sizeof *reg_pe * (size_t)(conf->registers + 1));
    int *owner = malloc(sizeof *owner * (size_t)(R * W));
    char *kept = malloc((size_t)(R * W)), *was = malloc((size_t)(R * W));
    EMAX_T *lmm = malloc(sizeof *lmm * (size_t)R * (size_t)W * (size_t)L);
    EMAX_T *regs = NULL;
    if (!order || !pe || !reg_pe || !owner || !kept || !was || !lmm) goto oom;
    while (chunks < size_X && (size_X + chunks - 1) / chunks + 2 * d > L) chunks++;
    chunk = (size_X + chunks - 1) / chunks; /* §4.2 (3), Fig. 7: X chunks that fit an LMM */
    if (chunk + 2 * d > L) {
        snprintf(emax_message, sizeof emax_message, "a row of %d points and its halo does not fit an LMM", chunk);
        status = 3;
        goto done;
    }
    for (k = 0; k < count; k++)
        if ((table[k].op == EMAX_LD || table[k].op == EMAX_ST) && ((long)table[k].rgi < 0 || (long)table[k].rgi + chunk > L)) {
            snprintf(emax_message, sizeof emax_message, "mnemonic %d addresses words outside its LMM", k);
            status = 3;
            goto done;
        }
    regs = malloc(sizeof *regs * (size_t)(conf->registers + 1) * (size_t)chunk);
    if (!regs) goto oom;
    for (k = 0; k < count; k++) { /* insertion sort into execution order */
        int j = k;
        while (j > 0 && emax_before(&table[k], order[j - 1])) { order[j] = order[j - 1]; j--; }
        order[j] = &table[k];
    }
    for (int ch = 0; ch < chunks && !status; ch++) {
        const long x0 = (long)ch * chunk;
        const int n = (int)(X - x0 < chunk ? X - x0 : chunk);
        for (long z0 = 0; z0 < Z && !status; z0 += conf->p) {
            memset(lmm, 0, sizeof *lmm * (size_t)R * (size_t)W * (size_t)L);
            memset(kept, 0, (size_t)(R * W));
            for (long y = 0; y < Y; y++) {
                /* where each load's LMM is: shifted by dist round the ring; one port per LMM */
                for (k = 0; k < R * W; k++) owner[k] = -1;
                for (k = 0; k < count; k++) {
                    const emax_insn *i = &table[k];
                    if (i->op == EMAX_ST) owner[i->row * W + i->col] = k;
                }
                for (k = 0; k < count; k++) {
                    const emax_insn *i = &table[k];
                    if (i->op != EMAX_LD) continue;
                    pe[k] = (int)((i->row + y * i->dist) % R) * W + i->col;
                    if (owner[pe[k]] >= 0) {
                        snprintf(emax_message, sizeof emax_message,
                                 "execution %ld: two mnemonics use the LMM of PE (%d, %d), which has one port",
                                 y, pe[k] / W, pe[k] % W);
                        status = 1;
                        goto done;
                    }
                    owner[pe[k]] = k;
                    reg_pe[i->dst] = pe[k];
                }
                /* state 2: refill every LMM but those a shifting load read in the previous execution */
                memset(was, 0, (size_t)(R * W));
                for (k = 0; k < count; k++) {
                    const emax_insn *i = &table[k];
                    EMAX_T *w;
                    long zz, yy;
                    if (i->op != EMAX_LD) continue;
                    if (i->dist) was[pe[k]] = 1;
                    if (i->dist && kept[pe[k]]) continue;
                    w = lmm + (size_t)pe[k] * (size_t)L;
                    memset(w, 0, sizeof *w * (size_t)L);
                    zz = z0 + i->dz;
                    yy = y + i->dy;
                    if (zz < 0 || zz >= Z || yy < 0 || yy >= Y) continue;
                    for (long x = x0 - d; x < x0 + n + d; x++)
                        if (x >= 0 && x < X) w[x - (x0 - d)] = A[(zz * Y + yy) * X + x];
                }
                memcpy(kept, was, (size_t)(R * W));
                /* state 3: the rows in lock-step on this stream */
                for (k = 0; k < count; k++) {
                    const emax_insn *i = order[k];
                    EMAX_T *out = regs + (size_t)(i->dst < 0 ? conf->registers : i->dst) * (size_t)chunk;
                    const EMAX_T *a = i->a >= 0 ? regs + (size_t)i->a * (size_t)chunk : NULL;
                    const EMAX_T *b = i->b >= 0 ? regs + (size_t)i->b * (size_t)chunk : NULL;
                    const EMAX_T *w;
                    int t;
                    switch (i->op) {
                    case EMAX_LD:
                        w = lmm + (size_t)reg_pe[i->dst] * (size_t)L + (long)i->rgi;
                        for (t = 0; t < n; t++) out[t] = w[t];
                        break;
                    case EMAX_FIFO: /* the FIFO its row's LMM fills: tap x+dx */
                        w = lmm + (size_t)reg_pe[i->a] * (size_t)L + d + i->dx;
                        for (t = 0; t < n; t++) out[t] = w[t];
                        break;
                    case EMAX_FMUL:
                        for (t = 0; t < n; t++) out[t] = C[i->c] * a[t];
                        break;
                    case EMAX_FMA:
                        for (t = 0; t < n; t++) out[t] = (a ? a[t] : (EMAX_T)i->rgi) + C[i->c] * b[t];
                        break;
                    case EMAX_FADD:
                        for (t = 0; t < n; t++) out[t] = a[t] + b[t];
                        break;
                    case EMAX_ST:
                        w = lmm + (size_t)(i->row * W + i->col) * (size_t)L;
                        for (t = 0; t < n; t++) ((EMAX_T *)w)[t] = a[t];
                        break;
                    }
                }
                /* state 4: LMM -> DDR3, the planes inside the grid */
                for (k = 0; k < count; k++) {
                    const emax_insn *i = &table[k];
                    const EMAX_T *w = lmm + (size_t)(i->row * W + i->col) * (size_t)L;
                    if (i->op != EMAX_ST || z0 + i->dz >= Z) continue;
                    memcpy(B + ((z0 + i->dz) * Y + y) * X + x0, w, sizeof *w * (size_t)n);
                }
            }
        }
    }
    goto done;
oom:
    snprintf(emax_message, sizeof emax_message, "out of memory");
    status = 2;
done:
    free(order); free(pe); free(reg_pe); free(owner); free(kept); free(was); free(lmm); free(regs);
    return status;
}

#endif /* STENCILMAP_EMAX_H */
