// blur1d_pcm: Intel FPGA OpenCL single-work-item kernel of the PCM design of 'blur1d'
// (stencilmap). Structure: OpenCL FPGA platform §3, Algorithm 1 — one loop, one beat of
// P_CELL cells per cycle, D chained PCMs of shift registers and PE lanes.
#include "blur1d_pcm.h"
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#pragma OPENCL FP_CONTRACT OFF
#if defined(INTELFPGA_CL)
#define SM_SINGLE_WORK_ITEM __attribute__((max_global_work_dim(0)))
#define SM_AUTORUN __attribute__((max_global_work_dim(0))) __attribute__((autorun))
#define SM_UNROLL _Pragma("unroll")
#else  // elsewhere (PoCL, the emulation) unrolling only slows the build down
#define SM_SINGLE_WORK_ITEM
#define SM_AUTORUN
#define SM_UNROLL
#endif


static inline float compute_b(float a_m1, float a_0, float a_1) {
    return ((((a_m1 + a_0) + a_1) * 0.25f) + (a_0 * 0.5f));
}

__kernel SM_SINGLE_WORK_ITEM void blur1d_pcm(__global const float* restrict in_a, __global float* restrict out_b) {
    float sr_b_a[D][SIZE_b_a];
    float y_b[D][P_CELL];
    SM_UNROLL
    for (int t = 0; t < D; ++t) {
        SM_UNROLL
        for (int i = 0; i < SIZE_b_a; ++i) sr_b_a[t][i] = 0;
    }

    cycles: for (long c = -LEAD; c < BEATS + D * LAG_PASS; ++c) {
        float x_a[P_CELL];  // input a, (LAG_PASS - LAG_b) beats ahead
        SM_UNROLL
        for (int j = 0; j < P_CELL; ++j) {
            const long i = (c + (LAG_PASS - LAG_b)) * P_CELL + j;
            x_a[j] = 0.0f;
            if (i >= 0 && i < N_POINTS) {
                const long c0 = (i / (1L)) % S0;
                x_a[j] = in_a[c0 * 1L];
            }
        }
        SM_UNROLL
        for (int t = 0; t < D; ++t) {
            // PCM t, stencil b: shift its registers, fire P_CELL lanes
            {
                SM_UNROLL
                for (int i = SIZE_b_a - 1; i >= P_CELL; --i) sr_b_a[t][i] = sr_b_a[t][i - P_CELL];
                SM_UNROLL
                for (int j = 0; j < P_CELL; ++j) sr_b_a[t][P_CELL - 1 - j] = t == 0 ? x_a[j] : (float)y_b[t - 1][j];
                const long n = c - t * LAG_PASS - LAG_b;  // this PCM's beat of b
                SM_UNROLL
                for (int j = 0; j < P_CELL; ++j) {
                    const long addr = n * P_CELL + j;
                    float value = 0.0f;
                    if (n >= 0 && addr < N_POINTS) {
                        const long c0 = (addr / (1L)) % S0;
                        const float cell_a_m1 = sr_b_a[t][DELTA_b_a * P_CELL + P_CELL - 1 - j - (-1)];
                        const float cell_a_0 = sr_b_a[t][DELTA_b_a * P_CELL + P_CELL - 1 - j - (0)];
                        const float cell_a_1 = sr_b_a[t][DELTA_b_a * P_CELL + P_CELL - 1 - j - (1)];
                        const float a_m1 = (c0 + (-1) >= 0 && c0 + (-1) < S0) ? cell_a_m1 : 0.0f /* shrink: undefined, not compared */;
                        const float a_0 = cell_a_0;
                        const float a_1 = (c0 + (1) >= 0 && c0 + (1) < S0) ? cell_a_1 : 0.0f /* shrink: undefined, not compared */;
                        value = compute_b(a_m1, a_0, a_1);
                    }
                    y_b[t][j] = value;
                }
            }
        }
        const long n_b = c - (D - 1) * LAG_PASS - LAG_b;  // beat of output b
        SM_UNROLL
        for (int j = 0; j < P_CELL; ++j) {
            const long addr = n_b * P_CELL + j;
            if (n_b >= 0 && addr < N_POINTS) out_b[addr] = y_b[D - 1][j];
        }
    }
}
