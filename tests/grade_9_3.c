/* grade_9_3.c — grader of exercise 9.3. Tangled from chapters/ch09_backward.nw. */
#include <criterion/criterion.h>
#include <math.h>
#include "harness/harness.h"
#include "ex_9_3.h"

static void check_dq(size_t i, size_t nq_, size_t nk_, size_t d, size_t bq, size_t bk,
                     int causal, long window)
{
    attn_params p = attn_default(1, 1, nq_, nk_, d);
    p.block_q = bq; p.block_k = bk; p.causal = causal || window; p.window = window;
    const size_t nq = nq_ * d, nk = nk_ * d;
    float *q = fa_alloc(nq * 4), *k = fa_alloc(nk * 4), *v = fa_alloc(nk * 4),
          *o = fa_alloc(nq * 4), *lse = fa_alloc(nq_ * 4), *dout = fa_alloc(nq * 4),
          *dq = fa_alloc(nq * 4), *dk = fa_alloc(nk * 4), *dv = fa_alloc(nk * 4),
          *mine = fa_alloc(nq * 4);
    attn_draw_inputs(&p, (uint32_t)i, q, k, v);
    attn_draw_inputs(&p, (uint32_t)i + 100, dout, dk, dv);      /* dO: any numbers */
    attention_forward_lse(&p, q, k, v, o, lse, 1, NULL);
    attention_backward_flash(&p, q, k, v, o, lse, dout, dq, dk, dv, 1, NULL);
    for (size_t q0 = 0; q0 < nq_; q0 += bq)
        dq_for_query_block(&p, q, k, v, o, lse, dout, q0, nq_ - q0 < bq ? nq_ - q0 : bq, mine);
    for (size_t e = 0; e < nq; e++)
        cr_assert(fabsf(mine[e] - dq[e]) < 1e-5f,
                  "hint: problem %zu, row %zu, column %zu: %g, the kernel's %g "
                  "(D, the mask, a skipped tile?)", i, e / d, e % d, mine[e], dq[e]);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o); fa_free(lse); fa_free(dout);
    fa_free(dq); fa_free(dk); fa_free(dv); fa_free(mine);
}
Test(grade_9_3, ragged, .description = "37 queries, 50 keys, tiles of 8 by 7, no mask")
{ check_dq(0, 37, 50, 5, 8, 7, 0, 0); }
Test(grade_9_3, causal, .description = "64 by 64, d = 16, tiles of 16, causal")
{ check_dq(1, 64, 64, 16, 16, 16, 1, 0); }
Test(grade_9_3, window, .description = "30 queries, 10 keys, a window of 5 with empty rows")
{ check_dq(2, 30, 10, 3, 4, 3, 1, 5); }
Test(grade_9_3, tall, .description = "100 queries, 40 keys, d = 32, tiles of 64 by 13")
{ check_dq(3, 100, 40, 32, 64, 13, 0, 0); }
