/* grade_9_3.c — grader of exercise 9.3. Tangled from chapters/ch09_backward.nw. */
#include <criterion/criterion.h>
#include <cblas.h>
#include <math.h>
#include <string.h>
#include "harness.h"
#include "backward.h"
void dq_for_query_block(const attn_params *p, const float *q, const float *k,
                        const float *v, const float *o, const float *lse,
                        const float *dout, size_t q0, size_t rows, float *dq)
{
    const size_t d = p->d, bk = p->block_k;
    float *s = fa_alloc(rows * bk * 4), *dp = fa_alloc(rows * bk * 4),
          *dsum = fa_alloc(rows * 4);
    for (size_t r = 0; r < rows; r++)
        dsum[r] = cblas_sdot((int)d, dout + (q0 + r) * d, 1, o + (q0 + r) * d, 1);
    memset(dq + q0 * d, 0, rows * d * sizeof(float));
    for (size_t k0 = 0; k0 < p->nk; k0 += bk) {
        const size_t cols = p->nk - k0 < bk ? p->nk - k0 : bk;
        if (attn_tile_classify(p, q0, rows, k0, cols) == ATTN_TILE_SKIPPED) continue;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cols, (int)d, p->scale,
                    q + q0 * d, (int)d, k + k0 * d, (int)d, 0.0f, s, (int)cols);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cols, (int)d, 1.0f,
                    dout + q0 * d, (int)d, v + k0 * d, (int)d, 0.0f, dp, (int)cols);
        for (size_t r = 0; r < rows; r++) {
            float *sr = s + r * cols, *dpr = dp + r * cols;
            for (size_t j = 0; j < cols; j++)
                if (!attn_visible(p, q0 + r, k0 + j)) sr[j] = -INFINITY;
            if (lse[q0 + r] == -INFINITY) memset(sr, 0, cols * sizeof *sr);
            else bwd_exp_shifted(sr, cols, lse[q0 + r]);
            for (size_t j = 0; j < cols; j++) dpr[j] = sr[j] * (dpr[j] - dsum[r]);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)d, (int)cols,
                    p->scale, dp, (int)cols, k + k0 * d, (int)d, 1.0f, dq + q0 * d, (int)d);
    }
    fa_free(s); fa_free(dp); fa_free(dsum);
}
Test(exercise_9_3, dq_by_query_blocks_matches_the_kernel)
{
    const size_t shapes[][7] = {   /* nq, nk, d, block_q, block_k, causal, window */
        { 37, 50, 5, 8, 7, 0, 0 }, { 64, 64, 16, 16, 16, 1, 0 },
        { 30, 10, 3, 4, 3, 1, 5 }, { 100, 40, 32, 64, 13, 0, 0 } };
    for (size_t i = 0; i < 4; i++) {
        const size_t *s = shapes[i];
        attn_params p = attn_default(1, 1, s[0], s[1], s[2]);
        p.block_q = s[3]; p.block_k = s[4]; p.causal = s[5] || s[6]; p.window = (long)s[6];
        const size_t nq = s[0] * s[2], nk = s[1] * s[2];
        float *q = fa_alloc(nq * 4), *k = fa_alloc(nk * 4), *v = fa_alloc(nk * 4),
              *o = fa_alloc(nq * 4), *lse = fa_alloc(s[0] * 4), *dout = fa_alloc(nq * 4),
              *dq = fa_alloc(nq * 4), *dk = fa_alloc(nk * 4), *dv = fa_alloc(nk * 4),
              *mine = fa_alloc(nq * 4);
        attn_draw_inputs(&p, (uint32_t)i, q, k, v);
        attn_draw_inputs(&p, (uint32_t)i + 100, dout, dk, dv);      /* dO: any numbers */
        attention_forward_lse(&p, q, k, v, o, lse, 1, NULL);
        attention_backward_flash(&p, q, k, v, o, lse, dout, dq, dk, dv, 1, NULL);
        for (size_t q0 = 0; q0 < s[0]; q0 += s[3])
            dq_for_query_block(&p, q, k, v, o, lse, dout, q0, s[0] - q0 < s[3] ? s[0] - q0 : s[3], mine);
        for (size_t e = 0; e < nq; e++)
            cr_assert(fabsf(mine[e] - dq[e]) < 1e-5f, "shape %zu, entry %zu: %g vs %g", i, e,
                      mine[e], dq[e]);
    }
}
