#include <criterion/criterion.h>
#include <stdbool.h>
#include "ex_4_4.h"

static attn_tile_kind brute_padded(size_t q0, size_t rows, size_t k0, size_t cols,
                                   size_t nk_valid, bool causal)
{
    size_t seen = 0;
    for (size_t i = q0; i < q0 + rows; i++)
        for (size_t j = k0; j < k0 + cols; j++)
            seen += j < nk_valid && (!causal || j <= i);
    return seen == 0 ? ATTN_TILE_SKIPPED
         : seen == rows * cols ? ATTN_TILE_FULL : ATTN_TILE_MASKED;
}

static void check_tile(size_t q0, size_t rows, size_t k0, size_t cols, size_t valid, bool causal)
{
    static const char *const kind[] = { "skipped", "full", "masked" };
    attn_tile_kind want = brute_padded(q0, rows, k0, cols, valid, causal);
    attn_tile_kind got = ex_padded_classify(q0, rows, k0, cols, valid, causal);
    cr_assert_eq(got, want, "hint: queries %zu..%zu, keys %zu..%zu, nk_valid %zu: %s, not %s",
                 q0, q0 + rows - 1, k0, k0 + cols - 1, valid, kind[want], kind[got]);
}
static void check_every_tile(bool causal)
{
    for (size_t valid = 0; valid <= 12; valid++)
        for (size_t rows = 1; rows <= 4; rows++)
            for (size_t cols = 1; cols <= 4; cols++)
                for (size_t q0 = 0; q0 + rows <= 12; q0++)
                    for (size_t k0 = 0; k0 + cols <= 12; k0++)
                        check_tile(q0, rows, k0, cols, valid, causal);
}
Test(grade_4_4, padding, .description = "every tile of a 12 x 12 grid, padding mask only")
{
    check_every_tile(false);
}

Test(grade_4_4, padding_causal, .description = "every tile of a 12 x 12 grid, padding and causal")
{
    check_every_tile(true);
}
