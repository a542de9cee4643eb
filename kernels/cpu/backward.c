/* backward.c — attention's backward pass. Tangled from chapters/ch09_backward.nw. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include "cpu/workers.h"
#include "cpu/backward.h"
typedef struct {
    const float *q, *k, *v, *dout, *probs;
    float *o, *lse;                    /* written by the forward passes */
    const float *o_in, *lse_in;        /* read by the flash backward */
    float *dq, *dk, *dv;               /* written by the backward passes */
} head_tensors;
typedef struct {
    float *scores;      /* block_q x block_k */
    float *m, *l;       /* per query row of the block */
    float *acc;         /* block_q x d */
} fwd_workspace;
typedef struct {
    const float *q, *k, *v, *dout, *lse;
    float *dq, *dk, *dv;
} head_view;
typedef struct {
    float *p, *ds;      /* block_q x block_k each */
    float *kt, *vt;     /* the key block's K and V, transposed: d x block_k each */
    float *dsum;        /* D = rowsum(dO o O), one per query row */
} bwd_workspace;
typedef void head_fn(const attn_params *p, const head_tensors *t, size_t h,
                     void *workspace, bwd_counts *counts);
typedef struct {
    const attn_params *p;
    const head_tensors *t;
    head_fn *run;
    void *(*workspace_new)(const attn_params *p);     /* NULL: no workspace */
    void (*workspace_free)(void *workspace);
} head_job;
typedef struct {
    const float *q, *k, *v, *dout;       /* all heads */
    float *o, *lse, *dq, *dk, *dv;       /* all heads; lse may be NULL */
} bwd_head_out;
typedef struct { double *s, *o, *dq, *dk, *dv; } bwd_exact_work;

#define BW_UNROLL _Pragma("GCC unroll 16")
static size_t bwd_min(size_t a, size_t b) { return a < b ? a : b; }
static void run_heads(const head_job *job, int threads, bwd_counts *counts);
static bool count_bwd_tile(bwd_counts *counts, attn_tile_kind kind);
static void softmax_backward_row(const float *restrict prob, float *restrict dp,
                                 size_t n, float d_i);
static float row_dot(const float *a, const float *b, size_t n);
static void softmax_row(float *s, size_t n, bwd_counts *counts);
static void flash_tile(const attn_params *p, const head_view *hv, size_t q0, size_t rows,
                       size_t k0, size_t cols, attn_tile_kind kind, bwd_workspace *w,
                       bwd_counts *counts);
static void recompute_probabilities(float *s, size_t rows, size_t cols, const float *lse,
                                    bwd_counts *counts);
static void require_valid_params(const attn_params *p);
static void add_counts(bwd_counts *sum, const bwd_counts *c);
static void *fwd_workspace_new(const attn_params *p);
static void fwd_workspace_free(void *workspace);
static void tile_product(bool a_t, bool b_t, size_t m, size_t n, size_t k, float alpha,
                         const float *a, size_t lda, const float *b, size_t ldb,
                         float beta, float *c, size_t ldc, bwd_counts *counts)
{
    cblas_sgemm(CblasRowMajor, a_t ? CblasTrans : CblasNoTrans,
                b_t ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    counts->matmul_flops += 2.0 * (double)m * (double)n * (double)k;
}
static void mask_tile(const attn_params *p, size_t q0, size_t rows, size_t k0, size_t cols,
                      float *s);
static void bwd_score_tile(const attn_params *p, const float *qb, const float *kb,
                       size_t q0, size_t rows, size_t k0, size_t cols,
                       attn_tile_kind kind, float *s, bwd_counts *counts)
{
    tile_product(false, true, rows, cols, p->d, p->scale, qb, p->d, kb, p->d,
                 0.0f, s, cols, counts);
    if (kind == ATTN_TILE_MASKED) mask_tile(p, q0, rows, k0, cols, s);
}

static void mask_tile(const attn_params *p, size_t q0, size_t rows, size_t k0, size_t cols,
                      float *s)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++)
            if (!attn_visible(p, q0 + r, k0 + j)) s[r * cols + j] = -INFINITY;
}
static void softmax_backward_row(const float *restrict prob, float *restrict dp,
                                 size_t n, float d_i)
{
    for (size_t j = 0; j < n; j++) dp[j] = prob[j] * (dp[j] - d_i);
}

