#include <criterion/criterion.h>
#include <math.h>
#include "ex_1_3.h"

Test(grade_1_3, intensity, .description = "flops per byte of S = QK^T at two shapes")
{
    double a = ex_score_intensity(1, 1), b = ex_score_intensity(4096, 64);
    cr_expect(fabs(a - 2.0 / 12.0) < 1e-12, "hint: n = d = 1 gives 2 flops / 12 bytes, not %g", a);
    cr_expect(fabs(b - 2147483648.0 / 69206016.0) < 1e-9,
              "hint: count the bytes of Q, K and S, 4 each (got %g)", b);
}
Test(grade_1_3, ceiling, .description = "the intensity stays below n/4 and approaches it")
{
    double big = ex_score_intensity(1024, 1e9);
    cr_expect(big < 256.0 && big > 255.9,
              "hint: writing S costs 4 n^2 bytes whatever d is (got %g at d = 1e9)", big);
}

Test(grade_1_3, ridge, .description = "the ridge dimension reaches the ridge, and no less does")
{
    double d = ex_ridge_dim(8192, 40.0);
    cr_assert(isfinite(d) && d > 0, "hint: 8192 > 4 x 40, so some d reaches the ridge (got %g)", d);
    cr_expect(fabs(ex_score_intensity(8192, d) - 40.0) < 1e-6, "hint: solve for equality");
    cr_expect(ex_score_intensity(8192, 0.99 * d) < 40.0, "hint: the smallest such d");
    cr_expect(isinf(ex_ridge_dim(100, 40.0)),
              "hint: n = 100 caps the intensity at 25, below a ridge of 40");
}
