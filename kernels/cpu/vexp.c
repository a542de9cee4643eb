/* vexp.c — the array versions of the vectorized exponential.
   Tangled from chapters/ch08_fused_timing.nw. */
#include <math.h>
#include "cpu/vexp.h"
bool vexp_isa_available(vexp_isa isa) { return fa_isa_allowed(NULL, (fa_isa)isa); }

vexp_isa vexp_best_isa(void) { return (vexp_isa)fa_isa_widest(NULL); }
__attribute__((target("avx512f")))
static void vexp_array16(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, vexp16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 lanes = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, lanes, vexp16(_mm512_maskz_loadu_ps(lanes, x + i)));
    }
}
__attribute__((target("avx2,fma")))
static void vexp_array8(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, vexp8(_mm256_loadu_ps(x + i)));
    float tail[8] = { 0 };
    for (size_t t = 0; i + t < n; t++) tail[t] = x[i + t];
    _mm256_storeu_ps(tail, vexp8(_mm256_loadu_ps(tail)));
    for (size_t t = 0; i + t < n; t++) y[i + t] = tail[t];
}
void vexp_array(vexp_isa isa, const float *x, float *y, size_t n)
{
    if (isa == VEXP_ISA_AVX512) vexp_array16(x, y, n);
    else if (isa == VEXP_ISA_AVX2) vexp_array8(x, y, n);
    else for (size_t i = 0; i < n; i++) y[i] = expf(x[i]);
}