static float row_dot(const float *a, const float *b, size_t n)
{
    return cblas_sdot((int)n, a, 1, b, 1);
}
#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 bw_vec;
enum { BW_LANES = 16, BW_VECS = 4 };
#define BW_OP(op) _mm512_##op
#define BW_IN_REGISTER(x) __asm__("" : "+v"(x))
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256 bw_vec;
enum { BW_LANES = 8, BW_VECS = 2 };
#define BW_OP(op) _mm256_##op
#define BW_IN_REGISTER(x) __asm__("" : "+v"(x))
#else
typedef float bw_vec;
enum { BW_LANES = 1, BW_VECS = 4 };
#define BW_OP(op) bw1_##op
#define BW_IN_REGISTER(x) (void)(x)
static inline float bw1_loadu_ps(const float *p) { return *p; }
static inline void bw1_storeu_ps(float *p, float x) { *p = x; }
static inline float bw1_set1_ps(float x) { return x; }
static inline float bw1_setzero_ps(void) { return 0.0f; }
static inline float bw1_fmadd_ps(float a, float b, float c) { return fmaf(a, b, c); }
static inline float bw1_mul_ps(float a, float b) { return a * b; }
#endif
enum { BW_ROWS = 4 };
static inline __attribute__((always_inline)) void
reg_tile(size_t kdim, const float *a, size_t ars, size_t ats, const float *b, size_t ldb,
         float *c, size_t ldc, float alpha, bool add)
{
    bw_vec acc[BW_ROWS][BW_VECS];
    BW_UNROLL for (int r = 0; r < BW_ROWS; r++)
        BW_UNROLL for (int v = 0; v < BW_VECS; v++) acc[r][v] = BW_OP(setzero_ps)();
    for (size_t t = 0; t < kdim; t++) {
        bw_vec bv[BW_VECS];
        BW_UNROLL for (int v = 0; v < BW_VECS; v++) {
            bv[v] = BW_OP(loadu_ps)(b + t * ldb + v * BW_LANES);
            BW_IN_REGISTER(bv[v]);
        }
        BW_UNROLL for (int r = 0; r < BW_ROWS; r++) {
            const bw_vec x = BW_OP(set1_ps)(a[r * ars + t * ats]);
            BW_UNROLL for (int v = 0; v < BW_VECS; v++) acc[r][v] = BW_OP(fmadd_ps)(x, bv[v], acc[r][v]);
        }
    }
    const bw_vec al = BW_OP(set1_ps)(alpha);
    BW_UNROLL for (int r = 0; r < BW_ROWS; r++)
        BW_UNROLL for (int v = 0; v < BW_VECS; v++) {
            float *to = c + r * ldc + v * BW_LANES;
            BW_OP(storeu_ps)(to, add ? BW_OP(fmadd_ps)(al, acc[r][v], BW_OP(loadu_ps)(to))
                                     : BW_OP(mul_ps)(al, acc[r][v]));
        }
}
static void scalar_tile(size_t rows, size_t cols, size_t kdim, const float *a, size_t ars,
                        size_t ats, const float *b, size_t ldb, float *c, size_t ldc,
                        float alpha, bool add)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) {
            float sum = 0.0f;
            for (size_t t = 0; t < kdim; t++) sum = fmaf(a[r * ars + t * ats], b[t * ldb + j], sum);
            c[r * ldc + j] = add ? fmaf(alpha, sum, c[r * ldc + j]) : alpha * sum;
        }
}
static void reg_product(size_t rows, size_t cols, size_t kdim, const float *a, size_t ars,
                        size_t ats, const float *b, size_t ldb, float *c, size_t ldc,
                        float alpha, bool add, bwd_counts *counts)
{
    const size_t step = BW_VECS * BW_LANES;
    const size_t fr = rows / BW_ROWS * BW_ROWS, fc = cols / step * step;
    for (size_t r = 0; r < fr; r += BW_ROWS)
        for (size_t j = 0; j < fc; j += step)
            reg_tile(kdim, a + r * ars, ars, ats, b + j, ldb, c + r * ldc + j, ldc, alpha, add);
    scalar_tile(fr, cols - fc, kdim, a, ars, ats, b + fc, ldb, c + fc, ldc, alpha, add);
    scalar_tile(rows - fr, cols, kdim, a + fr * ars, ars, ats, b, ldb, c + fr * ldc, ldc,
                alpha, add);
    counts->matmul_flops += 2.0 * (double)rows * (double)cols * (double)kdim;
}
static void pack_transposed(const float *x, size_t cols, size_t d, float *xt)
{
    for (size_t j = 0; j < cols; j++)
        for (size_t c = 0; c < d; c++) xt[c * cols + j] = x[j * d + c];
}
static void forward_query_block(const attn_params *p, const float *q, const float *k,
                                const float *v, size_t q0, size_t rows,
                                fwd_workspace *w, bwd_counts *counts)
{
    for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k) {
        const size_t cols = bwd_min(p->block_k, p->nk - k0);
        const attn_tile_kind kind = attn_tile_classify(p, q0, rows, k0, cols);
        if (!count_bwd_tile(counts, kind)) continue;
        bwd_score_tile(p, q + q0 * p->d, k + k0 * p->d, q0, rows, k0, cols, kind,
                   w->scores, counts);
        attn_online_update(rows, cols, p->d, w->scores, v + k0 * p->d, w->m, w->l, w->acc);
        counts->matmul_flops += 2.0 * (double)rows * (double)cols * (double)p->d;
        counts->exps += (double)rows * (double)cols;
    }
}
static bool count_bwd_tile(bwd_counts *counts, attn_tile_kind kind)
{
    if (kind == ATTN_TILE_SKIPPED) { counts->tiles_skipped++; return false; }
    counts->tiles_computed++;
    counts->tiles_masked += kind == ATTN_TILE_MASKED;
    return true;
}
static void finish_lse_block(const fwd_workspace *w, size_t rows, size_t d, float *o,
                             float *lse)
{
    for (size_t r = 0; r < rows; r++) {
        float *restrict out = o + r * d;
        const float *restrict a = w->acc + r * d;
        if (w->m[r] == -INFINITY) {
            memset(out, 0, d * sizeof *out); lse[r] = -INFINITY; continue; }
        for (size_t c = 0; c < d; c++) out[c] = a[c] / w->l[r];
        lse[r] = w->m[r] + logf(w->l[r]);
    }
}
static void forward_one_head(const attn_params *p, const head_tensors *t, size_t h,
                             void *workspace, bwd_counts *counts)
{
    fwd_workspace *w = workspace;
    const float *q = t->q + h * p->nq * p->d, *k = t->k + h * p->nk * p->d;
    for (size_t q0 = 0; q0 < p->nq; q0 += p->block_q) {
        const size_t rows = bwd_min(p->block_q, p->nq - q0);
        for (size_t r = 0; r < rows; r++) { w->m[r] = -INFINITY; w->l[r] = 0.0f; }
        memset(w->acc, 0, rows * p->d * sizeof *w->acc);
        forward_query_block(p, q, k, t->v + h * p->nk * p->d, q0, rows, w, counts);
        finish_lse_block(w, rows, p->d, t->o + (h * p->nq + q0) * p->d,
                         t->lse + h * p->nq + q0);
    }
}
void attention_forward_lse(const attn_params *p, const float *q, const float *k,
                           const float *v, float *o, float *lse, int threads,
                           bwd_counts *counts)
{
    const head_tensors t = { .q = q, .k = k, .v = v, .o = o, .lse = lse };
    const head_job job = { .p = p, .t = &t, .run = forward_one_head,
                           .workspace_new = fwd_workspace_new,
                           .workspace_free = fwd_workspace_free };
    run_heads(&job, threads, counts);
}
static void *fwd_workspace_new(const attn_params *p)
{
    const size_t rows = bwd_min(p->block_q, p->nq), cols = bwd_min(p->block_k, p->nk);
    fwd_workspace *w = fa_alloc(sizeof *w);
    w->scores = fa_alloc(fa_mul(fa_mul(rows, cols), sizeof(float)));
    w->m = fa_alloc(fa_mul(rows, sizeof(float)));
    w->l = fa_alloc(fa_mul(rows, sizeof(float)));
    w->acc = fa_alloc(fa_mul(fa_mul(rows, p->d), sizeof(float)));
    return w;
}
static void fwd_workspace_free(void *workspace)
{
    fwd_workspace *w = workspace;
    fa_free(w->scores); fa_free(w->m); fa_free(w->l); fa_free(w->acc); fa_free(w);
}
static void keep_p_one_head(const attn_params *p, const head_tensors *t, size_t h,
                            void *workspace, bwd_counts *counts)
{
    (void)workspace;
    const size_t nq = p->nq, nk = p->nk, d = p->d;
    float *probs = (float *)t->probs + h * nq * nk;
    bwd_score_tile(p, t->q + h * nq * d, t->k + h * nk * d, 0, nq, 0, nk,
               p->causal || p->window > 0 ? ATTN_TILE_MASKED : ATTN_TILE_FULL,
               probs, counts);
    for (size_t i = 0; i < nq; i++) softmax_row(probs + i * nk, nk, counts);
    tile_product(false, false, nq, d, nk, 1.0f, probs, nk, t->v + h * nk * d, d,
                 0.0f, t->o + h * nq * d, d, counts);
}
static void softmax_row(float *s, size_t n, bwd_counts *counts)
{
    const float m = block_max(s, n);
    if (m == -INFINITY) { memset(s, 0, n * sizeof *s); return; }
    const float sum = attn_exp_row(s, n, m);
    attn_scale_row(s, n, 1.0f / sum);
    counts->exps += (double)n;
}
void attention_forward_keep_p(const attn_params *p, const float *q, const float *k,
                              const float *v, float *o, float *probs, int threads,
                              bwd_counts *counts)
{
    const head_tensors t = { .q = q, .k = k, .v = v, .o = o, .probs = probs };
    const head_job job = { .p = p, .t = &t, .run = keep_p_one_head };
    run_heads(&job, threads, counts);
}
static void naive_backward_one_head(const attn_params *p, const head_tensors *t,
                                    size_t h, void *workspace, bwd_counts *counts)
{
    const size_t nq = p->nq, nk = p->nk, d = p->d;
    const float *probs = t->probs + h * nq * nk, *dout = t->dout + h * nq * d;
    const float *q = t->q + h * nq * d, *k = t->k + h * nk * d;
    float *dp = workspace;
    tile_product(true, false, nk, d, nq, 1.0f, probs, nk, dout, d, 0.0f,
                 t->dv + h * nk * d, d, counts);                       /* dV = P^T dO */
    tile_product(false, true, nq, nk, d, 1.0f, dout, d, t->v + h * nk * d, d, 0.0f,
                 dp, nk, counts);                                      /* dP = dO V^T */
    for (size_t i = 0; i < nq; i++)
        softmax_backward_row(probs + i * nk, dp + i * nk, nk,
                             row_dot(probs + i * nk, dp + i * nk, nk));
    tile_product(false, false, nq, d, nk, p->scale, dp, nk, k, d, 0.0f,
                 t->dq + h * nq * d, d, counts);                       /* dQ = s dS K */
    tile_product(true, false, nk, d, nq, p->scale, dp, nk, q, d, 0.0f,
                 t->dk + h * nk * d, d, counts);                       /* dK = s dS^T Q */
}
static void *naive_workspace_new(const attn_params *p)
{
    return fa_alloc(fa_mul(fa_mul(p->nq, p->nk), sizeof(float)));
}

