/* tests for chapter 3 (tangled from chapters/ch03_compose.nw; do not edit) */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/softmax.h"

int chapter_main(int argc, char **argv);
#include "../tangled/ch03_compose.h"

static tensor receipts_logits(void)
{
    return make_logits(0, 4, 2048, 8.0);
}

static void assert_prints(const char *format, double value, const char *want)
{
    char got[64];
    snprintf(got, sizeof got, format, value);
    cr_assert_str_eq(got, want, "printed %s, the receipt is %s", got, want);
}

Test(receipts, row_range_and_largest_probability_are_row_0s)
{
    tensor x = receipts_logits();
    row_summary r0 = summarize_row(x.data, 2048);
    assert_prints("%.1f", (double)r0.max - r0.min, "58.0");
    assert_prints("%.4f", r0.largest_p, "0.7605");
    assert_prints("%.1f", r0.max, "32.8");
    for (size_t i = 1; i < 4; i++) {
        row_summary s = summarize_row(x.data + i * 2048, 2048);
        cr_assert_lt(s.largest_p, r0.largest_p, "row %zu has a larger probability", i);
        cr_assert_lt(s.max, r0.max);
        cr_assert_lt((double)s.max - s.min, (double)r0.max - r0.min);
    }
    tensor_free(&x);
}

Test(receipts, tensor_range_is_not_the_demos)
{
    tensor x = receipts_logits();
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < tensor_count(&x); i++) {
        lo = fminf(lo, x.data[i]);
        hi = fmaxf(hi, x.data[i]);
    }
    assert_prints("%.1f", (double)hi - lo, "65.6");
    tensor_free(&x);
}

Test(thresholds, fp32_and_fp16_exp_overflow_lines)
{
    assert_prints("%.1f", log((double)FLT_MAX), "88.7");
    assert_prints("%.1f", log(65504.0), "11.1");
    float f32 = exp_f32_last_finite();
    cr_assert(isfinite(expf(f32)) && isinf(expf(nextafterf(f32, INFINITY))));
    cr_assert_lt(fabs(f32 - log((double)FLT_MAX)), 1e-5);
    float f16 = exp_f16_last_finite();
    cr_assert_eq(f16, 11.0859375f, "last finite half input %.7g", f16);
    cr_assert_eq(f16_next_up(f16), 11.09375f);
    cr_assert(isinf((float)exp_f16((_Float16)11.09375f)));
}

Test(naive, fp16_gives_660_infinities_and_660_nans)
{
    tensor x = receipts_logits();
    softmax_tally t = tally_variant(&x, NAIVE_F16, 0);
    cr_assert_eq(t.infinities, 660);
    cr_assert_eq(t.nans, 660);
    cr_assert_eq(t.infinities + t.nans, 1320);
    cr_assert_eq(t.zeros, 8192 - 660);
    cr_assert(isnan(t.error));
    long above = 0, over = 0;
    float last = exp_f16_last_finite();
    for (size_t i = 0; i < tensor_count(&x); i++) {
        _Float16 h = (_Float16)x.data[i];
        cr_assert_eq(isinf((float)exp_f16(h)), (float)h > last, "logit %zu: %g", i,
                     x.data[i]);
        above += (float)h > last;
    }
    for (size_t r = 0; r < 4; r++) {
        const float *row = x.data + r * 2048;
        over += f16_overflows(row, 2048);
        cr_assert_lt(f16_first_inf_at(row, 2048), 2048, "row %zu has no infinity", r);
        cr_assert_eq(f16_sum_overflow_at(row, 2048), f16_first_inf_at(row, 2048));
    }
    cr_assert_eq(above, 660);
    cr_assert_eq(over, 660);
    f16_damage d = measure_f16_damage(&x);
    char buf[32];
    cr_assert_str_eq(fmt_num(buf, d.zero_largest), "3.952e-07");
    cr_assert_str_eq(fmt_num(buf, d.outside_nan), "1.940e-05");
    tensor_free(&x);
}

