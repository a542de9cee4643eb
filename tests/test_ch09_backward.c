/* test_ch09_backward.c — tangled from chapters/ch09_backward.nw. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/backward.h"
#include "../tangled/ch09_backward.h"
static attn_params ch09_problem(size_t heads, size_t nq, size_t nk, size_t d,
                                size_t bq, size_t bk, bool causal, long window)
{
    attn_params p = attn_default(1, heads, nq, nk, d);
    p.block_q = bq; p.block_k = bk; p.causal = causal || window > 0; p.window = window;
    return p;
}
Test(exponential, exp_is_within_one_ulp)
{
    enum { COUNT = 1 << 20 };
    float *x = fa_alloc(COUNT * sizeof(float)), *y = fa_alloc(COUNT * sizeof(float));
    for (size_t i = 0; i < COUNT; i++) x[i] = y[i] = -87.0f + 87.5f * (float)i / COUNT;
    bwd_exp_shifted(y, COUNT, 0.0f);
    double worst = 0.0;
    for (size_t i = 0; i < COUNT; i++) {
        const float ref = expf(x[i]), ulp = nextafterf(ref, INFINITY) - ref;
        worst = fmax(worst, fabs((double)y[i] - (double)ref) / (double)ulp);
    }
    cr_assert(worst <= 1.0, "worst %.3f ulp", worst);
    fa_free(x); fa_free(y);
}
Test(exponential, special_inputs)
{
    float x[5] = { -INFINITY, -1e30f, -88.0f, 0.0f, 2.0f };
    bwd_exp_shifted(x, 5, 0.0f);
    cr_assert(x[0] == 0.0f && x[1] == 0.0f && x[2] == 0.0f, "%g %g %g", x[0], x[1], x[2]);
    cr_assert(x[3] == 1.0f, "e^0 = %.9g", x[3]);
    const float e2 = expf(2.0f);
    cr_assert(fabsf(x[4] - e2) <= nextafterf(e2, INFINITY) - e2, "e^2 = %.9g", x[4]);
}
Test(gradients, flash_and_naive_match_finite_differences)
{
    const size_t lengths[] = { 1, 2, 7, 13 }, dims[] = { 1, 3, 8 }, blocks[] = { 1, 3, 16 };
    for (size_t a = 0; a < 4; a++) for (size_t b = 0; b < 3; b++)
        for (size_t c = 0; c < 3; c++) for (int causal = 0; causal < 2; causal++) {
            const size_t nq = lengths[a];
            const size_t nk_choices[3] = { nq, nq + 5, nq > 2 ? nq - 2 : nq };
            for (int m = 0; m < (causal ? 1 : 3); m++) {
                const ch09_case k = { "test", 1, 2, nq, nk_choices[m], dims[b], blocks[c], blocks[c],
                                      causal, 0 };
                const ch09_case_errors e = ch09_check_case(&k, (uint32_t)(a * 97 + b * 13 + c), 1);
                cr_assert(e.flash_fd < 1e-5 && e.naive_fd < 1e-5 && e.flash_naive < 1e-5,
                          "nq %zu nk %zu d %zu block %zu causal %d: %.3e %.3e %.3e", nq, nk_choices[m],
                          dims[b], blocks[c], causal, e.flash_fd, e.naive_fd, e.flash_naive);
            }
        }
}
Test(gradients, a_wrong_gradient_is_caught)
{
    const attn_params p = ch09_problem(1, 5, 6, 3, 2, 4, false, 0);
    ch09_inputs in;
    ch09_draw(&p, 3, &in);
    ch09_outputs out = ch09_outputs_new(&in);
    ch09_flash(&p, &in, &out, 1, NULL, NULL);
    double *fd[3] = { fa_alloc(15 * 8), fa_alloc(18 * 8), fa_alloc(18 * 8) };
    attention_grad_fd(&p, in.q.data, in.k.data, in.v.data, in.dout.data, fd[0], fd[1], fd[2]);
    cr_assert(ch09_error_vs_fd(&out, fd) < 1e-5);
    out.dv.data[7] += 1e-4f;
    cr_assert(ch09_error_vs_fd(&out, fd) > 9e-5);
    for (int t = 0; t < 3; t++) fa_free(fd[t]);
    ch09_free(&in, &out);
}
Test(gradients, flash_matches_naive_on_larger_problems)
{
    const attn_params ps[] = {
        ch09_problem(2, 129, 129, 64, 64, 48, false, 0),
        ch09_problem(2, 129, 129, 64, 64, 48, true, 0),
        ch09_problem(1, 200, 77, 64, 32, 100, false, 0),
        ch09_problem(1, 65, 300, 32, 128, 7, false, 0),
        ch09_problem(3, 100, 100, 16, 16, 16, false, 30) };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        ch09_inputs in;
        ch09_draw(&ps[i], (uint32_t)i, &in);
        ch09_outputs a = ch09_outputs_new(&in), b = ch09_outputs_new(&in);
        ch09_flash(&ps[i], &in, &a, 2, NULL, NULL);
        ch09_naive(&ps[i], &in, &b, 2, NULL, NULL);
        cr_assert(ch09_error_between(&a, &b) < 1e-5, "problem %zu: %.3e", i,
                  ch09_error_between(&a, &b));
        ch09_free(&in, &a); ch09_free(NULL, &b);
    }
}
Test(masked_rows, give_zero_gradients_not_nan)
{
    const attn_params p = ch09_problem(2, 20, 8, 3, 4, 3, true, 4);
    ch09_inputs in;
    ch09_draw(&p, 5, &in);
    ch09_outputs flash = ch09_outputs_new(&in), naive = ch09_outputs_new(&in);
    ch09_flash(&p, &in, &flash, 1, NULL, NULL);
    ch09_naive(&p, &in, &naive, 1, NULL, NULL);
    for (size_t h = 0; h < 2; h++)
        for (size_t i = 11; i < 20; i++) {
            cr_assert(flash.lse.data[h * 20 + i] == -INFINITY);
            for (size_t c = 0; c < 3; c++) {
                const size_t e = (h * 20 + i) * 3 + c;
                cr_assert(flash.o.data[e] == 0.0f && flash.dq.data[e] == 0.0f, "row %zu", i);
                cr_assert(naive.dq.data[e] == 0.0f, "row %zu", i);
            }
        }
    cr_assert(ch09_error_between(&flash, &naive) < 1e-5);   /* NaN fails this too */
    ch09_free(&in, &flash); ch09_free(NULL, &naive);
}
Test(counts, flops_are_two_and_a_half_forwards)
{
    const attn_params p = ch09_problem(3, 100, 70, 16, 32, 16, false, 0);
    ch09_inputs in;
    ch09_draw(&p, 1, &in);
    ch09_outputs out = ch09_outputs_new(&in);
    bwd_counts fwd, flash, naive_fwd, naive;
    ch09_flash(&p, &in, &out, 2, &fwd, &flash);
    ch09_naive(&p, &in, &out, 2, &naive_fwd, &naive);
    const double unit = 3.0 * 100 * 70 * 16;
    cr_assert(fwd.matmul_flops == 4 * unit && naive.matmul_flops == 8 * unit);
    cr_assert(flash.matmul_flops == 10 * unit && flash.exps == 3.0 * 100 * 70);
    cr_assert_eq(flash.tiles_computed, 3 * 4 * 5);
    ch09_free(&in, &out);
}
Test(counts, causal_tiles_are_chapter_4s)
{
    const attn_params p = ch09_problem(2, 300, 300, 8, 64, 48, true, 0);
    ch09_inputs in;
    ch09_draw(&p, 2, &in);
    ch09_outputs out = ch09_outputs_new(&in);
    bwd_counts fwd, flash; attn_stats st;
    ch09_flash(&p, &in, &out, 1, &fwd, &flash);
    attention_tiled(&p, in.q.data, in.k.data, in.v.data, out.o.data, &st);
    cr_assert_eq(flash.tiles_computed, st.tiles_computed);
    cr_assert_eq(flash.tiles_skipped, st.tiles_skipped);
    cr_assert_eq(flash.tiles_masked, st.tiles_masked);
    cr_assert(flash.matmul_flops == 2.5 * fwd.matmul_flops);
    ch09_free(&in, &out);
}
Test(memory, flash_backward_allocates_two_tiles_and_d)
{
    const attn_params p = ch09_problem(2, 500, 700, 8, 64, 32, false, 0);
    ch09_inputs in;
    ch09_draw(&p, 4, &in);
    ch09_outputs out = ch09_outputs_new(&in);
    ch09_flash(&p, &in, &out, 1, NULL, NULL);
    const size_t live = fa_bytes_live();
    fa_reset_peak();
    attention_backward_flash(&p, in.q.data, in.k.data, in.v.data, out.o.data, out.lse.data,
                             in.dout.data, out.dq.data, out.dk.data, out.dv.data, 1, NULL);
    cr_assert_eq(fa_bytes_peak() - live, (2 * 64 * 32 + 2 * 32 * 8 + 500) * sizeof(float) +
                                         5 * sizeof(float *));
    ch09_free(&in, &out);
}
Test(memory, kept_bytes)
{
    cr_assert(ch09_kept_p(8, 4096) == 512.0 * 1024 * 1024);
    cr_assert(ch09_kept_l(8, 4096) == 128.0 * 1024);
    cr_assert(ch09_tensors(8, 4096, 64) == 4.0 * 8 * (8 * 4096 * 64 + 4096));
}
Test(threads, threads_do_not_change_a_bit)
{
    for (int causal = 0; causal < 2; causal++) {
        const attn_params p = ch09_problem(5, 150, 130, 24, 32, 40, causal, 0);
        ch09_inputs in;
        ch09_draw(&p, 6, &in);
        ch09_outputs one = ch09_outputs_new(&in), many = ch09_outputs_new(&in);
        ch09_flash(&p, &in, &one, 1, NULL, NULL);
        for (int threads = 2; threads <= 7; threads += threads == 3 ? 4 : 1) {
            ch09_flash(&p, &in, &many, threads, NULL, NULL);
            const tensor *a[4] = { &one.dq, &one.dk, &one.dv, &one.lse },
                         *b[4] = { &many.dq, &many.dk, &many.dv, &many.lse };
            for (int t = 0; t < 4; t++)
                cr_assert(memcmp(a[t]->data, b[t]->data, tensor_count(a[t]) * sizeof(float)) == 0,
                          "tensor %d differs with %d threads", t, threads);
        }
        ch09_free(&in, &one); ch09_free(NULL, &many);
    }
}
Test(receipts, gradient_cases)
{
    for (size_t i = 0; i < CH09_CASE_COUNT; i++) {
        const ch09_case_errors e = ch09_check_case(&CH09_CASES[i], 0, 2);
        cr_assert(e.flash_fd < 1e-5 && e.naive_fd < 1e-5 && e.flash_naive < 1e-5,
                  "%s", CH09_CASES[i].label);
    }
}
Test(receipts, default_run)
{
    const char *const args[] = { "ch09_backward", "--json", NULL };
    char *json = capture_stdout_of(chapter_main, 2, (char **)args);
    cr_expect(json_fact_is(json, "flash_ratio", "2.50"));
    cr_expect(json_fact_is(json, "naive_ratio", "2.00"));
    cr_expect(json_fact_is(json, "flash_ratio_causal", "2.50"));
    cr_expect(json_fact_is(json, "flash_exps", "4,000,000"));
    cr_expect(json_fact_is(json, "big_shape", "(1, 4, 1000, 64)"));
    cr_expect(json_fact_is(json, "tensor_bytes", "8.0 MiB"));
    const char *keys[] = { "fd_worst_flash", "fd_worst_naive", "small_worst", "big_diff",
                           "big_diff_causal" };
    for (int i = 0; i < 5; i++) {
        char *v = json_fact(json, keys[i]);
        cr_assert(v != NULL, "%s", keys[i]);
        cr_expect(strtod(v, NULL) < 1e-5, "%s = %s", keys[i], v);
        free(v);
    }
    free(json);
}