static void naive_workspace_free(void *workspace) { fa_free(workspace); }
void attention_backward_naive(const attn_params *p, const float *q, const float *k,
                              const float *v, const float *probs, const float *dout,
                              float *dq, float *dk, float *dv, int threads,
                              bwd_counts *counts)
{
    const head_tensors t = { .q = q, .k = k, .v = v, .probs = probs, .dout = dout,
                             .dq = dq, .dk = dk, .dv = dv };
    const head_job job = { .p = p, .t = &t, .run = naive_backward_one_head,
                           .workspace_new = naive_workspace_new,
                           .workspace_free = naive_workspace_free };
    run_heads(&job, threads, counts);
}
static void flash_key_block(const attn_params *p, const head_view *hv, size_t k0,
                            size_t cols, bwd_workspace *w, bwd_counts *counts)
{
    memset(hv->dk + k0 * p->d, 0, cols * p->d * sizeof(float));
    memset(hv->dv + k0 * p->d, 0, cols * p->d * sizeof(float));
    pack_transposed(hv->k + k0 * p->d, cols, p->d, w->kt);
    pack_transposed(hv->v + k0 * p->d, cols, p->d, w->vt);
    for (size_t q0 = 0; q0 < p->nq; q0 += p->block_q) {
        const size_t rows = bwd_min(p->block_q, p->nq - q0);
        const attn_tile_kind kind = attn_tile_classify(p, q0, rows, k0, cols);
        if (count_bwd_tile(counts, kind))
            flash_tile(p, hv, q0, rows, k0, cols, kind, w, counts);
    }
}
static void flash_tile(const attn_params *p, const head_view *hv, size_t q0, size_t rows,
                       size_t k0, size_t cols, attn_tile_kind kind, bwd_workspace *w,
                       bwd_counts *counts)
{
    const size_t d = p->d;
    const float *qb = hv->q + q0 * d, *kb = hv->k + k0 * d, *dob = hv->dout + q0 * d;
    reg_product(rows, cols, d, qb, d, 1, w->kt, cols, w->p, cols, p->scale, false,
                counts);                                       /* S = s Q K^T */
    if (kind == ATTN_TILE_MASKED) mask_tile(p, q0, rows, k0, cols, w->p);
    recompute_probabilities(w->p, rows, cols, hv->lse + q0, counts);
    reg_product(cols, d, rows, w->p, 1, cols, dob, d, hv->dv + k0 * d, d, 1.0f, true,
                counts);                                       /* dV += P^T dO */
    reg_product(rows, cols, d, dob, d, 1, w->vt, cols, w->ds, cols, 1.0f, false,
                counts);                                       /* dP = dO V^T */
    for (size_t r = 0; r < rows; r++)
        softmax_backward_row(w->p + r * cols, w->ds + r * cols, cols, w->dsum[q0 + r]);
    reg_product(rows, d, cols, w->ds, cols, 1, kb, d, hv->dq + q0 * d, d, p->scale, true,
                counts);                                           /* dQ += s dS K */
    reg_product(cols, d, rows, w->ds, 1, cols, qb, d, hv->dk + k0 * d, d, p->scale, true,
                counts);                                           /* dK += s dS^T Q */
}
static void recompute_probabilities(float *s, size_t rows, size_t cols, const float *lse,
                                    bwd_counts *counts)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = s + r * cols;
        if (lse[r] == -INFINITY) { memset(row, 0, cols * sizeof *row); continue; }
        bwd_exp_shifted(row, cols, lse[r]);
    }
    counts->exps += (double)rows * (double)cols;
}
static inline float exp_reduced(float x, float *y)
{
    const float shifter = 0x1.8p23f;                   /* 1.5 * 2^23 */
    *y = fmaf(x, 1.44269504f, shifter);                /* n sits in the low bits */
    const float n = *y - shifter;                      /* x / ln 2, rounded */
    const float r = fmaf(n, -1.42860677e-6f, fmaf(n, -0.693145752f, x));
    float e = 1.0f / 5040.0f;
    e = fmaf(e, r, 1.0f / 720.0f); e = fmaf(e, r, 1.0f / 120.0f);
    e = fmaf(e, r, 1.0f / 24.0f);  e = fmaf(e, r, 1.0f / 6.0f);
    e = fmaf(e, r, 0.5f);          e = fmaf(e, r, 1.0f);
    return fmaf(e, r, 1.0f);                           /* e^r */
}
static inline float exp_approx(float x)
{
    float y, two_n, result;
    const float e_r = exp_reduced(x, &y);
    uint32_t y_bits, bits;
    memcpy(&y_bits, &y, sizeof y_bits);
    const uint32_t biased = y_bits - 0x4B400000u + 127u;       /* n + 127 */
    bits = biased << 23;
    memcpy(&two_n, &bits, sizeof two_n);
    result = e_r * two_n;
    memcpy(&bits, &result, sizeof bits);
    bits &= biased - 1u < 254u ? 0xFFFFFFFFu : 0u;     /* no normal 2^n: 0 */
    memcpy(&result, &bits, sizeof result);
    return result;
}
void bwd_exp_shifted(float *x, size_t n, float shift)
{
    for (size_t j = 0; j < n; j++) x[j] = exp_approx(x[j] - shift);
}
static void flash_backward_one_head(const attn_params *p, const head_tensors *t,
                                    size_t h, void *workspace, bwd_counts *counts)
{
    const size_t qo = h * p->nq * p->d, ko = h * p->nk * p->d;
    const head_view hv = { .q = t->q + qo, .k = t->k + ko, .v = t->v + ko,
                           .dout = t->dout + qo, .lse = t->lse_in + h * p->nq,
                           .dq = t->dq + qo, .dk = t->dk + ko, .dv = t->dv + ko };
    bwd_workspace *w = workspace;
    for (size_t i = 0; i < p->nq; i++)
        w->dsum[i] = row_dot(hv.dout + i * p->d, t->o_in + qo + i * p->d, p->d);
    memset(hv.dq, 0, p->nq * p->d * sizeof(float));
    for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k)
        flash_key_block(p, &hv, k0, bwd_min(p->block_k, p->nk - k0), w, counts);
}
static void *bwd_workspace_new(const attn_params *p)
{
    const size_t rows = bwd_min(p->block_q, p->nq), cols = bwd_min(p->block_k, p->nk);
    bwd_workspace *w = fa_alloc(sizeof *w);
    w->p = fa_alloc(fa_mul(fa_mul(rows, cols), sizeof(float)));
    w->ds = fa_alloc(fa_mul(fa_mul(rows, cols), sizeof(float)));
    w->kt = fa_alloc(fa_mul(fa_mul(cols, p->d), sizeof(float)));
    w->vt = fa_alloc(fa_mul(fa_mul(cols, p->d), sizeof(float)));
    w->dsum = fa_alloc(fa_mul(p->nq, sizeof(float)));
    return w;
}