Test(naive, fp32_has_no_bad_values_and_shifted_fp16_neither)
{
    tensor x = receipts_logits();
    softmax_tally t = tally_variant(&x, NAIVE_F32, 0);
    double two_pass = check_online(&x, 2048).error;
    cr_assert_eq(t.infinities + t.nans, 0);
    cr_assert_leq(fabs(t.error - two_pass) / PROB_ULP, ONLINE_EXCESS_ULPS,
                  "naive fp32 %g, two-pass %g", t.error, two_pass);
    softmax_tally s = tally_variant(&x, SHIFTED_F16, 0);
    cr_assert_eq(s.infinities + s.nans, 0);
    /* 8 half ulps at the top */
    cr_assert_leq(s.error, 8 * 0x1p-11, "shifted fp16 error %g", s.error);
    tensor_free(&x);
}

Test(online, never_much_worse_than_two_pass_for_any_block)
{
    for (size_t l = 0; l < sizeof grid_lengths / sizeof *grid_lengths; l++)
        for (size_t b = 0; b < sizeof grid_blocks / sizeof *grid_blocks; b++)
            for (unsigned s = 0; s < GRID_SEEDS; s++)
                for (int o = 0; o < 3; o++) {
                    size_t n = grid_lengths[l], blk = grid_blocks[b];
                    grid_case g = run_grid_case(n, blk, s, (logit_order)o);
                    cr_assert_leq(g.online_ulps, g.two_pass_ulps + ONLINE_EXCESS_ULPS,
                                  "n %zu block %zu seed %u order %d: "
                                  "online %.2f two-pass %.2f",
                                  n, blk, s, o, g.online_ulps, g.two_pass_ulps);
                    cr_assert_leq(fabs(g.far_sum - 1.0), ROW_SUM_TOLERANCE);
                }
}

Test(online, receipts_blocks_within_a_few_ulps_and_sum_to_one)
{
    tensor x = receipts_logits();
    size_t blocks[] = { 64, 128, 512 };
    for (size_t k = 0; k < 3; k++) {
        online_check c = check_online(&x, blocks[k]);
        cr_assert_leq(c.error / PROB_ULP, ONLINE_EXCESS_ULPS, "block %zu: %.2f",
                      blocks[k], c.error / PROB_ULP);
        assert_prints("%.4f", c.far_sum, "1.0000");
    }
    tensor_free(&x);
}

Test(online, one_block_is_the_two_pass_softmax_exactly)
{
    tensor x = make_logits(3, 1, 1000, 8.0);
    float p[1000], q[1000];
    softmax_two_pass(x.data, 1000, q);
    size_t blocks[] = { 1000, 1001, 5000 };
    for (size_t k = 0; k < 3; k++) {
        softmax_online(x.data, 1000, blocks[k], p);
        cr_assert(memcmp(p, q, sizeof p) == 0, "block %zu differs", blocks[k]);
    }
    tensor_free(&x);
}

Test(merge, commutative_with_the_empty_partial_as_identity)
{
    tensor x = make_logits(5, 1, 300, 8.0);
    softmax_partial e = online_start(), a = softmax_partial_of(x.data, 100);
    softmax_partial b = softmax_partial_of(x.data + 100, 200);
    softmax_partial ab = softmax_merge(a, b), ba = softmax_merge(b, a);
    cr_assert(ab.max == ba.max && ab.sum == ba.sum);
    softmax_partial ae = softmax_merge(a, e), ea = softmax_merge(e, a);
    softmax_partial ee = softmax_merge(e, e);
    cr_assert(ae.max == a.max && ae.sum == a.sum && ea.max == a.max && ea.sum == a.sum);
    cr_assert(ee.max == -INFINITY && ee.sum == 0.0f, "two empties gave (%g, %g)",
              ee.max, ee.sum);
    softmax_partial tied = softmax_merge(a, a);
    cr_assert(tied.max == a.max && tied.sum == 2.0f * a.sum);
    tensor_free(&x);
}

