#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "ex_P_1.h"
#pragma GCC poison attention_naive attention_tiled attention_tiled_with attention_fused
#pragma GCC poison attention_reference attn_tile_classify attn_visible attn_row_sees_a_key

static attn_tile_kind window_tile(long q0, long q1, long k0, long k1, long w)
{
    if (k0 > q1 || k1 <= q0 - w) return ATTN_TILE_SKIPPED;
    if (k1 <= q0 && k0 > q1 - w) return ATTN_TILE_FULL;
    return ATTN_TILE_MASKED;
}
static void window_scores(const attn_params *p, const float *q, const float *k, size_t q0,
                          size_t rows, size_t k0, size_t cols, bool masked, float *s)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            const long i = (long)(q0 + r), j = (long)(k0 + c);
            float dot = 0.0f;
            for (size_t x = 0; x < p->d; x++)
                dot += q[(q0 + r) * p->d + x] * k[(k0 + c) * p->d + x];
            const bool hidden = masked && !(j <= i && j > i - p->window);
            s[r * cols + c] = hidden ? -INFINITY : p->scale * dot;
        }
}
static void window_block(const attn_params *p, const float *q, const float *k, const float *v,
                         float *o, size_t q0, attn_stats *st)
{
    const size_t rows = p->nq - q0 < p->block_q ? p->nq - q0 : p->block_q, d = p->d;
    float *s = fa_alloc(rows * p->block_k * sizeof(float)), *m = fa_alloc(rows * sizeof(float));
    float *l = fa_alloc(rows * sizeof(float)), *acc = fa_alloc(rows * d * sizeof(float));
    for (size_t r = 0; r < rows; r++) m[r] = -INFINITY, l[r] = 0.0f;
    memset(acc, 0, rows * d * sizeof(float));
    for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k) {
        const size_t cols = p->nk - k0 < p->block_k ? p->nk - k0 : p->block_k;
        const attn_tile_kind kind = window_tile((long)q0, (long)(q0 + rows - 1), (long)k0,
                                                (long)(k0 + cols - 1), p->window);
        st->tiles_total++;
        if (kind == ATTN_TILE_SKIPPED) { st->tiles_skipped++; continue; }
        st->tiles_computed++;
        st->tiles_masked += kind == ATTN_TILE_MASKED;
        window_scores(p, q, k, q0, rows, k0, cols, kind == ATTN_TILE_MASKED, s);
        attn_online_update(rows, cols, d, s, v + k0 * d, m, l, acc);
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t x = 0; x < d; x++) o[(q0 + r) * d + x] = l[r] > 0 ? acc[r * d + x] / l[r] : 0.0f;
    fa_free(s); fa_free(m); fa_free(l); fa_free(acc);
}

void proj_window_attention(const attn_params *p, const float *q, const float *k,
                           const float *v, float *o, attn_stats *stats)
{
    *stats = (attn_stats){ 0 };
    for (size_t h = 0; h < p->batch * p->heads; h++)
        for (size_t q0 = 0; q0 < p->nq; q0 += p->block_q)
            window_block(p, q + h * p->nq * p->d, k + h * p->nk * p->d,
                         v + h * p->nk * p->d, o + h * p->nq * p->d, q0, stats);
}