static void bwd_workspace_free(void *workspace)
{
    bwd_workspace *w = workspace;
    fa_free(w->p); fa_free(w->ds); fa_free(w->kt); fa_free(w->vt); fa_free(w->dsum);
    fa_free(w);
}
void attention_backward_flash(const attn_params *p, const float *q, const float *k,
                              const float *v, const float *o, const float *lse,
                              const float *dout, float *dq, float *dk, float *dv,
                              int threads, bwd_counts *counts)
{
    const head_tensors t = { .q = q, .k = k, .v = v, .o_in = o, .lse_in = lse,
                             .dout = dout, .dq = dq, .dk = dk, .dv = dv };
    const head_job job = { .p = p, .t = &t, .run = flash_backward_one_head,
                           .workspace_new = bwd_workspace_new,
                           .workspace_free = bwd_workspace_free };
    run_heads(&job, threads, counts);
}
typedef struct {
    const head_job *job;
    atomic_size_t *next_head;
    bwd_counts counts;
} head_worker;
static void *head_worker_main(void *arg)
{
    head_worker *me = arg;
    const head_job *job = me->job;
    const size_t heads = job->p->batch * job->p->heads;
    void *w = job->workspace_new ? job->workspace_new(job->p) : NULL;
    for (size_t h; (h = atomic_fetch_add(me->next_head, 1)) < heads;)
        job->run(job->p, job->t, h, w, &me->counts);
    if (w) job->workspace_free(w);
    return NULL;
}
static void run_heads(const head_job *job, int threads, bwd_counts *counts)
{
    require_valid_params(job->p);
    const size_t heads = job->p->batch * job->p->heads;
    size_t n = threads < 1 ? 1 : (size_t)threads;
    if (n > heads) n = heads;
    if (n > BWD_MAX_THREADS) n = BWD_MAX_THREADS;
    atomic_size_t next_head = 0;
    head_worker workers[BWD_MAX_THREADS];
    openblas_set_num_threads(1);
    pthread_t ids[BWD_MAX_THREADS];
    for (size_t i = 0; i < n; i++)
        workers[i] = (head_worker){ .job = job, .next_head = &next_head };
    workers_start(ids, (int)n, head_worker_main, workers, sizeof workers[0], "the backward");
    head_worker_main(&workers[0]);
    workers_join(ids, (int)n);
    bwd_counts total = { 0 };
    for (size_t i = 0; i < n; i++) add_counts(&total, &workers[i].counts);
    if (counts) *counts = total;
}
static void add_counts(bwd_counts *sum, const bwd_counts *c)
{
    sum->tiles_computed += c->tiles_computed;
    sum->tiles_skipped += c->tiles_skipped;
    sum->tiles_masked += c->tiles_masked;
    sum->matmul_flops += c->matmul_flops;
    sum->exps += c->exps;
}

