#include <criterion/criterion.h>
#include <math.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "ex_5_3.h"

static double update_error(attn_params p)
{
    size_t heads = p.batch * p.heads, nq = heads * p.nq * p.d, nk = heads * p.nk * p.d;
    float *q = fa_alloc(nq * sizeof *q), *k = fa_alloc(nk * sizeof *k);
    float *v = fa_alloc(nk * sizeof *v), *o = fa_alloc(nq * sizeof *o);
    double *ref = fa_alloc(nq * sizeof *ref);
    attn_draw_inputs(&p, 0, q, k, v);
    attention_tiled_with(&p, q, k, v, o, NULL, ex_online_update);
    attention_reference(&p, q, k, v, ref);
    double err = max_abs_diff_fd(o, ref, nq);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o); fa_free(ref);
    return err;
}

Test(grade_5_3, one_tile, .description = "one key tile: the softmax average of the values")
{
    attn_params p = attn_default(1, 1, 32, 32, 16);
    p.block_q = p.block_k = 32;
    double err = update_error(p);
    cr_expect(err < 1e-5, "hint: with one tile, m, l and acc start at -inf, 0, 0: "
              "l = sum e^(s - m'), acc = sum e^(s - m') v (error %g)", err);
}
Test(grade_5_3, many_tiles, .description = "sixteen key tiles: exact within 1e-5")
{
    attn_params p = attn_default(1, 2, 64, 256, 32);
    p.block_q = 16; p.block_k = 16;
    double err = update_error(p);
    cr_expect(err < 1e-5, "hint: when the max rises, both l and acc must be "
              "multiplied by alpha = e^(m - m') (error %g)", err);
}
Test(grade_5_3, late_rows, .description = "a window of 8: rows with nothing visible yet stay finite")
{
    attn_params p = attn_default(1, 1, 128, 128, 16);
    p.block_q = 32; p.block_k = 8; p.window = 8;
    double err = update_error(p);
    cr_expect(err < 1e-5, "hint: %s (error %g)", isnan(err)
              ? "a row whose scores are all -inf so far must be left unchanged: "
                "e^(-inf - (-inf)) is NaN"
              : "when the max rises, both l and acc must be multiplied by alpha", err);
}
