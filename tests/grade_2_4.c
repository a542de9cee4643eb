#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include "cpu/online_softmax.h"
#include "ex_2_4.h"

Test(grade_2_4, six_logits, .description = "the six logits: l = 2.5598 at every block size")
{
    const float x[6] = { 0.4f, 0.9f, 0.5f, 1.8f, 0.6f, 0.7f };
    for (size_t b = 1; b <= 6; b++) {
        float m = 0.0f, l = ex_stream_sum(x, 6, b, &m);
        cr_expect(m == 1.8f, "hint: the running max is the largest logit so far (block %zu)", b);
        cr_expect(fabsf(l - 2.5598f) < 1e-4f,
                  "hint: multiply the old sum by e^(m_old - m_new) when the max rises "
                  "(block %zu: l = %g)", b, l);
    }
}
Test(grade_2_4, every_block, .description = "37 logits: the one-shot sum at every block size")
{
    float x[37];
    for (int i = 0; i < 37; i++)
        x[i] = 3.0f * sinf(1.7f * (float)i) + 0.1f * (float)i;
    float one_shot = sum_exp_below(x, 37, block_max(x, 37));
    for (size_t b = 1; b <= 40; b++) {
        float m = 0.0f, l = ex_stream_sum(x, 37, b, &m);
        cr_expect(ieee_ulp_eq(flt, l, one_shot, 8),
                  "hint: a short last block counts too (block %zu: %g, not %g)", b, l, one_shot);
    }
}
Test(grade_2_4, masked_start, .description = "a masked first block leaves no NaN")
{
    const float x[4] = { -INFINITY, -INFINITY, 1.0f, 2.0f };
    float m = 0.0f, l = ex_stream_sum(x, 4, 2, &m);
    cr_expect(m == 2.0f && fabsf(l - (1.0f + expf(-1.0f))) < 1e-6f,
              "hint: while m is -inf, skip the rebase: e^(-inf - (-inf)) is NaN (l = %g)", l);
}
