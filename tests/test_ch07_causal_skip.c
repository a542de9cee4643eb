/* test_ch07_causal_skip.c — tangled from chapters/ch07_causal_skip.nw. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "../tangled/ch07_causal_skip.h"

Test(ch07_causal_skip, counts_at_2048)
{
    const size_t block[] = { 128, 256, 512 }, computed[] = { 136, 36, 10 },
                 skipped[] = { 120, 28, 6 };
    const char *pct[] = { "47%", "44%", "38%" };
    char b[32];
    for (size_t i = 0; i < 3; i++) {
        tile_counts c = count_causal_tiles(2048, 2048, block[i], block[i]);
        cr_assert_eq(c.total, computed[i] + skipped[i]);
        cr_assert_eq(c.computed, computed[i]);
        cr_assert_eq(c.skipped, skipped[i]);
        cr_assert_eq(c.diagonal, 2048 / block[i]);
        cr_assert_str_eq(fmt_pct(b, (double)c.skipped / (double)c.total), pct[i]);
    }
}

Test(ch07_causal_skip, tile_states)
{
    cr_assert_eq(causal_tile_state(0, 127, 128, 255), TILE_SKIPPED);
    cr_assert_eq(causal_tile_state(128, 255, 0, 127), TILE_FULL);
    cr_assert_eq(causal_tile_state(0, 127, 0, 127), TILE_DIAGONAL);
    cr_assert_eq(causal_tile_state(5, 5, 5, 5), TILE_FULL);      /* 1x1, diagonal */
    cr_assert_eq(causal_tile_state(0, 9, 9, 12), TILE_DIAGONAL); /* one visible entry */
    cr_assert_eq(causal_tile_state(0, 9, 10, 12), TILE_SKIPPED);
}

static tile_state state_by_entries(size_t q0, size_t q1, size_t k0, size_t k1)
{
    size_t visible = 0, entries = (q1 - q0 + 1) * (k1 - k0 + 1);
    for (size_t i = q0; i <= q1; i++)
        for (size_t j = k0; j <= k1; j++) visible += j <= i;
    if (visible == 0) return TILE_SKIPPED;
    return visible == entries ? TILE_FULL : TILE_DIAGONAL;
}

Test(ch07_causal_skip, tile_states_follow_the_entries)
{
    for (size_t q0 = 0; q0 < 12; q0++)
        for (size_t q1 = q0; q1 < 12; q1++)
            for (size_t k0 = 0; k0 < 12; k0++)
                for (size_t k1 = k0; k1 < 12; k1++)
                    cr_assert_eq(causal_tile_state(q0, q1, k0, k1),
                                 state_by_entries(q0, q1, k0, k1),
                                 "rows %zu..%zu, keys %zu..%zu", q0, q1, k0, k1);
}

Test(ch07_causal_skip, closed_form_equals_the_count)
{
    for (size_t n = 1; n <= 300; n++)
        for (size_t b = 1; b <= n + 1; b++) {
            tile_counts c = count_causal_tiles(n, n, b, b);
            size_t T = blocks_of(n, b);
            size_t single_rows = (b == 1) ? T : (n % b == 1);
            cr_assert_eq(c.total, T * T);
            cr_assert_eq(c.computed, T * (T + 1) / 2, "n %zu b %zu", n, b);
            cr_assert_eq(c.skipped, T * (T - 1) / 2, "n %zu b %zu", n, b);
            cr_assert_eq(c.diagonal, T - single_rows, "n %zu b %zu", n, b);
            tile_counts off = c;
            off.skipped++;
            cr_assert(closed_form_holds(c, T));
            cr_assert(!closed_form_holds(off, T), "n %zu b %zu", n, b);
            cr_assert_eq((double)c.skipped / (double)c.total, skipped_fraction_closed_form(T),
                         "n %zu b %zu", n, b);
        }
}

Test(ch07_causal_skip, score_fraction_when_the_block_divides_n)
{
    const size_t block[] = { 1, 2, 16, 64, 128, 256, 512, 2048 };
    for (size_t i = 0; i < 8; i++) {
        size_t n = 2048, T = n / block[i];
        tile_counts c = count_causal_tiles(n, n, block[i], block[i]);
        cr_assert_eq(2 * T * c.scores, (T + 1) * n * n, "block %zu", block[i]);
        cr_assert_eq((double)c.scores / (double)(n * n), flop_ratio_closed_form(T),
                     "block %zu", block[i]);
    }
    tile_counts odd = count_causal_tiles(2048, 2048, 300, 300);
    cr_assert_neq(2 * 7 * odd.scores, 8 * 2048 * 2048);
}

Test(ch07_causal_skip, kernel_counts_at_2048)
{
    attn_stats st = run_causal_kernel(2048, 2, 16, 128, 0, RNG_SCALAR);
    cr_assert_eq(st.tiles_total, 512);
    cr_assert_eq(st.tiles_computed, 272);
    cr_assert_eq(st.tiles_skipped, 240);
    cr_assert_eq(st.tiles_masked, 32);
    cr_assert(kernel_agrees(st, count_causal_tiles(2048, 2048, 128, 128), 2));
    cr_assert(!kernel_agrees(st, count_causal_tiles(2048, 2048, 256, 256), 2));
}

static const size_t KERNEL_SHAPES[][6] = {  /* nq, nk, block_q, block_k, batch, heads */
    { 100, 100, 7, 7, 1, 1 },     { 100, 60, 16, 8, 1, 2 },    { 60, 100, 8, 16, 2, 1 },
    { 1, 1, 1, 1, 1, 1 },         { 129, 129, 64, 64, 1, 3 },  { 65, 65, 64, 64, 2, 2 },
    { 300, 300, 128, 100, 1, 1 }, { 257, 31, 5, 200, 1, 1 },
};

Test(ch07_causal_skip, kernel_agrees_with_the_count)
{
    for (size_t i = 0; i < sizeof KERNEL_SHAPES / sizeof KERNEL_SHAPES[0]; i++) {
        const size_t *s = KERNEL_SHAPES[i];
        attn_params p = attn_default(s[4], s[5], s[0], s[1], 4);
        p.causal = true;
        p.block_q = s[2];
        p.block_k = s[3];
        size_t nq = s[4] * s[5] * s[0] * 4, nk = s[4] * s[5] * s[1] * 4;
        float *q = fa_alloc(nq * 4), *o = fa_alloc(nq * 4);
        float *k = fa_alloc(nk * 4), *v = fa_alloc(nk * 4);
        attn_stats st;
        attention_tiled(&p, q, k, v, o, &st);
        tile_counts c = count_causal_tiles(s[0], s[1], s[2], s[3]);
        cr_assert(kernel_agrees(st, c, s[4] * s[5]), "shape %zu", i);
        fa_free(q); fa_free(o); fa_free(k); fa_free(v);
    }
}

Test(ch07_causal_skip, default_run_agrees_everywhere)
{
    const char *const args[] = { "ch07_causal_skip", "--json", NULL };
    char *json = capture_stdout_of(chapter_main, 2, (char **)args);
    cr_expect(json_fact_is(json, "kernel_agrees", "yes"));
    cr_expect(json_fact_is(json, "closed_form_holds", "yes"));
    cr_expect(json_fact_is(json, "pct_0", "47%"));
    free(json);
}

Test(ch07_causal_skip, bad_block_is_refused, .exit_code = 2, .init = cr_redirect_stderr)
{
    const char *args[] = { "ch07_causal_skip", "--map-block", "0", NULL };
    chapter_main(3, (char **)args);
}