static void require_valid_params(const attn_params *p)
{
    const char *problem = attn_params_problem(p);
    if (problem) { fprintf(stderr, "backward: error: %s\n", problem); exit(2); }
}
static double head_loss(const attn_params *p, const double *q, const double *k,
                        const double *v, const float *dout, double *row)
{
    double loss = 0.0;
    for (size_t i = 0; i < p->nq; i++) {
        double m = -INFINITY, sum = 0.0, dot = 0.0;
        for (size_t j = 0; j < p->nk; j++) {
            double s = 0.0;
            for (size_t c = 0; c < p->d; c++) s += q[i * p->d + c] * k[j * p->d + c];
            row[j] = s * (double)p->scale;
            if (attn_visible(p, i, j) && row[j] > m) m = row[j];
        }
        if (m == -INFINITY) continue;                 /* a row of zeros */
        for (size_t j = 0; j < p->nk; j++) {
            if (!attn_visible(p, i, j)) continue;
            const double w = exp(row[j] - m);
            sum += w;
            for (size_t c = 0; c < p->d; c++) dot += w * v[j * p->d + c] * dout[i * p->d + c];
        }
        loss += dot / sum;
    }
    return loss;
}
static void fd_one_tensor(const attn_params *p, double *x, size_t count, double *grad,
                          const double *qkv[3], const float *dout, double *row)
{
    const double h = 0x1p-16;
    for (size_t e = 0; e < count; e++) {
        const double keep = x[e];
        x[e] = keep + h;
        const double up = head_loss(p, qkv[0], qkv[1], qkv[2], dout, row);
        x[e] = keep - h;
        const double down = head_loss(p, qkv[0], qkv[1], qkv[2], dout, row);
        x[e] = keep;
        grad[e] = (up - down) / (2.0 * h);
    }
}
void attention_grad_fd(const attn_params *p, const float *q, const float *k,
                       const float *v, const float *dout, double *dq, double *dk,
                       double *dv)
{
    require_valid_params(p);
    const size_t nq = p->nq * p->d, nk = p->nk * p->d;
    double *x[3] = { fa_alloc(fa_mul(nq, 8)), fa_alloc(fa_mul(nk, 8)),
                     fa_alloc(fa_mul(nk, 8)) }, *row = fa_alloc(fa_mul(p->nk, 8));
    const double *qkv[3] = { x[0], x[1], x[2] };
    for (size_t h = 0; h < p->batch * p->heads; h++) {
        for (size_t e = 0; e < nq; e++) x[0][e] = q[h * nq + e];
        for (size_t e = 0; e < nk; e++) { x[1][e] = k[h * nk + e]; x[2][e] = v[h * nk + e]; }
        fd_one_tensor(p, x[0], nq, dq + h * nq, qkv, dout + h * nq, row);
        fd_one_tensor(p, x[1], nk, dk + h * nk, qkv, dout + h * nq, row);
        fd_one_tensor(p, x[2], nk, dv + h * nk, qkv, dout + h * nq, row);
    }
    for (int t = 0; t < 3; t++) fa_free(x[t]);
    fa_free(row);
}
static bool all_finite(const float *x, size_t n)
{
    bool finite = true;
    for (size_t e = 0; e < n; e++) finite &= isfinite(x[e]);
    return finite;
}

