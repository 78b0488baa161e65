/* The cpu backend's in-cache inner loop alone (docs/guide/host.md, "The in-cache inner loop"): a 2-D 5-point
   row computed from three rows, as gcc vectorises it (v = 0: five loads per 16 points) and with neighbours
   formed in registers (v = 1: three loads, two shuffles, what backends/cvec.py generates), over R rotating
   rows of W points (W × R × 4 bytes decides the cache level). Needs AVX-512 (v = 1). Build with the
   backend's flags and run, e.g.:
     gcc -O3 -march=native -ffp-contract=off -fno-strict-aliasing -o /tmp/il benchmarks/inner_loop.c
     for a in "256 8" "1024 8" "4096 50" "4096 200"; do /tmp/il $a 0; /tmp/il $a 1; done */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <immintrin.h>
__attribute__((noinline)) void row(const float *restrict a, const float *restrict b, const float *restrict c, float *restrict d, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 1; i < n - 1; ++i) d[i] = ((((a[i] + b[i-1]) + b[i]) + b[i+1]) + c[i]) * 0.2f;
}
/* Register reuse: the centre row loaded once, neighbours by valignd; from 16 (aligned), n a multiple of 16. */
__attribute__((noinline)) void rowr(const float *restrict a, const float *restrict b, const float *restrict c, float *restrict d, int64_t n) {
  const __m512 k = _mm512_set1_ps(0.2f);
  __m512 prev = _mm512_load_ps(b), cur = _mm512_load_ps(b + 16);
  for (int64_t i = 16; i < n - 16; i += 16) {
    __m512 next = _mm512_load_ps(b + i + 16);
    __m512 l = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(cur), _mm512_castps_si512(prev), 15));
    __m512 r = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(next), _mm512_castps_si512(cur), 1));
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_load_ps(a + i), l), cur), r), _mm512_load_ps(c + i));
    _mm512_store_ps(d + i, _mm512_mul_ps(s, k));
    prev = cur; cur = next;
  }
}
int main(int argc, char **argv) {
  int64_t W = atoi(argv[1]), R = atoi(argv[2]), v = atoi(argv[3]);
  int64_t stride = W + 32;
  float *base = aligned_alloc(4096, (size_t)(stride * (R + 4) * 4 + 8192));
  for (int64_t i = 0; i < stride * (R + 4); ++i) base[i] = (float)(i % 7);
  int64_t reps = 4000000000LL / (W * R) / 4 + 1;
  double t0 = (double)clock();
  for (int64_t r = 0; r < reps; ++r)
    for (int64_t k = 0; k < R; ++k)
      (v ? rowr : row)(base + k * stride, base + (k + 1) * stride, base + (k + 2) * stride, base + (k + 3) * stride, W);
  double pts = (double)reps * R * (W - 2);
  printf("v=%ld W=%ld R=%ld: %.2f Gpt/s\n", v, W, R, pts / (((double)clock() - t0) / CLOCKS_PER_SEC) / 1e9);
  return 0;
}
