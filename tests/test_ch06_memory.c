/* test_ch06_memory.c — tangled from chapters/ch06_memory.nw. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "../tangled/ch06_memory.h"

static const double MiB = 1024.0 * 1024.0, GiB = 1024.0 * 1024.0 * 1024.0;

Test(ch06_memory, score_matrix_of_8_fp32_heads)
{
    const size_t n[] = { 512, 1024, 2048, 4096 };
    const char *printed[] = { "8.0 MiB", "32.0 MiB", "128.0 MiB", "512.0 MiB" };
    char b[32];
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(score_matrix_bytes(8, n[i], 4), 8 * 4 * n[i] * n[i]);
        double bytes = (double)score_matrix_bytes(8, n[i], 4);
        cr_assert_str_eq(fmt_bytes(b, bytes), printed[i]);
    }
    cr_assert_str_eq(fmt_bytes(b, (double)tile_bytes(8, 128, 128, 4)), "0.5 MiB");
    cr_assert_eq(qkvo_bytes(8, 4096, 64, 4), 32 * 1024 * 1024);
}

Test(ch06_memory, extrapolation_to_128k)
{
    const size_t n[] = { 8192, 16384, 32768, 131072 };
    const double fp32_gib[] = { 2, 8, 32, 512 }, llama_gib[] = { 4, 16, 64, 1024 };
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq((double)score_matrix_bytes(8, n[i], 4), fp32_gib[i] * GiB);
        cr_assert_eq((double)score_matrix_bytes(32, n[i], 2), llama_gib[i] * GiB);
    }
    char b[32];
    cr_assert_str_eq(fmt_bytes(b, (double)score_matrix_bytes(32, 131072, 2)),
                     "1.0 TiB");
    cr_assert_str_eq(fmt_bytes(b, (double)score_matrix_bytes(8, 8192, 4)), "2.0 GiB");
}

Test(ch06_memory, a100_cards_at_128k)
{
    double tib = (double)score_matrix_bytes(32, 131072, 2);
    cr_assert_eq(tib, 1099511627776.0);
    cr_assert_eq(cards_needed(tib, 80e9), 14);
    cr_assert_eq(cards_needed(tib, 80 * GiB), 13);
    cr_assert(fabs(cards_exact(tib, 80e9) - 13.7439) < 5e-5);
    cr_assert_eq(cards_exact(tib, 80 * GiB), 12.8);
}

Test(ch06_memory, llama_kv_cache)
{
    size_t per_token = kv_cache_bytes_per_token(32, 8, 128, 2);
    cr_assert_eq(per_token, 131072);
    cr_assert_eq((double)(per_token * 131072), 16 * GiB);
}

Test(ch06_memory, naive_driver_is_attention)
{
    attn_params p = attn_default(1, 3, 37, 37, 20);
    size_t count = 3 * 37 * 20;
    float *q = fa_alloc(count * 4), *k = fa_alloc(count * 4), *v = fa_alloc(count * 4);
    float *o1 = fa_alloc(count * 4), *o3 = fa_alloc(count * 4);
    double *ref = fa_alloc(count * 8);
    attn_draw_inputs(&p, 7, q, k, v);
    naive_all_heads(&p, q, k, v, o1, 1);
    naive_all_heads(&p, q, k, v, o3, 3);
    attention_reference(&p, q, k, v, ref);
    cr_assert(max_abs_diff_fd(o1, ref, count) < 1e-6);
    cr_assert_eq(memcmp(o1, o3, count * 4), 0);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o1); fa_free(o3); fa_free(ref);
    cr_assert_eq(fa_bytes_live(), 0);
}

Test(ch06_memory, naive_peak_is_the_score_matrix)
{
    const size_t n[] = { 512, 1024 };
    for (size_t i = 0; i < 2; i++) {
        attn_params p = attn_default(1, 8, n[i], n[i], 64);
        path_memory m = measure_in_fresh_process(NAIVE_PATH, &p, 0, 2, 0);
        size_t analytic = score_matrix_bytes(8, n[i], 4) + qkvo_bytes(8, n[i], 64, 4);
        cr_assert_eq(m.inputs, qkvo_bytes(8, n[i], 64, 4));
        cr_assert_eq(m.fa_peak, analytic + n[i] * 64 * 4);
        cr_assert(m.rss_peak - m.rss_start >= score_matrix_bytes(8, n[i], 4));
    }
}

Test(ch06_memory, tiled_residual_is_independent_of_n)
{
    const size_t n[] = { 128, 256, 512, 1024, 2048 };
    size_t first = 0;
    for (size_t i = 0; i < 5; i++) {
        attn_params p = attn_default(1, 8, n[i], n[i], 64);
        p.block_q = p.block_k = 128;
        path_memory part = measure_path(TILED_PATH, &p, 0, 1, 128);
        size_t residual = part.fa_peak - part.inputs;
        if (i == 0) first = residual;
        cr_assert_eq(residual, first, "n = %zu", n[i]);
        cr_assert(residual < tile_bytes(8, 128, 128, 4));
        if (n[i] > 512) continue;
        path_memory all = measure_path(TILED_PATH, &p, 0, 1, 0);
        cr_assert_eq(all.fa_peak - all.inputs, residual, "n = %zu", n[i]);
    }
}

Test(ch06_memory, receipts_of_a_short_run)
{
    const char *args[] = { "ch06_memory", "--seq", "256", "--block", "32", "--json",
                           NULL };
    char *json = capture_stdout_of(chapter_main, 6, (char **)args);
    cr_expect(json_fact_is(json, "llama_score_context", "1.0 TiB"));
    cr_expect(json_fact_is(json, "cards_decimal", "14"));
    cr_expect(json_fact_is(json, "cards_binary", "13"));
    cr_expect(json_fact_is(json, "cards_decimal_exact", "13.7439"));
    cr_expect(json_fact_is(json, "kv_per_token_bytes", "131,072"));
    cr_expect(json_fact_is(json, "kv_context", "16.0 GiB"));
    cr_expect(json_fact_is(json, "score_over_kv_context", "64"));
    cr_expect(json_fact_is(json, "tiled_residual_same", "yes"));
    cr_expect(json_fact_is(json, "tiled_rows", "128"));
    cr_expect(json_fact_is(json, "sizes", "32, 64, 128 and 256"));
    cr_assert_not_null(strstr(json, "the first 128 query rows of each head"));
    free(json);
}

Test(ch06_memory, refuses_what_cannot_fit, .exit_code = 2, .init = cr_redirect_stderr)
{
    const char *args[] = { "ch06_memory", "--seq", "1048576", NULL };
    chapter_main(3, (char **)args);
}
