#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include "../tangled/ch02_online_softmax.h"
static const float six[6] = { 0.4f, 0.9f, 0.5f, 1.8f, 0.6f, 0.7f };

static void expect_printed(float value, const char *printed)
{
    char buf[32];
    cr_expect_str_eq(fmt_num(buf, value), printed);
}

Test(ch02, walkthrough_matches_the_reference_demo)
{
    stream_step s[3];
    cr_assert_eq(stream_row(six, 6, 2, s), 3);
    expect_printed(s[0].sum, "1.6065");
    expect_printed(s[1].correction, "0.4066");
    expect_printed(s[1].sum, "1.9257");
    expect_printed(s[2].correction, "1.0000");
    expect_printed(s[2].sum, "2.5598");
}
Test(ch02, one_multiply_equals_recomputation)
{
    stream_step s[3];
    stream_row(six, 6, 2, s);
    expect_printed(s[0].sum * s[1].correction, "0.6532");
    expect_printed(sum_exp_below(six, 2, 1.8f), "0.6532");
    cr_expect(ieee_ulp_eq(flt, s[0].sum * s[1].correction, sum_exp_below(six, 2, 1.8f), 2));
    cr_expect(ieee_ulp_eq(flt, s[2].sum, sum_exp_below(six, 6, 1.8f), 4));
}
static char *walkthrough_json(size_t block)
{
    report *r = report_new("walkthrough", true);
    run_walkthrough(r, block, NULL);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    report_finish(r, f);
    long size = ftell(f);
    char *json = calloc((size_t)size + 1, 1);
    rewind(f);
    cr_assert_eq(fread(json, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return json;
}
Test(ch02, the_walkthrough_works_at_every_block_size)
{
    static const char *const titles[] = { "in blocks of one", "in blocks of two",
        "in blocks of three", "in blocks of four", "in blocks of five", "in one block of six" };
    for (size_t block = 1; block <= 6; block++) {
        char *json = walkthrough_json(block), last[16];
        snprintf(last, sizeof last, "ell_%zu", (6 + block - 1) / block);
        cr_expect(json_fact_is(json, "streamed", "2.5598"), "block %zu: streamed sum", block);
        cr_expect(json_fact_is(json, "one_shot", "2.5598"), "block %zu: one-shot sum", block);
        cr_expect(json_fact_is(json, last, "2.5598"), "block %zu: %s", block, last);
        cr_expect(strstr(json, titles[block - 1]) != NULL, "block %zu: title", block);
        free(json);
    }
}

static float *seed0_logits_times_8(void)
{
    float *x = fa_alloc(4 * 2048 * sizeof *x);
    mt19937 g;
    mt_seed(&g, 0);
    torch_randn(&g, x, 4 * 2048);
    for (size_t i = 0; i < 4 * 2048; i++)
        x[i] *= 8.0f;
    return x;
}
Test(ch02, the_correction_fires_twice_on_row_0)
{
    float *x = seed0_logits_times_8();
    stream_step s[32];
    cr_assert_eq(stream_row(x, 2048, 64, s), 32);
    firing_summary f = summarize_firings(s, 32);
    cr_expect_eq(f.fired, 2);
    cr_expect(s[5].raised && s[6].raised);
    char buf[32];
    cr_expect_str_eq(fmt_num(buf, f.deepest), "0.0157");
    snprintf(buf, sizeof buf, "%.3f", f.deepest);
    cr_expect_str_eq(buf, "0.016");
    cr_expect_str_eq(fmt_num(buf, harmonic_number(32)), "4.0585");
    fa_free(x);
}

Test(ch02, every_block_size_gives_the_one_shot_sum)
{
    float x[37];
    for (int i = 0; i < 37; i++)
        x[i] = 3.0f * sinf(1.7f * (float)i) + 0.1f * (float)i;
    float m = block_max(x, 37), one_shot = sum_exp_below(x, 37, m);
    for (size_t b = 1; b <= 40; b++) {
        online_stats s = online_start();
        for (size_t i = 0; i < 37; i += b)
            online_absorb(&s, x + i, 37 - i < b ? 37 - i : b);
        cr_expect(s.max == m, "block %zu: max", b);
        cr_expect(ieee_ulp_eq(flt, s.sum, one_shot, 8), "block %zu: %g vs %g", b, s.sum, one_shot);
    }
}
Test(ch02, masked_blocks_change_nothing)
{
    float masked[3] = { -INFINITY, -INFINITY, -INFINITY }, real[2] = { 1.0f, 2.0f };
    online_stats s = online_start();
    cr_expect_eq(online_absorb(&s, masked, 3), 1.0f);
    cr_expect(s.sum == 0.0f && s.max == -INFINITY);
    online_absorb(&s, real, 2);
    online_absorb(&s, masked, 3);
    cr_expect(isnan(s.sum) == 0 && s.max == 2.0f);
}
