/* The core's peak single-precision FMA rate: 10 independent chains of 256-bit fused multiply-adds
   (enough to cover the FMA latency on every x86 core with AVX2), timed by process CPU time.
   Prints GFLOP/s (2 per multiply-add, 8 lanes per instruction). Built and run by flops.py. */
#include <stdio.h>
#include <time.h>
#include <immintrin.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
    const long iterations = 300000000L;
    __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(1), a1 = _mm256_set1_ps(2), a2 = _mm256_set1_ps(3), a3 = _mm256_set1_ps(4),
           a4 = _mm256_set1_ps(5), a5 = _mm256_set1_ps(6), a6 = _mm256_set1_ps(7), a7 = _mm256_set1_ps(8),
           a8 = _mm256_set1_ps(9), a9 = _mm256_set1_ps(10);
    double t = cpu_seconds();
    for (long i = 0; i < iterations; i++) {
        a0 = _mm256_fmadd_ps(a0, b, c); a1 = _mm256_fmadd_ps(a1, b, c); a2 = _mm256_fmadd_ps(a2, b, c);
        a3 = _mm256_fmadd_ps(a3, b, c); a4 = _mm256_fmadd_ps(a4, b, c); a5 = _mm256_fmadd_ps(a5, b, c);
        a6 = _mm256_fmadd_ps(a6, b, c); a7 = _mm256_fmadd_ps(a7, b, c); a8 = _mm256_fmadd_ps(a8, b, c);
        a9 = _mm256_fmadd_ps(a9, b, c);
    }
    t = cpu_seconds() - t;
    /* use every chain, so none is optimised away */
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(_mm256_add_ps(a6, a7),
                                                                                _mm256_add_ps(a8, a9))));
    float out[8];
    _mm256_storeu_ps(out, s);
    fprintf(stderr, "checksum %g\n", out[0]);
    printf("%.3f\n", iterations * 10.0 * 16.0 / t / 1e9);
    return 0;
}
