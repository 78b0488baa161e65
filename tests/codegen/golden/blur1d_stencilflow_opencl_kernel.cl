// blur1d_stencilflow: Intel FPGA OpenCL of the StencilFlow design 'blur1d' (stencilmap).
// Structure: StencilFlow §IV/§VI-A — one kernel per module (readers, writers, broadcasts, delay
// buffers, each stencil unit's internal buffers and PE), channels with the design's depths
// (a delay buffer's storage in its input channel, a PE's in-flight beats in its output channel).
// Design parameters: W=2, delay_buffers=computed, shape=(16,)
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

typedef struct { float v[2]; } sm_vec_f32_2;

#if defined(SM_EMULATION)
static sm_channel<sm_vec_f32_2> ch_0("b.a.buf:a@(-1)->b.pe:a@(-1)", 2);
static sm_channel<sm_vec_f32_2> ch_1("b.a.buf:a@(0)->b.pe:a@(0)", 2);
static sm_channel<sm_vec_f32_2> ch_2("b.a.buf:a@(1)->b.pe:a@(1)", 2);
static sm_channel<sm_vec_f32_2> ch_3("read.a:out->b.a.buf", 2);
static sm_channel<sm_vec_f32_2> ch_4("b.pe:out->write.b", 27);
#else
#pragma OPENCL EXTENSION cl_intel_channels : enable
channel sm_vec_f32_2 ch_0 __attribute__((depth(2)));  // b.a.buf:a@(-1)->b.pe:a@(-1)
channel sm_vec_f32_2 ch_1 __attribute__((depth(2)));  // b.a.buf:a@(0)->b.pe:a@(0)
channel sm_vec_f32_2 ch_2 __attribute__((depth(2)));  // b.a.buf:a@(1)->b.pe:a@(1)
channel sm_vec_f32_2 ch_3 __attribute__((depth(2)));  // read.a:out->b.a.buf
channel sm_vec_f32_2 ch_4 __attribute__((depth(27)));  // b.pe:out->write.b (+ 25 beats in flight in b.pe)
#endif


static inline float compute_b_0(float a_m1, float a_0, float a_1) {
    return ((((a_m1 + a_0) + a_1) * 0.25f) + (a_0 * 0.5f));
}

// read.a: reader (field=a, bank=0)
__kernel SM_SINGLE_WORK_ITEM void read_a(__global const float* restrict mem) {
    const long start[1][1] = {{0}};
    tiles: for (int t = 0; t < 1; ++t) {
        beats: for (long n = 0; n < 8L; ++n) {
            float beat[2];
            SM_UNROLL
            for (int e = 0; e < 2; ++e) {
                const long i = n * 2L + e;
                beat[e] = 0.0f;
                if (i < 16L) {
                    const long c0 = (i / 1L) % 16L;
                    const long g0 = c0 + start[t][0];
                    beat[e] = mem[g0 * 1L];
                }
            }
            sm_vec_f32_2 v0;
            SM_UNROLL
            for (int e = 0; e < 2; ++e) v0.v[e] = beat[0 + e];
            write_channel_intel(ch_3, v0);
        }
    }
}

// b.a.buf: internal_buffer (field=a, stencil=b, stage=1, size=4)
__kernel SM_AUTORUN void b_a_buf(void) {
    float sr[5];  // 5 cells (internal_buffer size 4)
    SM_UNROLL
    for (int i = 0; i < 5; ++i) sr[i] = 0.0f;
    for (int t = 0; t < 1; ++t) {
        for (long step = 0; step < 9L; ++step) {
            SM_UNROLL
            for (int i = 0; i < 3; ++i) sr[i] = sr[i + 2];
            if (step < 8L) {
                float beat[2];
                const sm_vec_f32_2 v0 = read_channel_intel(ch_3);
                SM_UNROLL
                for (int e = 0; e < 2; ++e) beat[0 + e] = v0.v[e];
                SM_UNROLL
                for (int e = 0; e < 2; ++e) sr[3 + e] = beat[e];
            }
            const long n = step - 1L;  // the firing of this step
            if (n < 0) continue;
            sm_vec_f32_2 o0;
            SM_UNROLL
            for (int e = 0; e < 2; ++e) {
                const long a = n * 2L + (-1) + e;
                o0.v[e] = (a >= 0 && a < 16L) ? sr[0 + e] : 0.0f;
            }
            write_channel_intel(ch_0, o0);
            sm_vec_f32_2 o1;
            SM_UNROLL
            for (int e = 0; e < 2; ++e) {
                const long a = n * 2L + (0) + e;
                o1.v[e] = (a >= 0 && a < 16L) ? sr[1 + e] : 0.0f;
            }
            write_channel_intel(ch_1, o1);
            sm_vec_f32_2 o2;
            SM_UNROLL
            for (int e = 0; e < 2; ++e) {
                const long a = n * 2L + (1) + e;
                o2.v[e] = (a >= 0 && a < 16L) ? sr[2 + e] : 0.0f;
            }
            write_channel_intel(ch_2, o2);
        }
    }
}

// b.pe: pe (stencil=b, stage=1, lane=0)
__kernel SM_AUTORUN void b_pe(void) {
    tiles: for (int t = 0; t < 1; ++t) {
        firings: for (long n = 0; n < 8L; ++n) {
            const sm_vec_f32_2 p0 = read_channel_intel(ch_0);
            const sm_vec_f32_2 p1 = read_channel_intel(ch_1);
            const sm_vec_f32_2 p2 = read_channel_intel(ch_2);
            sm_vec_f32_2 r;
            SM_UNROLL
            for (int e = 0; e < 2; ++e) {
                const long addr = n * 2L + 0 + e;
                float value = 0.0f;  // padding
                if (addr < 16L) {
                    const long c0 = (addr / 1L) % 16L;
                    const float a0 = (c0 + (-1) >= 0 && c0 + (-1) < 16L) ? p0.v[e] : 0.0f  /* shrink: undefined, not compared */;
                    const float a1 = p1.v[e];
                    const float a2 = (c0 + (1) >= 0 && c0 + (1) < 16L) ? p2.v[e] : 0.0f  /* shrink: undefined, not compared */;
                    value = compute_b_0(a0, a1, a2);
                }
                r.v[e] = value;
            }
            write_channel_intel(ch_4, r);
        }
    }
}

// write.b: writer (field=b, bank=0)
__kernel SM_SINGLE_WORK_ITEM void write_b(__global float* restrict mem) {
    const long start[1][1] = {{0}};
    const long own_lo[1][1] = {{0}};
    const long own_hi[1][1] = {{16}};
    tiles: for (int t = 0; t < 1; ++t) {
        beats: for (long n = 0; n < 8L; ++n) {
            float beat[2];
            const sm_vec_f32_2 v0 = read_channel_intel(ch_4);
            SM_UNROLL
            for (int e = 0; e < 2; ++e) beat[0 + e] = v0.v[e];
            SM_UNROLL
            for (int e = 0; e < 2; ++e) {
                const long i = n * 2L + e;
                if (i >= 16L) continue;  // padding of the last beat
                const long c0 = (i / 1L) % 16L;
                const long g0 = c0 + start[t][0];
                if (!(g0 >= own_lo[t][0] && g0 < own_hi[t][0])) continue;  // another tile owns this point
                mem[g0 * 1L] = beat[e];
            }
        }
    }
}
