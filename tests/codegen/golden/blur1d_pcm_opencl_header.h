// blur1d_pcm: parameters of the PCM kernel of 'blur1d' (stencilmap).
// OpenCL FPGA platform §3: D pipelined computation modules of P_CELL PEs each. Edit D and
// P_CELL here; every size and lag below follows from them.
#ifndef BLUR1D_PCM_H
#define BLUR1D_PCM_H

#define D 2  // PCMs: iterations computed on chip per pass over memory
#define P_CELL 2  // cells each PCM takes and computes per cycle

#define S0 16L
#define N_POINTS 16L
#define BEATS ((N_POINTS + P_CELL - 1) / P_CELL)
#define SM_MAX(a, b) ((a) > (b) ? (a) : (b))
#define SM_BEATS_AHEAD(a) ((a) > 0 ? ((a) + P_CELL - 1) / P_CELL : 0)

// Lags and sizes as enumerators (integer constants the compiler evaluates once: as nested
// macros they would expand exponentially along a chain of stencils).
enum {
    // lag of each stencil within a PCM (beats after the PCM's inputs)
    LAG_b = SM_BEATS_AHEAD(1),
    LAG_PASS = LAG_b,  // a PCM's latency in beats
    LEAD = SM_MAX(0, LAG_PASS - LAG_b),  // beats the loop starts early: the most a chained input reads ahead
    // shift registers: Δ·P_CELL + P_CELL − a_min cells (OpenCL paper Fig. 6 at P_CELL = 1)
    DELTA_b_a = LAG_PASS - LAG_b + LAG_b,
    SIZE_b_a = DELTA_b_a * P_CELL + P_CELL - (-1),
};

#endif
