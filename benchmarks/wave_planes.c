/* A wave of 7-point 3-D stages alone (docs/guide/host.md, "3-D past 2×"): T stages, each keeping a ring of
   P + 3 planes of R rows × 256 points, each stage computing P planes a tick from the stage before, the same
   row of its P planes in one vector loop (what cgen.joint_planes / cvec.row_loop generate) so the reads they
   share are loaded once; P = 1 is plane by plane. The interior rows of a plane are one run (rows back to back).
   T × (P + 3) × R KiB decides the cache level. Prints ns per point. Build and run, e.g.:
     for p in 1 2 4; do gcc -O3 -march=native -DP=$p -o /tmp/wp$p benchmarks/wave_planes.c; done
     for a in "32 4 4000" "80 8 1000" "148 10 500"; do for p in 1 2 4; do /tmp/wp$p $a; done; done */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#define NX 256
#ifndef P
#define P 1
#endif
typedef float vf __attribute__((vector_size(64)));
static inline vf ld(const float *p){ vf x; __builtin_memcpy(&x, p, 64); return x; }
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
/* P planes z..z+P-1 of dst from planes z-1..z+P of src (pl[0..P+1]), interior rows as one run */
static void stageP(float *restrict *d, const float *restrict *pl, int R) {
  const long len = (long)(R - 2) * NX - 2, RS = NX;
  const long jn = len / 16 * 16 - 16;
  const float *c[P + 2]; for (int q = 0; q < P + 2; ++q) c[q] = pl[q] + RS + 1;
  vf m[P], cur[P];
  for (int p = 0; p < P; ++p) { m[p] = ld(c[p + 1] - 16); cur[p] = ld(c[p + 1]); }
  for (long j = 0; j < jn; j += 16) {
    vf row[P + 2];
    for (int q = 0; q < P + 2; ++q) row[q] = (q >= 1 && q <= P) ? cur[q - 1] : ld(c[q] + j);
    for (int p = 0; p < P; ++p) {
      const vf n2 = ld(c[p + 1] + j + 16);
      const vf r2 = __builtin_shufflevector(m[p], cur[p], 15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30);
      const vf r4 = __builtin_shufflevector(cur[p], n2, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16);
      const vf v = (row[p] + ld(c[p + 1] + j - RS) + r2 + cur[p] + r4 + ld(c[p + 1] + j + RS) + row[p + 2]) * 0.142857f;
      __builtin_memcpy(d[p] + RS + 1 + j, &v, 64);
      m[p] = cur[p]; cur[p] = n2;
    }
  }
}
int main(int argc, char **argv) {
  int R = atoi(argv[1]), T = atoi(argv[2]), Z = atoi(argv[3]), K = P + 2 + 1;
  size_t plane = (size_t)R * NX;
  float **ring = malloc(sizeof(float*) * (T + 1));
  for (int s = 0; s <= T; ++s) { ring[s] = aligned_alloc(64, (plane * K * 4 + 8192)); for (size_t i = 0; i < plane*K + 1024; ++i) ring[s][i] = (float)(i % 7); ring[s] += (s * 1344 % 4096) / 4 + 15; }
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
    for (int tau = 0; tau < Z; tau += P)
      for (int s = 1; s <= T; ++s) {
        int z = tau + 10;
        const float *pl[P + 2]; float *d[P];
        for (int q = 0; q < P + 2; ++q) pl[q] = ring[s-1] + ((z - 1 + q) % K) * plane;
        for (int p = 0; p < P; ++p) d[p] = ring[s] + ((z + p) % K) * plane;
        stageP(d, pl, R);
      }
    double t = now() - t0; if (t < best) best = t;
  }
  double pts = (double)((Z + P - 1) / P * P) * T * (R - 2) * NX;
  printf("P=%d R=%d T=%d  ws=%.0f KiB  %.3f ns/pt  %.2f GCell/s\n", P, R, T, plane*K*4.0*(T+1)/1024, best/pts*1e9, pts/best/1e9);
  return 0;
}
