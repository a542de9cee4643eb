/* amx_attention.c — bf16 FlashAttention-2 on four engines.
   Tangled from chapters/ch11_amx.nw. */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "cpu/amx_attention.h"
#include "cpu/workers.h"
typedef struct {
    size_t nq, nk, d, dpad, chunks, blocks;   /* dpad = 32 * chunks >= d; blocks of 32 keys */
    size_t step;                              /* blocks in a softmax step: chunks */
} amx_shape;

static amx_shape amx_shape_of(const attn_params *p)
{
    const size_t chunks = (p->d + 31) / 32;
    return (amx_shape){ p->nq, p->nk, p->d, 32 * chunks, chunks, (p->nk + 31) / 32, chunks };
}
typedef struct { float m[AMX_TILE_ROWS], l[AMX_TILE_ROWS][16]; } amx_rows;

static inline float max_of(float a, float b) { return isnan(a) || isnan(b) ? NAN : fmaxf(a, b); }
typedef struct { uint32_t tile[8][AMX_TILE_ROWS * AMX_TILE_COLS]; } amx_tile_file;

typedef struct amx_engine_state {
    amx_tile_file tiles;
    const bf16 *q;                        /* the vector engines' queries */
} amx_engine_state;

typedef struct {
    void (*load_q)(amx_engine_state *, const bf16 *, size_t);
    void (*scores)(amx_engine_state *, const bf16 *, size_t, float *, size_t);
    void (*values)(amx_engine_state *, const bf16 *, const bf16 *const *, size_t, size_t, float *);
    void (*softmax_rows)(const float *, size_t, size_t, const uint32_t *, float, amx_rows *, bf16 *,
                         float *);
    void (*add_values)(float *, const float *, const float *, size_t);
    bool tiles;                           /* configure and release AMX's tiles */
    bool hw_round;                        /* round with VCVTNE2PS2BF16 */
    void (*scores_pair)(amx_engine_state *, const bf16 *, const bf16 *, size_t, float *, float *, size_t);
    void (*values_pair)(amx_engine_state *, const bf16 *, const bf16 *, const bf16 *const *, size_t,
                        size_t, float *, float *);   /* NULL: two slices one after the other */
} amx_engine;
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, ptr, stride) _tile_loadd(t, ptr, stride)
#define TILE_STORE(t, ptr, stride) _tile_stored(t, ptr, stride)
#define TILE_DOT(c, a, b) _tile_dpbf16ps(c, a, b)
#define TILE_LOAD_Q(c, ptr, stride) do { switch (c) { \
    case 0: _tile_loadd(0, ptr, stride); break; case 1: _tile_loadd(1, ptr, stride); break; \
    case 2: _tile_loadd(2, ptr, stride); break; default: _tile_loadd(3, ptr, stride); } } while (0)
#define TILE_DOT_Q(acc, c, b) do { switch (c) { \
    case 0: _tile_dpbf16ps(acc, 0, b); break; case 1: _tile_dpbf16ps(acc, 1, b); break; \
    case 2: _tile_dpbf16ps(acc, 2, b); break; default: _tile_dpbf16ps(acc, 3, b); } } while (0)
__attribute__((target("amx-tile,amx-bf16")))
static void amx_hw_load_q(amx_engine_state *e, const bf16 *qa, size_t chunks)
{
    (void)e;
    for (size_t c = 0; c < chunks; c++) TILE_LOAD_Q(c, qa + c * AMX_TILE_ELEMS, AMX_TILE_BYTES);
}

