#include <criterion/criterion.h>
#include <math.h>
#include "ex_12_3.h"

static float x[12 * EX_12_3_WIDTH], out[4 * EX_12_3_WIDTH];
static const size_t offset[5] = { 0, 3, 4, 10, 12 };
static void fill(void)
{
    for (size_t i = 0; i < 12 * EX_12_3_WIDTH; i++)
        x[i] = (float)((i * 7919 % 1000) - 500) / 100.0f + (float)(i / EX_12_3_WIDTH);
}
Test(grade_12_3, first_rows, .init = fill, .description = "each sentence gets its own first row, scaled")
{
    ex_cls_pool(x, offset, 4, out);
    for (size_t s = 0; s < 4; s++) {
        const float *row = x + offset[s] * EX_12_3_WIDTH;
        double norm = 0;
        for (size_t j = 0; j < EX_12_3_WIDTH; j++) norm += (double)row[j] * row[j];
        for (size_t j = 0; j < EX_12_3_WIDTH; j++)
            cr_assert_float_eq(out[s * EX_12_3_WIDTH + j], row[j] / sqrt(norm), 1e-6,
                               "hint: sentence %zu starts at row %zu; its feature %zu", s, offset[s], j);
    }
}
Test(grade_12_3, unit_length, .init = fill, .description = "every pooled vector has length 1")
{
    ex_cls_pool(x, offset, 4, out);
    for (size_t s = 0; s < 4; s++) {
        double norm = 0;
        for (size_t j = 0; j < EX_12_3_WIDTH; j++) norm += (double)out[s * EX_12_3_WIDTH + j] * out[s * EX_12_3_WIDTH + j];
        cr_assert_float_eq(norm, 1.0, 1e-5, "hint: divide by the L2 norm (sentence %zu)", s);
    }
}
