#include <criterion/criterion.h>
#include <stdbool.h>
#include "ex_7_4.h"

static attn_tile_kind brute_lower_right(size_t q0, size_t rows, size_t k0, size_t cols,
                                        size_t nq, size_t nk)
{
    size_t seen = 0;
    for (size_t i = q0; i < q0 + rows; i++)
        for (size_t j = k0; j < k0 + cols; j++)
            seen += (long long)j <= (long long)i + (long long)nk - (long long)nq;
    return seen == 0 ? ATTN_TILE_SKIPPED
         : seen == rows * cols ? ATTN_TILE_FULL : ATTN_TILE_MASKED;
}

static void check_lower_right_tile(size_t q0, size_t rows, size_t k0, size_t cols,
                                   size_t nq, size_t nk)
{
    static const char *const kind[] = { "skipped", "full", "masked" };
    attn_tile_kind want = brute_lower_right(q0, rows, k0, cols, nq, nk);
    attn_tile_kind got = ex_lower_right_classify(q0, rows, k0, cols, nq, nk);
    cr_assert_eq(got, want, "hint: Nq %zu, Nk %zu, queries %zu..%zu, keys %zu..%zu: %s, not %s",
                 nq, nk, q0, q0 + rows - 1, k0, k0 + cols - 1, kind[want], kind[got]);
}
static void check_shapes(bool square)
{
    for (size_t nq = 1; nq <= 10; nq++)
        for (size_t nk = 1; nk <= 10; nk++)
            for (size_t rows = 1; rows <= 3 && (nq == nk) == square; rows++)
                for (size_t cols = 1; cols <= 3; cols++)
                    for (size_t q0 = 0; q0 + rows <= nq; q0++)
                        for (size_t k0 = 0; k0 + cols <= nk; k0++)
                            check_lower_right_tile(q0, rows, k0, cols, nq, nk);
}
Test(grade_7_4, square, .description = "Nq = Nk: the top-left mask again")
{
    check_shapes(true);
}

Test(grade_7_4, rectangles, .description = "Nq != Nk: every tile of every shape up to 10 x 10")
{
    check_shapes(false);
}