static bool head_is_finite(const attn_params *p, const bwd_head_out *t, size_t h)
{
    const size_t qn = p->nq * p->d, kn = p->nk * p->d;
    bool finite = all_finite(t->o + h * qn, qn) && all_finite(t->dq + h * qn, qn)
               && all_finite(t->dk + h * kn, kn) && all_finite(t->dv + h * kn, kn);
    for (size_t i = 0; t->lse && finite && i < p->nq; i++)
        finite = isfinite(t->lse[h * p->nq + i]) || !attn_row_sees_a_key(p, i);
    return finite;
}

static double exact_row_forward(const attn_params *p, const bwd_head_out *t, size_t h,
                                size_t i, bwd_exact_work *w)
{
    const size_t d = p->d;
    const float *qi = t->q + (h * p->nq + i) * d, *k = t->k + h * p->nk * d;
    double m = -INFINITY, l = 0.0;
    for (size_t j = 0; j < p->nk; j++) {
        if (!attn_visible(p, i, j)) continue;
        double dot = 0.0;
        for (size_t c = 0; c < d; c++) dot += (double)qi[c] * k[j * d + c];
        w->s[j] = (double)p->scale * dot;
        m = isnan(m) || isnan(w->s[j]) ? NAN : fmax(m, w->s[j]);
    }
    for (size_t j = 0; j < p->nk; j++)
        if (attn_visible(p, i, j)) l += (w->s[j] = exp(w->s[j] - m));
    for (size_t c = 0; c < d; c++) w->o[c] = 0.0;
    for (size_t j = 0; j < p->nk; j++) {
        if (!attn_visible(p, i, j)) continue;
        w->s[j] /= l;
        for (size_t c = 0; c < d; c++) w->o[c] += w->s[j] * t->v[(h * p->nk + j) * d + c];
    }
    return m + log(l);
}

