#include <criterion/criterion.h>
#include <math.h>
#include "cpu/softmax.h"
#include "ex_3_4.h"

Test(grade_3_4, agrees, .description = "the merge agrees with softmax_merge on two blocks")
{
    float x[50];
    for (int i = 0; i < 50; i++)
        x[i] = 4.0f * sinf(0.9f * (float)i);
    softmax_partial a = softmax_partial_of(x, 20), b = softmax_partial_of(x + 20, 30);
    softmax_partial ab = softmax_merge(a, b);
    float want = ab.max + logf(ab.sum);
    float got = ex_lse_merge(a.max + logf(a.sum), b.max + logf(b.sum));
    cr_expect(fabsf(got - want) < 1e-5f, "hint: factor e^max out of e^l1 + e^l2 (%g, not %g)", got, want);
}
Test(grade_3_4, large, .description = "lambda = 100 twice gives 100 + ln 2, no overflow")
{
    float got = ex_lse_merge(100.0f, 100.0f);
    cr_expect(fabsf(got - (100.0f + logf(2.0f))) < 1e-4f,
              "hint: e^100 overflows fp32; subtract the max first (got %g)", got);
}
Test(grade_3_4, empty, .description = "an empty partial (-inf) changes nothing")
{
    cr_expect(ex_lse_merge(-INFINITY, 3.0f) == 3.0f && ex_lse_merge(3.0f, -INFINITY) == 3.0f,
              "hint: e^(-inf) = 0");
    cr_expect(ex_lse_merge(-INFINITY, -INFINITY) == -INFINITY,
              "hint: -inf - (-inf) is NaN; return -inf when both are empty");
}
