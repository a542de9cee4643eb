/* test_ch05_exact.c — Criterion tests of chapter 5's receipts.
   Tangled from chapters/ch05_exact.nw. */
#include <criterion/criterion.h>
#include <string.h>
#include "../tangled/ch05_exact.h"
Test(receipts, default_run)
{
    ch05_problem pr = ch05_problem_new(&ch05_default_options);
    ch05_results r;
    char b[32];
    ch05_measure(&pr, &r);
    const size_t visited[CH05_TILES][2] = { { 2048, 1088 }, { 512, 288 }, { 64, 48 } };
    for (int t = 0; t < CH05_TILES; t++)
        for (int causal = 0; causal < 2; causal++) {
            cr_assert(r.tiled_error[t][causal] < 1e-5, "tile %zux%zu causal %d: %.3e",
                      ch05_tiles[t][0], ch05_tiles[t][1], causal, r.tiled_error[t][causal]);
            cr_assert_eq(r.tiles_visited[t][causal], visited[t][causal]);
        }
    cr_assert(r.naive_error < 1e-5, "naive: %.3e", r.naive_error);
    cr_assert_str_eq(fmt_num(b, r.window_diff[0]), "0.8140", "window %ld", ch05_windows[0]);
    cr_assert_str_eq(fmt_num(b, r.window_diff[1]), "1.3221", "window %ld", ch05_windows[1]);
    cr_assert_eq(r.window_tiles[0], 560);
    cr_assert_eq(r.window_tiles[1], 248);
    cr_assert_str_eq(fmt_num(b, r.mean_abs_output), "0.0759");
    cr_assert(r.unrescaled_error > 0.1, "un-rescaled: %.3e", r.unrescaled_error);
    cr_assert_str_eq(fmt_num(b, r.unrescaled_error), "1.0246");
    ch05_problem_free(&pr);
}

static ch05_problem small_problem(long seq, long seed)
{
    ch05_options o = ch05_default_options;
    o.batch = 1; o.heads = 2; o.seq = seq; o.dim = 32; o.seed = seed;
    return ch05_problem_new(&o);
}

Test(unrescaled, fails_with_several_key_tiles)
{
    for (long seed = 1; seed <= 3; seed++) {
        ch05_problem pr = small_problem(300, seed);
        const size_t tiles[] = { 16, 64, 128 };
        for (size_t t = 0; t < 3; t++)
            for (int causal = 0; causal < 2; causal++) {
                attn_params p = pr.p;
                p.block_q = p.block_k = tiles[t];
                p.causal = causal;
                const double err = ch05_tiled_error(&pr, &p, ch05_update_unrescaled, NULL);
                cr_assert(err > 0.1, "seed %ld tile %zu causal %d: only %.3e", seed, tiles[t],
                          causal, err);
            }
        ch05_problem_free(&pr);
    }
}

Test(unrescaled, hides_behind_a_single_key_tile)
{
    ch05_problem pr = small_problem(300, 1);
    for (int causal = 0; causal < 2; causal++) {
        attn_params p = pr.p;
        p.block_q = 32;
        p.block_k = 300;
        p.causal = causal;
        const double err = ch05_tiled_error(&pr, &p, ch05_update_unrescaled, NULL);
        cr_assert(err < 1e-5, "causal %d: %.3e", causal, err);
    }
    ch05_problem_free(&pr);
}

Test(window, limits)
{
    ch05_problem pr = small_problem(300, 2);
    attn_params p = pr.p;
    p.causal = true;
    p.window = 300;
    cr_assert(ch05_tiled_error(&pr, &p, attn_online_update, NULL) < 1e-5);
    p.window = 1;
    ch05_tiled_error(&pr, &p, attn_online_update, NULL);
    for (size_t i = 0; i < pr.count; i++)
        cr_assert(pr.out[i] == pr.qkv[2].data[i], "element %zu", i);
    ch05_problem_free(&pr);
}
