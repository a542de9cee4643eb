/* vec.h — one vector width as a kernel written once for every width sees it:
   W lanes of type V, FN(name) for its copy of a function, VI for its family of
   intrinsics, the operations VZERO ... VKEEP, and ALWAYS and UNROLL. A kernel
   defines VEC_WIDTH as 1 (portable C), 8 (AVX2) or 16 (AVX-512) and includes it
   once per width, after <immintrin.h> and <math.h>, a vector width under its
   #pragma GCC target; cpu/vec_end.h releases the names of the width.
   Tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
#ifndef VEC_H
#define VEC_H
#define ALWAYS static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
#endif
#if VEC_WIDTH == 1
#define W 1
#define V float
#define FN(name) name##_scalar
#define VZERO() 0.0f
#define VLOAD(p) (*(p))
#define VSTORE(p, x) (*(p) = (x))
#define VSET1(x) (x)
#define VFMA(a, b, c) fmaf(a, b, c)
#define VMUL(a, b) ((a) * (b))
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMAX(a, b) fmaxf(a, b)
#define VEXP(x) expf(x)
#define VHMAX(x) (x)
#define VHSUM(x) (x)
#elif VEC_WIDTH == 8
#define W 8
#define V __m256
#define FN(name) name##_avx2
#define VI(op) _mm256_##op
#define VEXP(x) vexp8(x)
#define VHMAX(x) hmax8(x)
#define VHSUM(x) hsum8(x)
#define VKEEP(x, base, lo, hi) keep_lanes8(x, base, lo, hi)
static inline __attribute__((always_inline)) float hmax8(__m256 x)
{
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_max_ss(a, _mm_shuffle_ps(a, a, 1)));
}
static inline __attribute__((always_inline)) float hsum8(__m256 x)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(a, _mm_shuffle_ps(a, a, 1)));
}
static inline __attribute__((always_inline)) __m256 keep_lanes8(__m256 x, int base,
                                                                int lo, int hi)
{
    const __m256i key = _mm256_add_epi32(_mm256_set1_epi32(base),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), key),
                                           _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), key));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, _mm256_castsi256_ps(in));
}
#elif VEC_WIDTH == 16
#define W 16
#define V __m512
#define FN(name) name##_avx512
#define VI(op) _mm512_##op
#define VEXP(x) vexp16(x)
#define VHMAX(x) _mm512_reduce_max_ps(x)
#define VHSUM(x) _mm512_reduce_add_ps(x)
#define VKEEP(x, base, lo, hi) keep_lanes16(x, base, lo, hi)
static inline __attribute__((always_inline)) __m512 keep_lanes16(__m512 x, int base,
                                                                 int lo, int hi)
{
    const __m512i key = _mm512_add_epi32(_mm512_set1_epi32(base),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __mmask16 in = _mm512_cmpge_epi32_mask(key, _mm512_set1_epi32(lo))
                       & _mm512_cmplt_epi32_mask(key, _mm512_set1_epi32(hi));
    return _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), in, x);
}
#else
#error "cpu/vec.h: define VEC_WIDTH as 1, 8 or 16 first"
#endif
#if VEC_WIDTH > 1
#define VZERO() VI(setzero_ps)()
#define VLOAD(p) VI(loadu_ps)(p)
#define VSTORE(p, x) VI(storeu_ps)(p, x)
#define VSET1(x) VI(set1_ps)(x)
#define VFMA(a, b, c) VI(fmadd_ps)(a, b, c)
#define VMUL(a, b) VI(mul_ps)(a, b)
#define VADD(a, b) VI(add_ps)(a, b)
#define VSUB(a, b) VI(sub_ps)(a, b)
#define VMAX(a, b) VI(max_ps)(a, b)
#endif