static void exact_row_backward(const attn_params *p, const bwd_head_out *t, size_t h,
                               size_t i, bwd_exact_work *w)
{
    const size_t d = p->d, nk = p->nk;
    const float *qi = t->q + (h * p->nq + i) * d, *doi = t->dout + (h * p->nq + i) * d;
    const float *k = t->k + h * nk * d, *v = t->v + h * nk * d;
    double dsum = 0.0;
    for (size_t c = 0; c < d; c++) { dsum += (double)doi[c] * w->o[c]; w->dq[c] = 0.0; }
    for (size_t j = 0; j < nk; j++) {
        if (!attn_visible(p, i, j)) continue;
        double dp = 0.0;
        for (size_t c = 0; c < d; c++) dp += (double)doi[c] * v[j * d + c];
        const double ds = w->s[j] * (dp - dsum) * (double)p->scale;
        for (size_t c = 0; c < d; c++) {
            w->dv[j * d + c] += w->s[j] * doi[c];
            w->dq[c] += ds * k[j * d + c];
            w->dk[j * d + c] += ds * qi[c];
        }
    }
}

static void exact_head(const attn_params *p, const bwd_head_out *t, size_t h,
                       bwd_exact_work *w)
{
    const size_t d = p->d, kn = p->nk * d;
    for (size_t e = 0; e < kn; e++) w->dk[e] = w->dv[e] = 0.0;
    for (size_t i = 0; i < p->nq; i++) {
        const size_t at = (h * p->nq + i) * d;
        const bool sees = attn_row_sees_a_key(p, i);
        const double lse = sees ? exact_row_forward(p, t, h, i, w) : -INFINITY;
        if (sees) exact_row_backward(p, t, h, i, w);
        for (size_t c = 0; c < d; c++) {
            t->o[at + c] = sees ? (float)w->o[c] : 0.0f;
            t->dq[at + c] = sees ? (float)w->dq[c] : 0.0f;
        }
        if (t->lse) t->lse[h * p->nq + i] = (float)lse;
    }
    for (size_t e = 0; e < kn; e++) {
        t->dk[h * kn + e] = (float)w->dk[e];
        t->dv[h * kn + e] = (float)w->dv[e];
    }
}

size_t attention_backward_repair(const attn_params *p, const float *q, const float *k,
                                 const float *v, const float *dout, float *o, float *lse,
                                 float *dq, float *dk, float *dv)
{
    const bwd_head_out t = { q, k, v, dout, o, lse, dq, dk, dv };
    const size_t kn = fa_mul(p->nk, p->d);
    bwd_exact_work w = { NULL, NULL, NULL, NULL, NULL };
    size_t repaired = 0;
    for (size_t h = 0; h < p->batch * p->heads; h++) {
        if (head_is_finite(p, &t, h)) continue;
        if (w.s == NULL)
            w = (bwd_exact_work){ fa_alloc(fa_mul(p->nk, 8)), fa_alloc(fa_mul(p->d, 8)),
                                  fa_alloc(fa_mul(p->d, 8)), fa_alloc(fa_mul(kn, 8)),
                                  fa_alloc(fa_mul(kn, 8)) };
        exact_head(p, &t, h, &w);
        repaired++;
    }
    fa_free(w.s); fa_free(w.o); fa_free(w.dq); fa_free(w.dk); fa_free(w.dv);
    return repaired;
}

