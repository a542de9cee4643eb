/* vexp.h — a vectorized e^x for AVX2 and AVX-512, within VEXP_ULP_BOUND ulp
   of libm's expf. Tangled from chapters/ch08_fused_timing.nw. */
#ifndef VEXP_H
#define VEXP_H
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include "harness/options.h"   /* fa_isa, the FA_ISA cap */
#define VEXP_INLINE static inline __attribute__((always_inline))
#define VEXP_LOWEST  (-104.0f)   /* e^x rounds to 0 below about -103.97     */
#define VEXP_HIGHEST   88.8f     /* e^x overflows above about 88.72         */
#define VEXP_LOG2E     1.44269504088896341f
#define VEXP_LN2_HI    0.693359375f        /* ln 2, high part: 9 bits          */
#define VEXP_LN2_LO   (-2.12194440e-4f)    /* ln 2 - VEXP_LN2_HI               */
#define VEXP_P0 1.9875691500e-4f
#define VEXP_P1 1.3981999507e-3f
#define VEXP_P2 8.3334519073e-3f
#define VEXP_P3 4.1665795894e-2f
#define VEXP_P4 1.6666665459e-1f
#define VEXP_P5 5.0000001201e-1f
#define VEXP_ULP_BOUND 1   /* ulps from libm's expf, every float input */
VEXP_INLINE __attribute__((target("avx512f"))) __m512 vexp16(__m512 x)
{
    x = _mm512_min_ps(_mm512_set1_ps(VEXP_HIGHEST), _mm512_max_ps(_mm512_set1_ps(VEXP_LOWEST), x));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(VEXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(VEXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(VEXP_LN2_LO), r);
    __m512 p = _mm512_set1_ps(VEXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, k);
}
VEXP_INLINE __attribute__((target("avx2,fma"))) __m256 vexp8(__m256 x)
{
    x = _mm256_min_ps(_mm256_set1_ps(VEXP_HIGHEST), _mm256_max_ps(_mm256_set1_ps(VEXP_LOWEST), x));
    __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(VEXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(VEXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(VEXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(VEXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i ki = _mm256_cvtps_epi32(k), bias = _mm256_set1_epi32(127);
    const __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
    const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
}
typedef enum { VEXP_ISA_SCALAR = FA_ISA_SCALAR, VEXP_ISA_AVX2 = FA_ISA_AVX2,
               VEXP_ISA_AVX512 = FA_ISA_AVX512 } vexp_isa;
bool     vexp_isa_available(vexp_isa isa);   /* on the CPU and under FA_ISA */
vexp_isa vexp_best_isa(void);    /* the widest available */
/* y[i] = e^x[i] for i < n (y may be x) */
void     vexp_array(vexp_isa isa, const float *x, float *y, size_t n);
#endif
