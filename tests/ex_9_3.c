#include <cblas.h>
#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "ex_9_3.h"

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
