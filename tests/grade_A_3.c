#include <criterion/criterion.h>
#include <math.h>
#include "ex_A_3.h"

Test(grade_A_3, small, .description = "1..5 has IQR 2; 4, 1, 3, 2 has IQR 1.5")
{
    double five[5] = { 5, 1, 4, 2, 3 }, four[4] = { 4, 1, 3, 2 };
    double a = ex_iqr_of(five, 5), b = ex_iqr_of(four, 4);
    cr_expect(fabs(a - 2.0) < 1e-12, "hint: sort first; Q1 at position 1, Q3 at 3 (got %g)", a);
    cr_expect(fabs(b - 1.5) < 1e-12,
              "hint: Q1 at position 0.75 is 1.75, Q3 at 2.25 is 3.25 (got %g)", b);
}
Test(grade_A_3, eight, .description = "eight numbers: Q1 = 2.75, Q3 = 8.25")
{
    double x[8] = { 10, 1, 9, 2, 8, 3, 7, 4 };
    double iqr = ex_iqr_of(x, 8);
    cr_expect(fabs(iqr - 5.5) < 1e-12, "hint: interpolate between neighbours (got %g)", iqr);
}

Test(grade_A_3, degenerate, .description = "one number has IQR 0; none has NaN")
{
    double one[1] = { 7 };
    cr_expect(ex_iqr_of(one, 1) == 0.0, "hint: with n = 1 both quartiles are the number");
    cr_expect(isnan(ex_iqr_of(NULL, 0)), "hint: return NaN before reading x when n = 0");
}
