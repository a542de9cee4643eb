#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "ex_P_2.h"
#pragma GCC poison attention_backward_flash attention_backward_naive attention_grad_fd
#pragma GCC poison attention_forward_keep_p attention_forward_lse attention_reference

typedef struct {
    const attn_params *p;
    size_t nqv, nkv;
    const float *q, *k, *v, *lse, *dout, *dsum;
    float *dq, *dk, *dv;
} p2_job;

static float dot_of(const float *a, const float *b, size_t d)
{
    float s = 0.0f;
    for (size_t x = 0; x < d; x++) s += a[x] * b[x];
    return s;
}

static void fold_entry(const p2_job *t, size_t i, size_t j)
{
    const size_t d = t->p->d;
    const float *qi = t->q + i * d, *kj = t->k + j * d, *doi = t->dout + i * d;
    const float prob = expf(t->p->scale * dot_of(qi, kj, d) - t->lse[i]);
    const float ds = prob * (dot_of(doi, t->v + j * d, d) - t->dsum[i]) * t->p->scale;
    for (size_t x = 0; x < d; x++) {
        t->dv[j * d + x] += prob * doi[x];
        t->dq[i * d + x] += ds * kj[x];
        t->dk[j * d + x] += ds * qi[x];
    }
}
static void padded_tile(const p2_job *t, size_t q0, size_t k0, bwd_counts *c)
{
    const size_t q1 = q0 + t->p->block_q < t->nqv ? q0 + t->p->block_q : t->nqv;
    const size_t k1 = k0 + t->p->block_k < t->nkv ? k0 + t->p->block_k : t->nkv;
    if (t->p->causal && k0 >= q1) { c->tiles_skipped++; return; }
    c->tiles_computed++;
    for (size_t i = q0; i < q1; i++)
        for (size_t j = k0; j < k1; j++)
            if (!t->p->causal || j <= i) fold_entry(t, i, j);
}

void proj_masked_backward(const attn_params *p, size_t nq_valid, size_t nk_valid,
                          const float *q, const float *k, const float *v, const float *o,
                          const float *lse, const float *dout, float *dq, float *dk,
                          float *dv, bwd_counts *counts)
{
    const size_t d = p->d;
    memset(dq, 0, p->nq * d * sizeof *dq);
    memset(dk, 0, p->nk * d * sizeof *dk);
    memset(dv, 0, p->nk * d * sizeof *dv);
    *counts = (bwd_counts){ 0 };
    float *dsum = fa_alloc((nq_valid + 1) * sizeof(float));
    for (size_t i = 0; i < nq_valid; i++) {
        dsum[i] = 0.0f;
        for (size_t x = 0; x < d; x++) dsum[i] += dout[i * d + x] * o[i * d + x];
    }
    const p2_job job = { p, nq_valid, nk_valid, q, k, v, lse, dout, dsum, dq, dk, dv };
    for (size_t k0 = 0; k0 < nk_valid; k0 += p->block_k)
        for (size_t q0 = 0; q0 < nq_valid; q0 += p->block_q)
            padded_tile(&job, q0, k0, counts);
    fa_free(dsum);
}