static void check_grouping(softmax_partial s, float m, double l_ref, double l_one_error,
                           const char *how)
{
    double err = fabs(s.sum - l_ref) / l_ref / PROB_ULP;
    cr_assert(s.max == m, "%s: max %g, not %g", how, s.max, m);
    cr_assert_leq(err, l_one_error + ONLINE_EXCESS_ULPS, "%s: %.2f vs one pass %.2f",
                  how, err, l_one_error);
}

Test(merge, any_grouping_equals_one_pass)
{
    size_t lengths[] = { 1, 7, 100, 2048, 5000 }, blocks[] = { 1, 3, 64, 100, 2047 };
    static softmax_partial parts[5000];
    mt19937 g;
    mt_seed(&g, 11);
    for (size_t l = 0; l < 5; l++) for (size_t b = 0; b < 5; b++) {
        size_t n = lengths[l];
        tensor x = make_logits(7 + l, 1, n, 8.0);
        softmax_partial one = softmax_partial_of(x.data, n);
        double l_ref = 0.0;
        for (size_t i = 0; i < n; i++) l_ref += exp((double)x.data[i] - one.max);
        double one_err = fabs(one.sum - l_ref) / l_ref / PROB_ULP;
        size_t k = split_into_partials(x.data, n, blocks[b], parts);
        check_grouping(merge_left(parts, k), one.max, l_ref, one_err, "left fold");
        check_grouping(merge_right(parts, k), one.max, l_ref, one_err, "right fold");
        check_grouping(merge_tree(parts, k), one.max, l_ref, one_err, "tree");
        for (int trial = 0; trial < 20; trial++) {
            split_into_partials(x.data, n, blocks[b], parts);
            check_grouping(merge_random(parts, k, &g), one.max, l_ref, one_err, "random");
        }
        tensor_free(&x);
    }
}

Test(extremes, huge_logits_stay_finite_where_the_naive_softmax_breaks)
{
    tensor x = receipts_logits();
    for (size_t i = 0; i < tensor_count(&x); i++) x.data[i] *= 1000.0f;
    size_t blocks[] = { 1, 7, 64, 2048 };
    for (size_t k = 0; k < 4; k++) {
        softmax_tally t = tally_variant(&x, ONLINE_F32, blocks[k]);
        cr_assert_eq(t.infinities + t.nans, 0, "block %zu", blocks[k]);
        cr_assert_leq(t.error, ONLINE_EXCESS_ULPS * PROB_ULP);
        double far_sum = check_online(&x, blocks[k]).far_sum;
        cr_assert_leq(fabs(far_sum - 1.0), ROW_SUM_TOLERANCE);
    }
    cr_assert_gt(tally_variant(&x, NAIVE_F32, 0).infinities, 0);
    tensor_free(&x);
}

Test(extremes, masked_rows_give_zeros_and_masked_logits_get_zero)
{
    float x[10], p[10];
    double ref[10];
    for (int i = 0; i < 10; i++) x[i] = -INFINITY;
    softmax_online(x, 10, 3, p);
    softmax_reference(x, 10, ref);
    for (int i = 0; i < 10; i++) cr_assert(p[i] == 0.0f && ref[i] == 0.0);
    x[4] = 2.5f;
    x[7] = 1.0f;
    softmax_online(x, 10, 3, p);
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7) cr_assert(p[i] == 0.0f);
    cr_assert_float_eq(p[4] + p[7], 1.0f, 1e-6f);
}

static int run_main(int argc, const char *const args[])
{
    char *argv[8];
    for (int i = 0; i < argc; i++) argv[i] = (char *)args[i];
    argv[argc] = NULL;
    return chapter_main(argc, argv);
}

Test(cli, zero_rows_is_refused, .exit_code = 2, .init = cr_redirect_stderr)
{
    run_main(3, (const char *const[]){ "ch03_compose", "--rows", "0" });
}

Test(cli, zero_block_is_refused, .exit_code = 2, .init = cr_redirect_stderr)
{
    run_main(3, (const char *const[]){ "ch03_compose", "--block", "0" });
}

Test(cli, unknown_option_is_refused, .exit_code = 2, .init = cr_redirect_stderr)
{
    run_main(2, (const char *const[]){ "ch03_compose", "--blocks" });
}
