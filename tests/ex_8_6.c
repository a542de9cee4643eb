#include "ex_8_6.h"

attn_counts fused_counts_closed_form(const attn_params *p)
{
    const double heads = (double)(p->batch * p->heads), d = (double)p->d;
    const double nq = (double)p->nq, nk = (double)p->nk;
    const size_t qb = (p->nq + p->block_q - 1) / p->block_q;
    const size_t kb = (p->nk + p->block_k - 1) / p->block_k;
    attn_counts c = { .flops = 4.0 * heads * nq * nk * d,
                      .q_bytes = 4.0 * heads * nq * d, .o_bytes = 4.0 * heads * nq * d,
                      .k_bytes = 4.0 * heads * nk * d * (double)qb,
                      .v_bytes = 4.0 * heads * nk * d * (double)qb,
                      .tiles_computed = (size_t)heads * qb * kb };
    return c;
}
