#include <criterion/criterion.h>
#include "harness/harness.h"
#include "ex_8_6.h"

static void check_shape(size_t nq, size_t nk, size_t bq, size_t bk)
{
    attn_params p = attn_default(2, 3, nq, nk, 59);
    p.block_q = bq;
    p.block_k = bk;
    attn_counts walk = { 0 };
    attention_fused(&p, NULL, NULL, NULL, NULL, &(fused_config){ .threads = 1,
                    .count_only = true, .block_q = bq, .block_k = bk }, &walk);
    const attn_counts mine = fused_counts_closed_form(&p);
    #define SHAPE "nq %zu nk %zu, blocks %zu x %zu", nq, nk, bq, bk
    cr_assert(mine.flops == walk.flops, "hint: flops %g, not %g; " SHAPE, walk.flops, mine.flops);
    cr_assert(mine.q_bytes == walk.q_bytes && mine.o_bytes == walk.o_bytes,
              "hint: Q and O are read or written once; " SHAPE);
    cr_assert(mine.k_bytes == walk.k_bytes && mine.v_bytes == walk.v_bytes,
              "hint: K and V bytes %g, not %g: once per query block; " SHAPE,
              walk.k_bytes, mine.k_bytes);
    cr_assert(mine.tiles_computed == walk.tiles_computed,
              "hint: %zu blocks computed, not %zu: count the short last blocks; " SHAPE,
              walk.tiles_computed, mine.tiles_computed);
    #undef SHAPE
}

Test(grade_8_6, closed_form_equals_the_kernels_count,
     .description = "every count, 125 shapes: lengths 1 to 1000, blocks 1 to 128")
{
    const size_t n[] = { 1, 7, 100, 129, 1000 }, b[] = { 1, 16, 64, 100, 128 };
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++)
            for (size_t k = 0; k < 5; k++)
                check_shape(n[i], n[j], b[k], b[(k + 2) % 5]);
}
