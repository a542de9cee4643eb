/* grade_8_6.c — the grader of exercise 8.6, with its solution.
   Tangled from chapters/ch08_fused_timing.nw. */
#include <criterion/criterion.h>
#include "harness.h"
#include "fused.h"
attn_counts fused_counts_closed_form(const attn_params *p);

Test(grade_8_6, closed_form_equals_the_kernels_count)
{
    const size_t n[] = { 1, 7, 100, 129, 1000 }, b[] = { 1, 16, 64, 100, 128 };
    for (size_t i = 0; i < 5; i++) for (size_t j = 0; j < 5; j++) for (size_t k = 0; k < 5; k++) {
        attn_params p = attn_default(2, 3, n[i], n[j], 59);
        p.block_q = b[k];
        p.block_k = b[(k + 2) % 5];
        attn_counts walk = { 0 };
        attention_fused(&p, NULL, NULL, NULL, NULL,
                        &(fused_config){ .threads = 1, .count_only = true }, &walk);
        const attn_counts mine = fused_counts_closed_form(&p);
        cr_expect(mine.flops == walk.flops && mine.k_bytes == walk.k_bytes
                  && mine.v_bytes == walk.v_bytes && mine.q_bytes == walk.q_bytes
                  && mine.o_bytes == walk.o_bytes && mine.tiles_computed == walk.tiles_computed,
                  "nq %zu nk %zu blocks %zu x %zu", n[i], n[j], p.block_q, p.block_k);
    }
}
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
