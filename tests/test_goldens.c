/* test_goldens.c — tangled from chapters/app_torch.nw; edit that file instead. */
#define _GNU_SOURCE
#include "cpu/goldens.h"
#include "cpu/attention.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static golden_tally checked(const char *kernel, rng_path path)
{
    char file[64], err[256] = "";
    golden_tally t;
    snprintf(file, sizeof file, "tests/goldens/%s.txt", kernel);
    cr_assert(goldens_check(file, path, false, &t, err, sizeof err), "%s", err);
    return t;
}

Test(goldens, the_scalar_path_is_pytorchs_portable_kernel_bit_for_bit)
{
    golden_tally t = checked("scalar", RNG_SCALAR);
    cr_assert_eq(t.draws, 40);
    cr_assert_eq(t.identical, t.values, "%zu of %zu identical", t.identical, t.values);
}

Test(goldens, the_avx2_path_is_pytorchs_avx2_kernel_bit_for_bit)
{
    golden_tally t = checked("avx2", RNG_AVX2);
    cr_assert_eq(t.draws, 40);
    cr_assert_eq(t.identical, t.values, "%zu of %zu identical", t.identical, t.values);
}

Test(goldens, each_path_misses_the_other_kernels_goldens)
{
    golden_tally scalar_vs_avx2 = checked("avx2", RNG_SCALAR);
    golden_tally avx2_vs_scalar = checked("scalar", RNG_AVX2);
    cr_assert_lt(scalar_vs_avx2.identical, scalar_vs_avx2.values);
    cr_assert_lt(avx2_vs_scalar.identical, avx2_vs_scalar.values);
}

Test(goldens, a_malformed_line_is_an_error)
{
    char file[] = "/tmp/goldens-XXXXXX", err[256] = "";
    int fd = mkstemp(file);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# a comment\nrandn 0 4x0 0 0\n", f);
    fclose(f);
    golden_tally t;
    cr_assert_not(goldens_check(file, RNG_SCALAR, false, &t, err, sizeof err));
    cr_assert(strstr(err, ":2: not a goldens line") != NULL, "%s", err);
    remove(file);
}

Test(goldens, attn_draw_inputs_follows_the_kernel_its_parameters_name)
{
    enum { N = 2 * 37 * 16 };
    static float direct[3 * N], qkv[3 * N];
    attn_params p = attn_default(1, 2, 37, 37, 16);
    mt19937 g;
    mt_seed_path(&g, 9, RNG_AVX2);
    for (int t = 0; t < 3; t++) torch_randn(&g, direct + t * N, N);
    p.rng = RNG_AVX2;
    attn_draw_inputs(&p, 9, qkv, qkv + N, qkv + 2 * N);
    cr_assert(memcmp(direct, qkv, sizeof qkv) == 0);
    p.rng = RNG_SCALAR;
    attn_draw_inputs(&p, 9, qkv, qkv + N, qkv + 2 * N);
    cr_assert(memcmp(direct, qkv, sizeof qkv) != 0);
}

Test(goldens, pytorchs_attention_is_within_chapter_5s_tolerance)
{
    for (int p = 0; p < 2; p++) {
        golden_tally t = checked(p ? "avx2" : "scalar", p ? RNG_AVX2 : RNG_SCALAR);
        cr_assert_eq(t.sdpa_cases, 6);
        cr_assert_lt(t.sdpa_vs_ours, 1e-5);
        cr_assert_lt(t.sdpa_vs_exact, 1e-5);
        cr_assert_eq(t.windows, 2);
        for (size_t i = 0; i < t.windows; i++)
            cr_assert_lt(fabs(t.window_ours[i] - t.window_torch[i]), 1e-5,
                         "window %ld: ours %f, torch %f", t.window_w[i],
                         t.window_ours[i], t.window_torch[i]);
    }
}

