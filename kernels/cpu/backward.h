/* backward.h — attention's backward pass: naive (keeps P) and flash
   (recomputes P from the log-sum-exp). Tangled from chapters/ch09_backward.nw. */
#ifndef BACKWARD_H
#define BACKWARD_H
#include <stddef.h>
#include "cpu/attention.h"

enum { BWD_MAX_THREADS = 256 };
typedef struct {
    size_t tiles_computed, tiles_skipped, tiles_masked;
    double matmul_flops;   /* 2 per multiply-add of the products, counted per tile */
    double exps;           /* exponentials taken */
} bwd_counts;
/* tiled forward that also saves L_i = m_i + log l_i per query row
   (-inf for a row that sees no key); counts may be NULL */
void attention_forward_lse(const attn_params *p, const float *q, const float *k,
                           const float *v, float *o, float *lse, int threads,
                           bwd_counts *counts);
/* naive forward that keeps P (batch*heads*nq*nk floats) for the backward */
void attention_forward_keep_p(const attn_params *p, const float *q, const float *k,
                              const float *v, float *o, float *probs, int threads,
                              bwd_counts *counts);
/* naive backward from the kept P; dq, dk, dv are written */
void attention_backward_naive(const attn_params *p, const float *q, const float *k,
                              const float *v, const float *probs, const float *dout,
                              float *dq, float *dk, float *dv, int threads,
                              bwd_counts *counts);
/* flash backward: recomputes P from q, k and the forward's lse; dq, dk, dv
   are written; bit-identical for every thread count */
void attention_backward_flash(const attn_params *p, const float *q, const float *k,
                              const float *v, const float *o, const float *lse,
                              const float *dout, float *dq, float *dk, float *dv,
                              int threads, bwd_counts *counts);
/* x_j = e^(x_j - shift), vectorized, within 1 ulp for normal results;
   0 below -87.3 and for -inf; x_j - shift must not exceed 88 */
void bwd_exp_shifted(float *x, size_t n, float shift);
/* dL/dq, dL/dk, dL/dv of L = sum(dout * attention(q, k, v)) by central
   differences in double precision; slow: for small shapes */
void attention_grad_fd(const attn_params *p, const float *q, const float *k,
                       const float *v, const float *dout, double *dq, double *dk,
                       double *dv);
/* chapter 4's rules for unusual data: every head whose float32 results (o,
   dq, dk, dv, and lse for the rows that see a key; lse may be NULL) hold a
   NaN or an infinity is computed again in double over the visible pairs and
   rounded; returns how many heads */
size_t attention_backward_repair(const attn_params *p, const float *q, const float *k,
                                 const float *v, const float *dout, float *o, float *lse,
                                 float *dq, float *dk, float *dv);
#endif