__attribute__((target("amx-tile,amx-bf16")))
static void amx_hw_scores(amx_engine_state *e, const bf16 *kb, size_t chunks, float *s, size_t ld)
{
    (void)e;
    TILE_ZERO(4);
    TILE_ZERO(5);
    for (size_t c = 0; c < chunks; c++) {
        TILE_LOAD(6, kb + (2 * c) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
        TILE_LOAD(7, kb + (2 * c + 1) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
        TILE_DOT_Q(4, c, 6);
        TILE_DOT_Q(5, c, 7);
    }
    TILE_STORE(4, s, ld * sizeof(float));
    TILE_STORE(5, s + 16, ld * sizeof(float));
}

__attribute__((target("amx-tile,amx-bf16")))
static void amx_hw_values(amx_engine_state *e, const bf16 *p, const bf16 *const *vb, size_t blocks,
                          size_t dpad, float *pv)
{
    (void)e;
    if (dpad == 64) {
        TILE_ZERO(4);
        TILE_ZERO(5);
        TILE_ZERO(2);
        TILE_ZERO(3);
        for (size_t b = 0; b < blocks; b++) {
            TILE_LOAD(6, p + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(7, vb[b], AMX_TILE_BYTES);
            TILE_DOT(4, 6, 7);
            TILE_LOAD(7, vb[b] + AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(5, 6, 7);
            TILE_LOAD(7, vb[b] + 2 * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(2, 6, 7);
            TILE_LOAD(7, vb[b] + 3 * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(3, 6, 7);
        }
        TILE_STORE(4, pv, dpad * sizeof(float));
        TILE_STORE(5, pv + 16, dpad * sizeof(float));
        TILE_STORE(2, pv + 32, dpad * sizeof(float));
        TILE_STORE(3, pv + 48, dpad * sizeof(float));
    } else for (size_t j = 0; j < dpad / 16; j += 2) {
        TILE_ZERO(4);
        TILE_ZERO(5);
        for (size_t b = 0; b < blocks; b++) {
            TILE_LOAD(6, p + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(7, vb[b] + j * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(4, 6, 7);
            TILE_LOAD(7, vb[b] + (j + 1) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(5, 6, 7);
        }
        TILE_STORE(4, pv + 16 * j, dpad * sizeof(float));
        TILE_STORE(5, pv + 16 * (j + 1), dpad * sizeof(float));
    }
}
__attribute__((target("amx-tile,amx-bf16")))
static void amx_hw_scores_pair(amx_engine_state *e, const bf16 *qb, const bf16 *kb, size_t chunks,
                               float *sa, float *sb, size_t ld)
{
    (void)e;
    for (size_t h = 0; h < 2; h++) {
        TILE_ZERO(4);
        TILE_ZERO(5);
        for (size_t c = 0; c < chunks; c++) {
            TILE_LOAD(6, kb + (2 * c + h) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(7, qb + c * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT_Q(4, c, 6);
            TILE_DOT(5, 7, 6);
        }
        TILE_STORE(4, sa + 16 * h, ld * sizeof(float));
        TILE_STORE(5, sb + 16 * h, ld * sizeof(float));
    }
}

__attribute__((target("amx-tile,amx-bf16")))
static void amx_hw_values_pair(amx_engine_state *e, const bf16 *pa, const bf16 *pb, const bf16 *const *vb,
                               size_t blocks, size_t dpad, float *pva, float *pvb)
{
    (void)e;
    for (size_t j = 0; j < dpad / 16; j += 2) {
        TILE_ZERO(0);
        TILE_ZERO(1);
        TILE_ZERO(2);
        TILE_ZERO(3);
        for (size_t b = 0; b < blocks; b++) {
            TILE_LOAD(4, pa + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(5, pb + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(6, vb[b] + j * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(0, 4, 6);
            TILE_DOT(2, 5, 6);
            TILE_LOAD(7, vb[b] + (j + 1) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(1, 4, 7);
            TILE_DOT(3, 5, 7);
        }
        TILE_STORE(0, pva + 16 * j, dpad * sizeof(float));
        TILE_STORE(1, pva + 16 * (j + 1), dpad * sizeof(float));
        TILE_STORE(2, pvb + 16 * j, dpad * sizeof(float));
        TILE_STORE(3, pvb + 16 * (j + 1), dpad * sizeof(float));
    }
}
#undef TILE_ZERO
#undef TILE_LOAD
#undef TILE_STORE
#undef TILE_DOT
#undef TILE_LOAD_Q
#undef TILE_DOT_Q
static void emu_load(amx_tile_file *f, int t, const void *ptr, size_t stride)
{
    for (size_t r = 0; r < AMX_TILE_ROWS; r++)
        memcpy(f->tile[t] + r * AMX_TILE_COLS, (const char *)ptr + r * stride, AMX_TILE_BYTES);
}

static void emu_store(const amx_tile_file *f, int t, void *ptr, size_t stride)
{
    for (size_t r = 0; r < AMX_TILE_ROWS; r++)
        memcpy((char *)ptr + r * stride, f->tile[t] + r * AMX_TILE_COLS, AMX_TILE_BYTES);
}
static void emu_dot(amx_tile_file *f, int c, int a, int b)
{
    amx_tile_dot((float *)f->tile[c], AMX_TILE_COLS, (const bf16 *)f->tile[a], 32,
                 (const bf16 *)f->tile[b], 32, AMX_TILE_ROWS, AMX_TILE_COLS, AMX_TILE_COLS);
}

#define TILE_ZERO(t) memset(e->tiles.tile[t], 0, sizeof e->tiles.tile[t])
#define TILE_LOAD(t, ptr, stride) emu_load(&e->tiles, t, ptr, stride)
#define TILE_STORE(t, ptr, stride) emu_store(&e->tiles, t, ptr, stride)
#define TILE_DOT(c, a, b) emu_dot(&e->tiles, c, a, b)
#define TILE_LOAD_Q(c, ptr, stride) emu_load(&e->tiles, (int)(c), ptr, stride)
#define TILE_DOT_Q(acc, c, b) emu_dot(&e->tiles, acc, (int)(c), b)
static void emu_load_q(amx_engine_state *e, const bf16 *qa, size_t chunks)
{
    for (size_t c = 0; c < chunks; c++) TILE_LOAD_Q(c, qa + c * AMX_TILE_ELEMS, AMX_TILE_BYTES);
}

static void emu_scores(amx_engine_state *e, const bf16 *kb, size_t chunks, float *s, size_t ld)
{
    TILE_ZERO(4);
    TILE_ZERO(5);
    for (size_t c = 0; c < chunks; c++) {
        TILE_LOAD(6, kb + (2 * c) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
        TILE_LOAD(7, kb + (2 * c + 1) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
        TILE_DOT_Q(4, c, 6);
        TILE_DOT_Q(5, c, 7);
    }
    TILE_STORE(4, s, ld * sizeof(float));
    TILE_STORE(5, s + 16, ld * sizeof(float));
}

static void emu_values(amx_engine_state *e, const bf16 *p, const bf16 *const *vb, size_t blocks,
                       size_t dpad, float *pv)
{
    if (dpad == 64) {
        TILE_ZERO(4);
        TILE_ZERO(5);
        TILE_ZERO(2);
        TILE_ZERO(3);
        for (size_t b = 0; b < blocks; b++) {
            TILE_LOAD(6, p + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(7, vb[b], AMX_TILE_BYTES);
            TILE_DOT(4, 6, 7);
            TILE_LOAD(7, vb[b] + AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(5, 6, 7);
            TILE_LOAD(7, vb[b] + 2 * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(2, 6, 7);
            TILE_LOAD(7, vb[b] + 3 * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(3, 6, 7);
        }
        TILE_STORE(4, pv, dpad * sizeof(float));
        TILE_STORE(5, pv + 16, dpad * sizeof(float));
        TILE_STORE(2, pv + 32, dpad * sizeof(float));
        TILE_STORE(3, pv + 48, dpad * sizeof(float));
    } else for (size_t j = 0; j < dpad / 16; j += 2) {
        TILE_ZERO(4);
        TILE_ZERO(5);
        for (size_t b = 0; b < blocks; b++) {
            TILE_LOAD(6, p + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(7, vb[b] + j * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(4, 6, 7);
            TILE_LOAD(7, vb[b] + (j + 1) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(5, 6, 7);
        }
        TILE_STORE(4, pv + 16 * j, dpad * sizeof(float));
        TILE_STORE(5, pv + 16 * (j + 1), dpad * sizeof(float));
    }
}

static void emu_scores_pair(amx_engine_state *e, const bf16 *qb, const bf16 *kb, size_t chunks,
                            float *sa, float *sb, size_t ld)
{
    for (size_t h = 0; h < 2; h++) {
        TILE_ZERO(4);
        TILE_ZERO(5);
        for (size_t c = 0; c < chunks; c++) {
            TILE_LOAD(6, kb + (2 * c + h) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(7, qb + c * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT_Q(4, c, 6);
            TILE_DOT(5, 7, 6);
        }
        TILE_STORE(4, sa + 16 * h, ld * sizeof(float));
        TILE_STORE(5, sb + 16 * h, ld * sizeof(float));
    }
}

static void emu_values_pair(amx_engine_state *e, const bf16 *pa, const bf16 *pb, const bf16 *const *vb,
                            size_t blocks, size_t dpad, float *pva, float *pvb)
{
    for (size_t j = 0; j < dpad / 16; j += 2) {
        TILE_ZERO(0);
        TILE_ZERO(1);
        TILE_ZERO(2);
        TILE_ZERO(3);
        for (size_t b = 0; b < blocks; b++) {
            TILE_LOAD(4, pa + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(5, pb + b * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_LOAD(6, vb[b] + j * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(0, 4, 6);
            TILE_DOT(2, 5, 6);
            TILE_LOAD(7, vb[b] + (j + 1) * AMX_TILE_ELEMS, AMX_TILE_BYTES);
            TILE_DOT(1, 4, 7);
            TILE_DOT(3, 5, 7);
        }
        TILE_STORE(0, pva + 16 * j, dpad * sizeof(float));
        TILE_STORE(1, pva + 16 * (j + 1), dpad * sizeof(float));
        TILE_STORE(2, pvb + 16 * j, dpad * sizeof(float));
        TILE_STORE(3, pvb + 16 * (j + 1), dpad * sizeof(float));
    }
}
#undef TILE_ZERO
#undef TILE_LOAD
#undef TILE_STORE
#undef TILE_DOT
#undef TILE_LOAD_Q
#undef TILE_DOT_Q
static void vdp_load_q(amx_engine_state *e, const bf16 *qa, size_t chunks)
{
    (void)chunks;
    e->q = qa;
}
__attribute__((target("avx512f,avx512bf16")))
static void vdp_hw_scores(amx_engine_state *e, const bf16 *kb, size_t chunks, float *s, size_t ld)
{
    const uint32_t *q = (const uint32_t *)e->q, *k = (const uint32_t *)kb;
    for (size_t r0 = 0; r0 < AMX_TILE_ROWS; r0 += 4) {
        __m512 acc[4][2];
        for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
        for (size_t c = 0; c < chunks; c++)
            for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
                const __m512bh k0 = (__m512bh)_mm512_loadu_si512(k + (2 * c) * 256 + r * 16);
                const __m512bh k1 = (__m512bh)_mm512_loadu_si512(k + (2 * c + 1) * 256 + r * 16);
                for (int i = 0; i < 4; i++) {
                    const __m512bh qi = (__m512bh)_mm512_set1_epi32((int)q[c * 256 + (r0 + (size_t)i) * 16 + r]);
                    acc[i][0] = _mm512_dpbf16_ps(acc[i][0], k0, qi);
                    acc[i][1] = _mm512_dpbf16_ps(acc[i][1], k1, qi);
                }
            }
        for (int i = 0; i < 4; i++) {
            _mm512_storeu_ps(s + (r0 + (size_t)i) * ld, acc[i][0]);
            _mm512_storeu_ps(s + (r0 + (size_t)i) * ld + 16, acc[i][1]);
        }
    }
}
__attribute__((target("avx512f,avx512bf16")))
static void vdp_hw_values(amx_engine_state *e, const bf16 *p, const bf16 *const *vb, size_t blocks,
                          size_t dpad, float *pv)
{
    (void)e;
    const size_t groups = dpad / 16;
    for (size_t row = 0; row < AMX_TILE_ROWS; row += 2) {
        __m512 acc[2][8];
        for (size_t j = 0; j < 8; j++) acc[0][j] = acc[1][j] = _mm512_setzero_ps();
        for (size_t b = 0; b < blocks; b++) {
            const uint32_t *pp = (const uint32_t *)(p + b * AMX_TILE_ELEMS), *v = (const uint32_t *)vb[b];
            for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
                const __m512bh p0 = (__m512bh)_mm512_set1_epi32((int)pp[row * 16 + r]);
                const __m512bh p1 = (__m512bh)_mm512_set1_epi32((int)pp[(row + 1) * 16 + r]);
                for (size_t j = 0; j < groups; j++) {
                    const __m512bh vv = (__m512bh)_mm512_loadu_si512(v + j * 256 + r * 16);
                    acc[0][j] = _mm512_dpbf16_ps(acc[0][j], vv, p0);
                    acc[1][j] = _mm512_dpbf16_ps(acc[1][j], vv, p1);
                }
            }
        }
        for (size_t j = 0; j < groups; j++) {
            _mm512_storeu_ps(pv + row * dpad + 16 * j, acc[0][j]);
            _mm512_storeu_ps(pv + (row + 1) * dpad + 16 * j, acc[1][j]);
        }
    }
}
static void vdp_emu_scores(amx_engine_state *e, const bf16 *kb, size_t chunks, float *s, size_t ld)
{
    const uint32_t *q = (const uint32_t *)e->q, *k = (const uint32_t *)kb;
    for (size_t row = 0; row < AMX_TILE_ROWS; row++)
        for (size_t key = 0; key < 32; key++) {
            float acc = 0.0f;
            for (size_t c = 0; c < chunks; c++)
                for (size_t r = 0; r < AMX_TILE_ROWS; r++)
                    acc = bf16_dot_lane(acc, k[(2 * c + key / 16) * 256 + r * 16 + key % 16],
                                        q[c * 256 + row * 16 + r]);
            s[row * ld + key] = acc;
        }
}
static void vdp_emu_values(amx_engine_state *e, const bf16 *p, const bf16 *const *vb, size_t blocks,
                           size_t dpad, float *pv)
{
    (void)e;
    for (size_t row = 0; row < AMX_TILE_ROWS; row++)
        for (size_t col = 0; col < dpad; col++) {
            float acc = 0.0f;
            for (size_t b = 0; b < blocks; b++) {
                const uint32_t *pp = (const uint32_t *)(p + b * AMX_TILE_ELEMS), *v = (const uint32_t *)vb[b];
                for (size_t r = 0; r < AMX_TILE_ROWS; r++)
                    acc = bf16_dot_lane(acc, v[(col / 16) * 256 + r * 16 + col % 16], pp[row * 16 + r]);
            }
            pv[row * dpad + col] = acc;
        }
}
static const float EXP2_C1 = 0x1.62f5f8p-1f, EXP2_C2 = 0x1.f00bd0p-3f, EXP2_C3 = 0x1.c2a130p-5f;
static const float LOG2_E = 0x1.715476p+0f;

float amx_exp2(float t)
{
    if (isnan(t)) return t;
    if (t >= 128.0f) return INFINITY;        /* VSCALEFPS overflows, +inf included */
    t = -127.0f > t ? -127.0f : t;
    const float n = nearbyintf(t), f = t - n;
    return ldexpf(fmaf(fmaf(fmaf(EXP2_C3, f, EXP2_C2), f, EXP2_C1), f, 1.0f), (int)n);
}

__attribute__((target("avx512f")))
static inline __m512 exp2_16(__m512 t)
{
    t = _mm512_max_ps(_mm512_set1_ps(-127.0f), t);
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(EXP2_C3), f, _mm512_set1_ps(EXP2_C2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(EXP2_C1));
    return _mm512_scalef_ps(_mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f)), n);
}

__attribute__((target("avx512f")))
void amx_exp2_hw16(const float t[16], float out[16])
{
    _mm512_storeu_ps(out, exp2_16(_mm512_loadu_ps(t)));
}
__attribute__((target("avx512f")))
static __m512 row_maxima(const __m512 h[AMX_TILE_ROWS])
{
    __m512 g[8], f[4], e[2];
    for (int i = 0; i < 8; i++)
        g[i] = _mm512_max_ps(_mm512_shuffle_f32x4(h[2 * i], h[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(h[2 * i], h[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int j = 0; j < 4; j++)
        f[j] = _mm512_max_ps(_mm512_shuffle_f32x4(g[2 * j], g[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(g[2 * j], g[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int k = 0; k < 2; k++)
        e[k] = _mm512_max_ps(_mm512_unpacklo_ps(f[2 * k], f[2 * k + 1]),
                             _mm512_unpackhi_ps(f[2 * k], f[2 * k + 1]));
    const __m512 m = _mm512_max_ps(_mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(e[0], e[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512i lane_of_row = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    return _mm512_permutexvar_ps(lane_of_row, m);
}
__attribute__((target("avx512f,avx512bf16")))
static void softmax_rows_hw(const float *s, size_t ld, size_t blocks, const uint32_t *visible, float scale,
                            amx_rows *rows, bf16 *p, float *alpha)
{
    float base_log2e[AMX_TILE_ROWS];
    __m512 x[AMX_TILE_ROWS][2 * AMX_STEP_BLOCKS], wider[AMX_TILE_ROWS];
    for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
        const __m512 inf = _mm512_set1_ps(-INFINITY), sc = _mm512_set1_ps(scale);
        wider[r] = inf;
        for (size_t h = 0; h < 2 * blocks; h++) {
            const __mmask16 seen = (__mmask16)(visible[r * AMX_STEP_BLOCKS + h / 2] >> (16 * (h % 2)));
            x[r][h] = _mm512_mask_mul_ps(inf, seen, _mm512_loadu_ps(s + r * ld + 16 * h), sc);
            wider[r] = _mm512_max_ps(wider[r], x[r][h]);
        }
    }
    const __m512 m_old = _mm512_loadu_ps(rows->m), m_new = _mm512_max_ps(row_maxima(wider), m_old);
    const __m512 b16 = _mm512_mask_mov_ps(m_new, _mm512_cmp_ps_mask(m_new, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ),
                                          _mm512_setzero_ps());
    const __m512 l2e = _mm512_set1_ps(LOG2_E);
    _mm512_storeu_ps(base_log2e, _mm512_mul_ps(b16, l2e));
    _mm512_storeu_ps(alpha, exp2_16(_mm512_mul_ps(_mm512_sub_ps(m_old, b16), l2e)));
    _mm512_storeu_ps(rows->m, m_new);
    const __m512 log2e = _mm512_set1_ps(LOG2_E);
    const __m512bh ones = (__m512bh)_mm512_set1_epi16(0x3f80);
    for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
        const __m512 b = _mm512_set1_ps(base_log2e[r]);
        __m512 sums = _mm512_mul_ps(_mm512_loadu_ps(rows->l[r]), _mm512_set1_ps(alpha[r]));
        for (size_t j = 0; j < blocks; j++) {
            const __m512bh pb = _mm512_cvtne2ps_pbh(exp2_16(_mm512_fmsub_ps(x[r][2 * j + 1], log2e, b)),
                                                    exp2_16(_mm512_fmsub_ps(x[r][2 * j], log2e, b)));
            _mm512_storeu_si512(p + j * AMX_TILE_ELEMS + r * 32, (__m512i)pb);
            sums = _mm512_dpbf16_ps(sums, pb, ones);
        }
        _mm512_storeu_ps(rows->l[r], sums);
    }
}
static void softmax_row_emu(const float *s, size_t keys, const uint32_t *visible, float scale, float *m,
                            float l[16], bf16 *p, float *alpha)
{
    float x[32 * AMX_STEP_BLOCKS], mx = -INFINITY;
    for (size_t j = 0; j < keys; j++) {
        x[j] = (visible[j / 32] >> (j % 32)) & 1u ? s[j] * scale : -INFINITY;
        mx = max_of(mx, x[j]);
    }
    const float m_new = max_of(*m, mx), base = m_new == -INFINITY ? 0.0f : m_new;
    const float base_log2e = base * LOG2_E;
    *alpha = amx_exp2((*m - base) * LOG2_E);
    for (size_t j = 0; j < keys; j++)
        p[j / 32 * AMX_TILE_ELEMS + j % 32] = bf16_round(amx_exp2(fmaf(x[j], LOG2_E, -base_log2e)));
    for (int t = 0; t < 16; t++) l[t] *= *alpha;
    for (size_t b = 0; b < keys / 32; b++)
        for (int t = 0; t < 16; t++) {
            const bf16 *pair = p + b * AMX_TILE_ELEMS + 2 * t;
            l[t] = bf16_dot_lane(l[t], (uint32_t)pair[0] | (uint32_t)pair[1] << 16, 0x3f803f80u);
        }
    *m = m_new;
}
static void softmax_rows_emu(const float *s, size_t ld, size_t blocks, const uint32_t *visible, float scale,
                             amx_rows *rows, bf16 *p, float *alpha)
{
    for (size_t r = 0; r < AMX_TILE_ROWS; r++)
        softmax_row_emu(s + r * ld, 32 * blocks, visible + r * AMX_STEP_BLOCKS, scale, &rows->m[r], rows->l[r],
                        p + r * 32, &alpha[r]);
}
static void add_block_values(float *o, const float *pv, const float *alpha, size_t dpad)
{
    for (size_t r = 0; r < AMX_TILE_ROWS; r++)
        for (size_t c = 0; c < dpad; c++)
            o[r * dpad + c] = fmaf(o[r * dpad + c], alpha[r], pv[r * dpad + c]);
}

static float amx_row_sum(const float partial[16])
{
    float l[16];
    memcpy(l, partial, sizeof l);
    for (int w = 8; w > 0; w /= 2)
        for (int t = 0; t < w; t++) l[t] += l[t + w];
    return l[0];
}
__attribute__((target("avx512f")))
static void add_block_values_hw(float *o, const float *pv, const float *alpha, size_t dpad)
{
    for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
        const __m512 a = _mm512_set1_ps(alpha[r]);
        for (size_t c = 0; c < dpad; c += 16)
            _mm512_storeu_ps(o + r * dpad + c, _mm512_fmadd_ps(_mm512_loadu_ps(o + r * dpad + c), a,
                                                               _mm512_loadu_ps(pv + r * dpad + c)));
    }
}
static const amx_engine ENGINES[AMX_ENGINES] = {
    [AMX_KERNEL_AMX] = { amx_hw_load_q, amx_hw_scores, amx_hw_values, softmax_rows_hw,
                         add_block_values_hw, true, true, amx_hw_scores_pair, amx_hw_values_pair },
    [AMX_KERNEL_AVX512BF16] = { vdp_load_q, vdp_hw_scores, vdp_hw_values, softmax_rows_hw,
                                add_block_values_hw, false, true },
    [AMX_KERNEL_EMULATED] = { emu_load_q, emu_scores, emu_values, softmax_rows_emu,
                              add_block_values, false, false, emu_scores_pair, emu_values_pair },
    [AMX_KERNEL_EMULATED_VDP] = { vdp_load_q, vdp_emu_scores, vdp_emu_values, softmax_rows_emu,
                                  add_block_values, false, false },
};
static void round_row(bool hw, const float *x, size_t n, size_t width, bf16 *out)
{
    size_t i = 0;
    if (hw) {
        float tail[32] = { 0 };
        for (; i + 32 <= n; i += 32) bf16_hw_round32(x + i, out + i);
        if (i < n) {
            memcpy(tail, x + i, (n - i) * sizeof(float));
            bf16_hw_round32(tail, out + i);
            i += 32;
        }
    } else
        for (; i < n; i++) out[i] = bf16_round(x[i]);
    for (; i < width; i++) out[i] = 0;
}
static void pack_key_block(const amx_shape *sh, bool hw, const float *k, size_t k0, bf16 *out)
{
    bf16 row[128];
    uint32_t *words = (uint32_t *)out, pairs[64];
    for (size_t key = 0; key < 32; key++) {
        const bool in = k0 + key < sh->nk;
        round_row(hw, k + (in ? (k0 + key) * sh->d : 0), in ? sh->d : 0, sh->dpad, row);
        memcpy(pairs, row, sh->dpad * sizeof(bf16));
        for (size_t c = 0; c < sh->chunks; c++)
            for (size_t r = 0; r < AMX_TILE_ROWS; r++)
                words[(2 * c + key / 16) * 256 + r * 16 + key % 16] = pairs[c * 16 + r];
    }
}
static void pack_value_block(const amx_shape *sh, bool hw, const float *v, size_t k0, bf16 *out)
{
    bf16 even[128], odd[128];
    uint32_t *words = (uint32_t *)out;
    for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
        const size_t key = k0 + 2 * r;
        round_row(hw, v + (key < sh->nk ? key * sh->d : 0), key < sh->nk ? sh->d : 0, sh->dpad, even);
        round_row(hw, v + (key + 1 < sh->nk ? (key + 1) * sh->d : 0), key + 1 < sh->nk ? sh->d : 0,
                  sh->dpad, odd);
        for (size_t col = 0; col < sh->dpad; col++)
            words[(col / 16) * 256 + r * 16 + col % 16] = (uint32_t)even[col] | (uint32_t)odd[col] << 16;
    }
}
static void pack_query_slice(const amx_shape *sh, bool hw, const float *q, size_t q0, bf16 *out)
{
    bf16 row[128];
    for (size_t r = 0; r < AMX_TILE_ROWS; r++) {
        const bool in = q0 + r < sh->nq;
        round_row(hw, q + (in ? (q0 + r) * sh->d : 0), in ? sh->d : 0, sh->dpad, row);
        for (size_t c = 0; c < sh->chunks; c++) memcpy(out + c * AMX_TILE_ELEMS + r * 32, row + 32 * c, 64);
    }
}
void amx_pack_values(size_t nk, size_t d, const float *v, size_t k0, bf16 *out)
{
    const attn_params p = attn_default(1, 1, 1, nk, d);
    const amx_shape sh = amx_shape_of(&p);
    pack_value_block(&sh, false, v, k0, out);
}
typedef struct amx_job {
    const attn_params *p;
    const amx_engine *engine;
    amx_shape shape;
    const float *q, *k, *v;
    float *o;
    bf16 *packed_k, *packed_v;
    size_t heads, items;
    atomic_size_t next;
    int phase;                               /* 0: pack, 1: attend */
} amx_job;
static uint32_t visible_keys(const amx_job *job, attn_tile_kind kind, size_t i, size_t k0)
{
    if (kind == ATTN_TILE_FULL && k0 + 32 <= job->shape.nk) return 0xffffffffu;
    if (i >= job->shape.nq) return 0;
    const long long row = (long long)i - (long long)k0, w = job->p->window;
    long long lo = 0, hi = job->shape.nk - k0 < 32 ? (long long)(job->shape.nk - k0) : 32;
    if ((job->p->causal || w > 0) && row + 1 < hi) hi = row + 1;
    if (w > 0 && row - w + 1 > lo) lo = row - w + 1;
    if (lo >= hi) return 0;
    return (hi == 32 ? 0xffffffffu : (1u << hi) - 1) & ~((1u << lo) - 1);
}
static attn_tile_kind block_kind(const amx_job *job, size_t q0, size_t rows, size_t b)
{
    const size_t keys = job->shape.nk - 32 * b < 32 ? job->shape.nk - 32 * b : 32;
    return attn_tile_classify(job->p, q0, rows, 32 * b, keys);
}

static size_t next_block(const amx_job *job, size_t q0, size_t rows, size_t b)
{
    while (b < job->shape.blocks && block_kind(job, q0, rows, b) == ATTN_TILE_SKIPPED) b++;
    return b;
}

static const bf16 *key_block(const amx_job *job, size_t head, size_t b)
{
    return job->packed_k + (head * job->shape.blocks + b) * job->shape.dpad * 32;
}
typedef struct {
    size_t count, next, block[AMX_STEP_BLOCKS];
    const bf16 *keys[AMX_STEP_BLOCKS], *values[AMX_STEP_BLOCKS];
} amx_step;

static void gather_step(const amx_job *job, size_t head, size_t q0, size_t rows, size_t from, amx_step *st)
{
    st->count = 0;
    for (size_t b = next_block(job, q0, rows, from); b < job->shape.blocks && st->count < job->shape.step;
         b = next_block(job, q0, rows, b + 1)) {
        st->block[st->count] = b;
        st->keys[st->count] = key_block(job, head, b);
        st->values[st->count++] = job->packed_v + (head * job->shape.blocks + b) * job->shape.dpad * 32;
        from = b + 1;
    }
    st->next = from;
}
typedef struct {
    _Alignas(64) bf16 qa[4 * AMX_TILE_ELEMS];
    bf16 p[2][AMX_STEP_BLOCKS * AMX_TILE_ELEMS];                 /* steps in flight */
    float s[2][AMX_TILE_ROWS * 32 * AMX_STEP_BLOCKS], alpha[4][AMX_TILE_ROWS];
    float pv[2][AMX_TILE_ROWS * 128], o[AMX_TILE_ROWS * 128];
    amx_rows state;
    amx_step step[4];                                            /* step i is step[i % 4] */
    size_t head, q0, rows, first, computed, steps;              /* rows: 16, or fewer at the end */
} amx_slice;
typedef struct {
    amx_engine_state engine;
    amx_slice slice[2];
    size_t computed, skipped;
} amx_workspace;

typedef struct { amx_job *job; amx_workspace *w; } amx_thread;
static void start_scores(const amx_job *job, amx_engine_state *e, amx_slice *const *sl, size_t count, size_t k)
{
    const amx_shape *sh = &job->shape;
    const size_t ld = 32 * sh->step;
    if (count == 2 && job->engine->scores_pair) {
        const amx_step *st = &sl[0]->step[k % 4];
        job->engine->load_q(e, sl[0]->qa, sh->chunks);
        for (size_t j = 0; j < st->count; j++)
            job->engine->scores_pair(e, sl[1]->qa, st->keys[j], sh->chunks, sl[0]->s[k % 2] + 32 * j,
                                     sl[1]->s[k % 2] + 32 * j, ld);
    } else for (size_t g = 0; g < count; g++) {
        const amx_step *st = &sl[g]->step[k % 4];
        job->engine->load_q(e, sl[g]->qa, sh->chunks);
        for (size_t j = 0; j < st->count; j++)
            job->engine->scores(e, st->keys[j], sh->chunks, sl[g]->s[k % 2] + 32 * j, ld);
    }
}
static void weigh_values(const amx_job *job, amx_engine_state *e, amx_slice *const *sl, size_t count, size_t k)
{
    const size_t dpad = job->shape.dpad;
    if (count == 2 && job->engine->values_pair) {
        const amx_step *st = &sl[0]->step[k % 4];
        job->engine->values_pair(e, sl[0]->p[k % 2], sl[1]->p[k % 2], st->values, st->count, dpad,
                                 sl[0]->pv[k % 2], sl[1]->pv[k % 2]);
    } else for (size_t g = 0; g < count; g++) {
        const amx_step *st = &sl[g]->step[k % 4];
        job->engine->values(e, sl[g]->p[k % 2], st->values, st->count, dpad, sl[g]->pv[k % 2]);
    }
}
static void make_probabilities(const amx_job *job, amx_slice *sl, size_t i)
{
    const amx_step *st = &sl->step[i % 4];
    uint32_t visible[AMX_TILE_ROWS * AMX_STEP_BLOCKS];
    for (size_t j = 0; j < st->count; j++) {
        const attn_tile_kind kind = block_kind(job, sl->q0, sl->rows, st->block[j]);
        for (size_t r = 0; r < AMX_TILE_ROWS; r++)
            visible[r * AMX_STEP_BLOCKS + j] = visible_keys(job, kind, sl->q0 + r, 32 * st->block[j]);
    }
    job->engine->softmax_rows(sl->s[i % 2], 32 * job->shape.step, st->count, visible, job->p->scale,
                              &sl->state, sl->p[i % 2], sl->alpha[i % 4]);
}
static void finish_slice(const amx_job *job, amx_workspace *w, const amx_slice *sl)
{
    const amx_shape *sh = &job->shape;
    for (size_t r = 0; r < sl->rows; r++) {
        const float l = amx_row_sum(sl->state.l[r]);
        const bool sees = attn_row_sees_a_key(job->p, sl->q0 + r);
        float *out = job->o + (sl->head * sh->nq + sl->q0 + r) * sh->d;
        for (size_t c = 0; c < sh->d; c++) out[c] = sees ? sl->o[r * sh->dpad + c] / l : 0.0f;
    }
    w->computed += sl->computed;
    w->skipped += sh->blocks - sl->computed;
}
static void start_slice(const amx_job *job, amx_slice *sl, size_t head, size_t q0)
{
    const amx_shape *sh = &job->shape;
    sl->head = head;
    sl->q0 = q0;
    sl->rows = sh->nq - q0 < 16 ? sh->nq - q0 : 16;
    sl->computed = 0;
    pack_query_slice(sh, job->engine->hw_round, job->q + head * sh->nq * sh->d, q0, sl->qa);
    for (size_t r = 0; r < AMX_TILE_ROWS; r++) sl->state.m[r] = -INFINITY;
    memset(sl->state.l, 0, sizeof sl->state.l);
    memset(sl->o, 0, AMX_TILE_ROWS * sh->dpad * sizeof(float));
    sl->first = next_block(job, q0, sl->rows, 0);
    for (size_t b = sl->first; b < sh->blocks; b = next_block(job, q0, sl->rows, b + 1)) sl->computed++;
    sl->steps = (sl->computed + sh->step - 1) / sh->step;
    gather_step(job, head, q0, sl->rows, 0, &sl->step[0]);
}
static bool same_blocks(const amx_slice *a, const amx_slice *b)
{
    return a->first == b->first && a->computed == b->computed;
}
static void walk_slices(const amx_job *job, amx_engine_state *e, amx_slice *const *sl, size_t count)
{
    const size_t steps = sl[0]->steps;
    if (steps > 0) start_scores(job, e, sl, count, 0);
    for (size_t i = 0; i < steps + 2; i++) {
        if (i + 1 < steps) {
            for (size_t g = 0; g < count; g++)
                gather_step(job, sl[g]->head, sl[g]->q0, sl[g]->rows, sl[g]->step[i % 4].next, &sl[g]->step[(i + 1) % 4]);
            start_scores(job, e, sl, count, i + 1);
        }
        if (i >= 1 && i - 1 < steps) weigh_values(job, e, sl, count, i - 1);
        for (size_t g = 0; g < count && i < steps; g++) make_probabilities(job, sl[g], i);
        for (size_t g = 0; g < count && i >= 2; g++)
            job->engine->add_values(sl[g]->o, sl[g]->pv[i % 2], sl[g]->alpha[(i - 2) % 4], job->shape.dpad);
    }
}
static void do_item(const amx_job *job, amx_workspace *w, size_t head, size_t first)
{
    amx_slice *a = &w->slice[0], *b = &w->slice[1];
    const size_t count = first + 1 < (job->shape.nq + 15) / 16 ? 2 : 1;
    start_slice(job, a, head, 16 * first);
    if (count == 2) start_slice(job, b, head, 16 * (first + 1));
    const bool together = count == 2 && job->engine->scores_pair && job->shape.chunks == 4 && same_blocks(a, b);
    if (together) walk_slices(job, &w->engine, (amx_slice *[]){ a, b }, 2);
    else for (size_t g = 0; g < count; g++) walk_slices(job, &w->engine, (amx_slice *[]){ &w->slice[g] }, 1);
    for (size_t g = 0; g < count; g++) finish_slice(job, w, &w->slice[g]);
}
static void pack_head_block(amx_job *job, size_t item)
{
    const amx_shape *sh = &job->shape;
    const size_t head = item / sh->blocks, b = item % sh->blocks, elems = sh->dpad * 32;
    pack_key_block(sh, job->engine->hw_round, job->k + head * sh->nk * sh->d, 32 * b,
                   job->packed_k + item * elems);
    pack_value_block(sh, job->engine->hw_round, job->v + head * sh->nk * sh->d, 32 * b,
                     job->packed_v + item * elems);
}
static size_t pairs_per_head(const amx_shape *sh) { return ((sh->nq + 15) / 16 + 1) / 2; }

static void *amx_worker(void *arg)
{
    amx_thread *t = arg;
    amx_job *job = t->job;
    if (job->phase == 1 && job->engine->tiles) amx_configure_tiles();
    for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < job->items;) {
        if (job->phase == 0) pack_head_block(job, i);
        else do_item(job, t->w, i / pairs_per_head(&job->shape), 2 * (i % pairs_per_head(&job->shape)));
    }
    if (job->phase == 1 && job->engine->tiles) amx_release_tiles();
    return NULL;
}
static void run_phase(amx_job *job, int phase, size_t items, amx_thread *t, int threads)
{
    pthread_t id[AMX_MAX_THREADS];
    job->phase = phase;
    job->items = items;
    atomic_store(&job->next, 0);
    workers_start(id, threads, amx_worker, t, sizeof t[0], "attention_bf16");
    amx_worker(&t[0]);
    workers_join(id, threads);
}
static void run_engine(const amx_engine *engine, const attn_params *p, const float *q, const float *k,
                       const float *v, float *o, int threads, amx_counts *counts)
{
    amx_job job = { .p = p, .engine = engine, .shape = amx_shape_of(p), .q = q,
                    .k = k, .v = v, .o = o, .heads = p->batch * p->heads };
    threads = threads < 1 ? 1 : threads > AMX_MAX_THREADS ? AMX_MAX_THREADS : threads;
    const size_t packed = fa_mul(job.heads * job.shape.blocks, job.shape.dpad * 32);
    job.packed_k = fa_alloc(fa_mul(packed, sizeof(bf16)));
    job.packed_v = fa_alloc(fa_mul(packed, sizeof(bf16)));
    amx_thread t[AMX_MAX_THREADS];
    for (int i = 0; i < threads; i++) t[i] = (amx_thread){ &job, fa_alloc(sizeof(amx_workspace)) };
    for (int i = 0; i < threads; i++) memset(t[i].w, 0, sizeof(amx_workspace));
    run_phase(&job, 0, job.heads * job.shape.blocks, t, threads);
    run_phase(&job, 1, job.heads * pairs_per_head(&job.shape), t, threads);
    amx_counts c = { 0 };
    for (int i = 0; i < threads; i++) {
        c.blocks_computed += t[i].w->computed;
        c.blocks_skipped += t[i].w->skipped;
        fa_free(t[i].w);
    }
    if (counts) *counts = c;
    fa_free(job.packed_k);
    fa_free(job.packed_v);
}
void attention_bf16(amx_kernel kernel, const attn_params *p, const float *q, const float *k,
                    const float *v, float *o, int threads, amx_counts *counts)
{
    char why[160] = "";
    if (kernel == AMX_KERNEL_AMX && !amx_available(why)) die_line("the AMX kernel cannot run: %s", why);
    if (kernel == AMX_KERNEL_AVX512BF16 && !bf16_cpu_has_avx512bf16())
        die_line("the AVX512-BF16 kernel cannot run: this CPU has no AVX512-BF16 (or FA_ISA forbids it)");
    run_engine(&ENGINES[kernel], p, q, k, v, o, threads, counts);
}
size_t attention_bf16_bytes(const attn_params *p, int threads)
{
    const amx_shape sh = amx_shape_of(p);
    const size_t packed = fa_mul(fa_mul(p->batch * p->heads, sh.blocks), sh.dpad * 32);
    return fa_mul(packed, 2 * sizeof(bf16)) + fa_mul((size_t)threads, sizeof(amx_workspace));
}

const char *bf16_params_problem(const attn_params *p)
{
    if (p->d > 128) return "the bf16 kernels take head dimensions up to 128";
    return attn_params_problem(p);
}
static void no_scores(amx_engine_state *e, const bf16 *kb, size_t chunks, float *s, size_t ld)
{
    (void)e, (void)kb, (void)chunks, (void)s, (void)ld;
}

static void no_values(amx_engine_state *e, const bf16 *p, const bf16 *const *vb, size_t blocks,
                      size_t dpad, float *pv)
{
    (void)e, (void)p, (void)vb, (void)blocks, (void)dpad, (void)pv;
}
static void no_scores_pair(amx_engine_state *e, const bf16 *qb, const bf16 *kb, size_t chunks, float *sa,
                           float *sb, size_t ld)
{
    (void)e, (void)qb, (void)kb, (void)chunks, (void)sa, (void)sb, (void)ld;
}

static void no_values_pair(amx_engine_state *e, const bf16 *pa, const bf16 *pb, const bf16 *const *vb,
                           size_t blocks, size_t dpad, float *pva, float *pvb)
{
    (void)e, (void)pa, (void)pb, (void)vb, (void)blocks, (void)dpad, (void)pva, (void)pvb;
}
static void no_softmax(const float *s, size_t ld, size_t blocks, const uint32_t *visible, float scale,
                       amx_rows *rows, bf16 *p, float *alpha)
{
    (void)s, (void)ld, (void)blocks, (void)visible, (void)scale, (void)rows, (void)p, (void)alpha;
}

static void no_rescale(float *o, const float *pv, const float *alpha, size_t dpad)
{
    (void)o, (void)pv, (void)alpha, (void)dpad;
}
void attention_bf16_without(int leave_out, const attn_params *p, const float *q, const float *k,
                            const float *v, float *o, int threads)
{
    char why[160] = "";
    if (!amx_available(why)) die_line("the AMX kernel cannot run: %s", why);
    amx_engine e = ENGINES[AMX_KERNEL_AMX];
    if (leave_out & AMX_LEAVE_TILES)
        e.scores = no_scores, e.values = no_values, e.scores_pair = no_scores_pair, e.values_pair = no_values_pair;
    if (leave_out & AMX_LEAVE_PAIRS) e.scores_pair = NULL, e.values_pair = NULL;
    if (leave_out & AMX_LEAVE_VECTORS) e.softmax_rows = no_softmax, e.add_values = no_rescale;
    run_engine(&e, p, q, k, v, o, threads, NULL);
}
enum { DT_ROWS = 8, DT_KEYS = 32, DT_MAX_D = 128, DT_PAIR_BYTES = 2 * DT_ROWS * 2 };
typedef struct {
    bf16  qt[4][16 * 2 * DT_ROWS];              /* Q^T in pairs: a tile a 32 dimensions */
    float s[2][DT_KEYS][DT_ROWS];               /* S^T of two blocks: a key a row */
    bf16  p[2][DT_ROWS * DT_KEYS];              /* P: the rows' 32 keys, in pairs */
    bf16  bv[2][DT_MAX_D / 16][AMX_TILE_ELEMS]; /* V in pairs, 16 columns a tile */
    float pv[DT_ROWS][DT_MAX_D];                /* P V of the block */
    float o[DT_ROWS][DT_MAX_D];                 /* the rows' outputs, in the tiles' order */
    float m[16], l[16], alpha[2][16];           /* a row a lane, twice */
    bf16  kst[DT_KEYS * DT_MAX_D], vst[DT_KEYS * DT_MAX_D];   /* a short block, padded */
} dt_state;
static const char *dt_problem(decode_cache cache, size_t d)
{
    if (cache != DECODE_BF16) return "the tiles decode a bf16 cache only";
    if (d % 32 != 0 || d > DT_MAX_D) return "the tiles decode d = 32, 64, 96 or 128";
    return NULL;
}
typedef struct {
    void (*load_q)(dt_state *, size_t);                         /* d */
    void (*scores)(dt_state *, const bf16 *, size_t, size_t);   /* keys, d, buffer */
    void (*softmax)(dt_state *, size_t, size_t);                /* keys, buffer */
    void (*lay_values)(dt_state *, const bf16 *, size_t, size_t);   /* values, d, buffer */
    void (*values)(dt_state *, size_t, size_t);                 /* d, buffer */
    void (*add)(dt_state *, size_t, size_t, size_t);            /* rows, d, buffer */
    bool tiles;
} dt_steps;
static void dt_start(dt_state *w, const float *q, size_t rows, size_t d, bool hw)
{
    bf16 row[DT_MAX_D];
    memset(w->qt, 0, sizeof w->qt);
    for (size_t r = 0; r < rows; r++) {
        round_row(hw, q + r * d, d, d, row);
        for (size_t c = 0; c < d; c++)
            w->qt[c / 32][(c % 32 / 2) * 2 * DT_ROWS + 2 * r + c % 2] = row[c];
    }
    for (size_t r = 0; r < 16; r++) {
        w->m[r] = -INFINITY;
        w->l[r] = 0.0f;
    }
    memset(w->o, 0, sizeof w->o);
}
#define DT_DOT_Q(acc, c) do { \
    if ((c) == 0) _tile_dpbf16ps(acc, 6, 0); else _tile_dpbf16ps(acc, 6, 1); } while (0)
__attribute__((target("amx-tile,amx-bf16")))
static void dt_load_q_hw(dt_state *w, size_t d)
{
    if (d > 64) return;
    _tile_loadd(0, w->qt[0], DT_PAIR_BYTES);
    if (d > 32) _tile_loadd(1, w->qt[1], DT_PAIR_BYTES);
}

__attribute__((target("amx-tile,amx-bf16")))
static void dt_scores_hw(dt_state *w, const bf16 *k, size_t d, size_t buf)
{
    _tile_zero(4);
    _tile_zero(5);
    for (size_t c = 0; c < d / 32; c++) {
        if (d > 64) _tile_loadd(0, w->qt[c], DT_PAIR_BYTES);
        _tile_loadd(6, k + 32 * c, 2 * d);
        DT_DOT_Q(4, d > 64 ? 0 : c);
        _tile_loadd(6, k + 16 * d + 32 * c, 2 * d);
        DT_DOT_Q(5, d > 64 ? 0 : c);
    }
    _tile_stored(4, w->s[buf][0], DT_ROWS * sizeof(float));
    _tile_stored(5, w->s[buf][16], DT_ROWS * sizeof(float));
}
#undef DT_DOT_Q
static void dt_load_q_emu(dt_state *w, size_t d) { (void)w, (void)d; }

static void dt_scores_emu(dt_state *w, const bf16 *k, size_t d, size_t buf)
{
    memset(w->s[buf], 0, sizeof w->s[buf]);
    for (size_t c = 0; c < d / 32; c++)
        for (size_t h = 0; h < 2; h++)
            amx_tile_dot(w->s[buf][16 * h], DT_ROWS, k + 16 * h * d + 32 * c, d, w->qt[c],
                         2 * DT_ROWS, 16, 16, DT_ROWS);
}
__attribute__((target("avx512f")))
static inline __m512i dt_pairing(void)
{
    return _mm512_set_epi16(31, 23, 15, 7, 30, 22, 14, 6, 29, 21, 13, 5, 28, 20, 12, 4,
                            27, 19, 11, 3, 26, 18, 10, 2, 25, 17, 9, 1, 24, 16, 8, 0);
}
__attribute__((target("avx512f")))
static inline __m512 dt_join_halves(__m512 x)
{
    const __m512 both = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_shuffle_f32x4(both, both, _MM_SHUFFLE(1, 0, 1, 0));
}

__attribute__((target("avx512f")))
static inline __m512 dt_row_sums(__m512 x)
{
    const __m512i even = _mm512_set_epi32(14, 12, 10, 8, 6, 4, 2, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_add_ps(_mm512_permutexvar_ps(even, x), _mm512_permutexvar_ps(odd, x));
}
__attribute__((target("avx512f")))
static inline void dt_transpose8(__m512i w[8])
{
    __m512i t[8], a[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_epi64(w[i], w[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi64(w[i], w[i + 1]);
    }
    for (int e = 0; e < 2; e++) {
        a[e] = _mm512_shuffle_i64x2(t[e], t[2 + e], 0x44);
        a[2 + e] = _mm512_shuffle_i64x2(t[e], t[2 + e], 0xee);
        a[4 + e] = _mm512_shuffle_i64x2(t[4 + e], t[6 + e], 0x44);
        a[6 + e] = _mm512_shuffle_i64x2(t[4 + e], t[6 + e], 0xee);
    }
    for (int e = 0; e < 2; e++) {
        w[e] = _mm512_shuffle_i64x2(a[e], a[4 + e], 0x88);
        w[2 + e] = _mm512_shuffle_i64x2(a[e], a[4 + e], 0xdd);
        w[4 + e] = _mm512_shuffle_i64x2(a[2 + e], a[6 + e], 0x88);
        w[6 + e] = _mm512_shuffle_i64x2(a[2 + e], a[6 + e], 0xdd);
    }
}
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void dt_softmax_hw(dt_state *w, size_t n, size_t buf)
{
    float *s = w->s[buf][0];
    for (size_t j = n * DT_ROWS; j < DT_KEYS * DT_ROWS; j++) s[j] = -INFINITY;
    const __m512 l2e = _mm512_set1_ps(LOG2_E), m = _mm512_loadu_ps(w->m);
    __m512 u[16], chain[4] = { m, m, m, m };
    _Pragma("GCC unroll 16") for (size_t j = 0; j < 16; j++) {
        u[j] = _mm512_loadu_ps(s + 16 * j);
        chain[j % 4] = _mm512_max_ps(u[j], chain[j % 4]);
    }
    const __m512 mx = dt_join_halves(_mm512_max_ps(_mm512_max_ps(chain[0], chain[1]),
                                                   _mm512_max_ps(chain[2], chain[3])));
    const __m512 mc = _mm512_mul_ps(mx, l2e);
    const __m512 alpha = exp2_16(_mm512_mul_ps(_mm512_sub_ps(m, mx), l2e));
    __m512i pairs[8];
    __m512 sums[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() };
    const __m512i side_by_side = dt_pairing();
    const __m512bh ones = (__m512bh)_mm512_set1_epi16((short)0x3f80);
    _Pragma("GCC unroll 8") for (size_t k = 0; k < 8; k++) {
        const __m512 pa = exp2_16(_mm512_fmsub_ps(u[2 * k], l2e, mc));
        const __m512 pb = exp2_16(_mm512_fmsub_ps(u[2 * k + 1], l2e, mc));
        pairs[k] = _mm512_permutexvar_epi16(side_by_side, (__m512i)_mm512_cvtne2ps_pbh(pb, pa));
        sums[k % 2] = _mm512_dpbf16_ps(sums[k % 2], (__m512bh)pairs[k], ones);
    }
    dt_transpose8(pairs);
    for (size_t r = 0; r < DT_ROWS; r++) _mm512_storeu_si512(w->p[buf] + DT_KEYS * r, pairs[r]);
    const __m512 sum = dt_row_sums(_mm512_add_ps(sums[0], sums[1]));
    _mm512_storeu_ps(w->l, _mm512_fmadd_ps(alpha, _mm512_loadu_ps(w->l), sum));
    _mm512_storeu_ps(w->m, mx);
    _mm512_storeu_ps(w->alpha[buf], alpha);
}
static float dt_max(float a, float b) { return a > b ? a : b; }

static void dt_softmax_emu(dt_state *w, size_t n, size_t buf)
{
    float (*s)[DT_ROWS] = w->s[buf];
    for (size_t j = n; j < DT_KEYS; j++)
        for (size_t r = 0; r < DT_ROWS; r++) s[j][r] = -INFINITY;
    for (size_t r = 0; r < DT_ROWS; r++) {
        float half[2];
        for (size_t h = 0; h < 2; h++) {
            float chain[4] = { w->m[r], w->m[r], w->m[r], w->m[r] };
            for (size_t j = 0; j < 16; j++) chain[j % 4] = dt_max(s[2 * j + h][r], chain[j % 4]);
            half[h] = dt_max(dt_max(chain[0], chain[1]), dt_max(chain[2], chain[3]));
        }
        const float mx = dt_max(half[0], half[1]), mc = mx * LOG2_E;
        const float alpha = amx_exp2((w->m[r] - mx) * LOG2_E);
        float sums[2][2] = { { 0 } };                /* [k % 2][the pair's place in its lane] */
        for (size_t i = 0; i < 16; i++) {
            bf16 pair[2];
            for (size_t t = 0; t < 2; t++) pair[t] = bf16_round(amx_exp2(fmaf(s[2 * i + t][r], LOG2_E, -mc)));
            w->p[buf][DT_KEYS * r + 2 * i] = pair[0];
            w->p[buf][DT_KEYS * r + 2 * i + 1] = pair[1];
            float *sum = &sums[i / 2 % 2][i % 2];
            *sum = bf16_dot_lane(*sum, (uint32_t)pair[0] | (uint32_t)pair[1] << 16, 0x3f803f80u);
        }
        const float total = (sums[0][0] + sums[1][0]) + (sums[0][1] + sums[1][1]);
        w->l[r] = w->l[r + 8] = fmaf(alpha, w->l[r], total);
        w->m[r] = w->m[r + 8] = mx;
        w->alpha[buf][r] = w->alpha[buf][r + 8] = alpha;
    }
}
static size_t dt_column(size_t g, size_t i)
{
    return 32 * (g / 2) + 8 * (i / 4) + 4 * (g % 2) + i % 4;
}
__attribute__((target("avx512f,avx512bw")))
static void dt_lay_values_hw(dt_state *w, const bf16 *v, size_t d, size_t buf)
{
    for (size_t i = 0; i < 16; i++)
        for (size_t h = 0; h < d / 32; h++) {
            const __m512i a = _mm512_loadu_si512(v + 2 * i * d + 32 * h);
            const __m512i b = _mm512_loadu_si512(v + (2 * i + 1) * d + 32 * h);
            _mm512_storeu_si512(w->bv[buf][2 * h] + 32 * i, _mm512_unpacklo_epi16(a, b));
            _mm512_storeu_si512(w->bv[buf][2 * h + 1] + 32 * i, _mm512_unpackhi_epi16(a, b));
        }
}
static void dt_lay_values_emu(dt_state *w, const bf16 *v, size_t d, size_t buf)
{
    for (size_t g = 0; g < d / 16; g++)
        for (size_t i = 0; i < 16; i++)
            for (size_t c = 0; c < 16; c++)
                for (size_t t = 0; t < 2; t++)
                    w->bv[buf][g][32 * i + 2 * c + t] = v[(2 * i + t) * d + dt_column(g, c)];
}
__attribute__((target("amx-tile,amx-bf16")))
static void dt_values_hw(dt_state *w, size_t d, size_t buf)
{
    _tile_loadd(2, w->p[buf], DT_KEYS * sizeof(bf16));
    for (size_t g = 0; g < d / 16; g++) {
        _tile_zero(7);
        _tile_loadd(3, w->bv[buf][g], AMX_TILE_BYTES);
        _tile_dpbf16ps(7, 2, 3);
        _tile_stored(7, &w->pv[0][16 * g], DT_MAX_D * sizeof(float));
    }
}
static void dt_values_emu(dt_state *w, size_t d, size_t buf)
{
    for (size_t g = 0; g < d / 16; g++) {
        for (size_t r = 0; r < DT_ROWS; r++) memset(&w->pv[r][16 * g], 0, 16 * sizeof(float));
        amx_tile_dot(&w->pv[0][16 * g], DT_MAX_D, w->p[buf], DT_KEYS, w->bv[buf][g], 32, DT_ROWS,
                     16, 16);
    }
}
__attribute__((target("avx512f")))
static void dt_add_hw(dt_state *w, size_t rows, size_t d, size_t buf)
{
    for (size_t r = 0; r < rows; r++) {
        const __m512 alpha = _mm512_set1_ps(w->alpha[buf][r]);
        for (size_t c = 0; c < d; c += 16)
            _mm512_storeu_ps(&w->o[r][c], _mm512_fmadd_ps(alpha, _mm512_loadu_ps(&w->o[r][c]),
                                                          _mm512_loadu_ps(&w->pv[r][c])));
    }
}

static void dt_add_emu(dt_state *w, size_t rows, size_t d, size_t buf)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < d; c++) w->o[r][c] = fmaf(w->alpha[buf][r], w->o[r][c], w->pv[r][c]);
}
static size_t dt_keys(const decode_piece *pc, size_t b)
{
    const size_t k0 = pc->first + b * DT_KEYS;
    return pc->last - k0 < DT_KEYS ? pc->last - k0 : DT_KEYS;
}
static void dt_block(dt_state *w, const decode_piece *pc, size_t k0, const bf16 **k,
                     const bf16 **v)
{
    const size_t d = pc->d, n = pc->last - k0 < DT_KEYS ? pc->last - k0 : DT_KEYS;
    *k = (const bf16 *)pc->k + k0 * d;
    *v = (const bf16 *)pc->v + k0 * d;
    if (n == DT_KEYS) return;
    memset(w->kst, 0, sizeof w->kst);
    memset(w->vst, 0, sizeof w->vst);
    memcpy(w->kst, *k, n * d * sizeof(bf16));
    memcpy(w->vst, *v, n * d * sizeof(bf16));
    *k = w->kst;
    *v = w->vst;
}
static void dt_finish(const dt_state *w, size_t rows, size_t d, softmax_partial *part, float *acc)
{
    for (size_t r = 0; r < rows; r++) {
        part[r] = (softmax_partial){ w->m[r], w->l[r] };
        for (size_t g = 0; g < d / 16; g++)
            for (size_t i = 0; i < 16; i++) acc[r * d + dt_column(g, i)] = w->o[r][16 * g + i];
    }
}
static void dt_piece(const dt_steps *x, const decode_piece *pc, softmax_partial *part, float *acc)
{
    const char *problem = dt_problem(pc->cache, pc->d);
    if (problem) die_line("decoding on the tiles: %s", problem);
    dt_state state, *w = &state;
    const size_t d = pc->d, blocks = (pc->last - pc->first + DT_KEYS - 1) / DT_KEYS;
    if (x->tiles) amx_configure_decode_tiles();
    for (size_t r0 = 0; r0 < pc->rows; r0 += DT_ROWS) {
        const size_t rows = pc->rows - r0 < DT_ROWS ? pc->rows - r0 : DT_ROWS;
        const bf16 *k[3] = { NULL }, *v[3] = { NULL };   /* blocks i, i + 1, i + 2 */
        dt_start(w, pc->q + r0 * d, rows, d, x->tiles);
        x->load_q(w, d);
        for (size_t b = 0; b < 2 && b < blocks; b++) {
            dt_block(w, pc, pc->first + b * DT_KEYS, &k[b], &v[b]);
            x->scores(w, k[b], d, b);
        }
        x->softmax(w, dt_keys(pc, 0), 0);
        x->lay_values(w, v[0], d, 0);
        for (size_t i = 0; i < blocks; i++) {
            if (i + 2 < blocks) {
                dt_block(w, pc, pc->first + (i + 2) * DT_KEYS, &k[(i + 2) % 3], &v[(i + 2) % 3]);
                x->scores(w, k[(i + 2) % 3], d, i % 2);
            }
            x->values(w, d, i % 2);
            if (i + 1 < blocks) {
                x->softmax(w, dt_keys(pc, i + 1), (i + 1) % 2);
                x->lay_values(w, v[(i + 1) % 3], d, (i + 1) % 2);
            }
            x->add(w, rows, d, i % 2);
        }
        dt_finish(w, rows, d, part + r0, acc + r0 * d);
    }
    if (x->tiles) amx_release_tiles();
}
void amx_decode_piece(const decode_piece *pc, softmax_partial *part, float *acc)
{
    static const dt_steps hw = { dt_load_q_hw, dt_scores_hw, dt_softmax_hw, dt_lay_values_hw,
                                 dt_values_hw, dt_add_hw, true };
    dt_piece(&hw, pc, part, acc);
}

void amx_decode_piece_model(const decode_piece *pc, softmax_partial *part, float *acc)
{
    static const dt_steps emu = { dt_load_q_emu, dt_scores_emu, dt_softmax_emu, dt_lay_values_emu,
                                  dt_values_emu, dt_add_emu, false };
    dt_piece(&emu, pc, part, acc);
}

const char *amx_decode_problem(const decode_params *p, decode_cache cache)
{
    const char *problem = dt_problem(cache, p->d);
    return problem ? problem : decode_params_problem(p);
}
