/* test_torch.c — Criterion tests for the random numbers and the .npy files.
   Tangled from chapters/app_torch.nw; edit that file, not this one. */
#define _GNU_SOURCE
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness_tests.h"
Test(rng, seed_137_gives_the_reference_words)
{
    mt19937 g;
    mt_seed(&g, 137);
    cr_assert_eq(mt_next(&g), 4053805790u);
    cr_assert_eq(mt_next(&g), 2173880614u);
    cr_assert_eq(mt_next(&g), 380293709u);
}

typedef void sampler(mt19937 *g, float *out, size_t count);

static void expect_seed_0_draws(sampler *fill, size_t n, const char *expected)
{
    mt19937 g;
    float x[16];
    char text[256] = "";
    cr_assert(n <= 16);
    mt_seed(&g, 0);
    fill(&g, x, n);
    for (size_t i = 0; i < n; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%.4f",
                 i ? " " : "", (double)x[i]);
    cr_assert_str_eq(text, expected);
}

Test(rng, rand_matches_torch_rand)
{
    expect_seed_0_draws(torch_rand, 6, "0.4963 0.7682 0.0885 0.1320 0.3074 0.6341");
}

Test(rng, randn_16_matches_torch_randn_4x4)
{
    expect_seed_0_draws(torch_randn, 16,
        "-1.1258 -1.1524 -0.2506 -0.4339 0.8487 0.6920 -0.3160 -2.1152 "
        "0.3223 -1.2633 0.3500 0.3081 0.1198 1.2377 1.1168 -0.2473");
}

Test(rng, randn_below_16_uses_the_scalar_sampler)
{
    expect_seed_0_draws(torch_randn, 4, "1.5410 -0.2934 -2.1788 0.5684");
}

Test(rng, the_cached_normal_carries_over_to_the_next_call)
{
    mt19937 g;
    float four[4], three_then_one[4], after_reseeding[4];
    mt_seed(&g, 5);
    torch_randn(&g, four, 4);
    mt_seed(&g, 5);
    torch_randn(&g, three_then_one, 3);
    torch_randn(&g, three_then_one + 3, 1);
    cr_assert(memcmp(four, three_then_one, sizeof four) == 0);
    torch_randn(&g, after_reseeding, 3);
    mt_seed(&g, 5);
    torch_randn(&g, after_reseeding, 4);
    cr_assert(memcmp(four, after_reseeding, sizeof four) == 0);
}

Test(rng, a_ragged_tail_redraws_the_last_sixteen)
{
    mt19937 g;
    float x17[17], x16[16], skipped[17], tail[16];
    mt_seed(&g, 42);
    torch_randn(&g, x17, 17);
    mt_seed(&g, 42);
    torch_randn(&g, x16, 16);
    mt_seed(&g, 42);
    torch_rand(&g, skipped, 17);
    torch_randn(&g, tail, 16);
    cr_assert(x17[0] == x16[0]);
    cr_assert(memcmp(x17 + 1, tail, sizeof tail) == 0);
}

static void demo_logits(float logits[4 * 2048])
{
    mt19937 g;
    mt_seed(&g, 0);
    torch_randn(&g, logits, 4 * 2048);
    for (int i = 0; i < 4 * 2048; i++)
        logits[i] *= 8.0f;
}

Test(rng, the_reference_logits_have_the_quoted_range)
{
    static float logits[4 * 2048];
    demo_logits(logits);
    float lo = INFINITY, hi = block_max(logits, 2048);
    for (int j = 0; j < 2048; j++)
        lo = fminf(lo, logits[j]);
    char range[32], max[32];
    snprintf(range, sizeof range, "%.1f", (double)(hi - lo));
    snprintf(max, sizeof max, "%.1f", (double)hi);
    cr_assert_str_eq(range, "58.0");
    cr_assert_str_eq(max, "32.8");
}

Test(rng, the_running_max_of_row_0_rises_at_blocks_5_and_6)
{
    static float logits[4 * 2048];
    char rises[64] = "";
    demo_logits(logits);
    float running = -INFINITY;
    for (int b = 0; b < 32; b++) {
        float block = block_max(logits + 64 * b, 64);
        if (b > 0 && block > running)
            snprintf(rises + strlen(rises), sizeof rises - strlen(rises), " %d", b);
        running = fmaxf(running, block);
    }
    cr_assert_str_eq(rises, " 5 6");
}

static void randn_on_avx2(mt19937 *g, float *out, size_t count)
{
    g->path = RNG_AVX2;
    torch_randn(g, out, count);
}

Test(rng, the_avx2_path_prints_the_famous_randn_4x4_too)
{
    expect_seed_0_draws(randn_on_avx2, 16,
        "-1.1258 -1.1524 -0.2506 -0.4339 0.8487 0.6920 -0.3160 -2.1152 "
        "0.3223 -1.2633 0.3500 0.3081 0.1198 1.2377 1.1168 -0.2473");
    expect_seed_0_draws(randn_on_avx2, 4, "1.5410 -0.2934 -2.1788 0.5684");
}

Test(rng, the_two_paths_differ_in_the_bits_of_some_normals)
{
    static float scalar[4 * 2048], avx2[4 * 2048];
    mt19937 g;
    mt_seed(&g, 0);
    torch_randn(&g, scalar, 4 * 2048);
    mt_seed_path(&g, 0, RNG_AVX2);
    torch_randn(&g, avx2, 4 * 2048);
    size_t differ = 0;
    for (size_t i = 0; i < 4 * 2048; i++) {
        differ += memcmp(&scalar[i], &avx2[i], sizeof(float)) != 0;
        cr_assert_lt(fabsf(scalar[i] - avx2[i]), 1e-5f);
    }
    cr_assert(differ > 0 && differ < 4 * 2048, "%zu differ", differ);
}

static void name_a_missing_path(void *unused)
{
    (void)unused;
    rng_path_named("prog", "avx512");
}

Test(rng, paths_are_named_and_other_names_refused)
{
    cr_assert_eq(rng_path_named("prog", rng_path_name(RNG_AVX2)), RNG_AVX2);
    cr_assert_eq(rng_path_named("prog", rng_path_name(RNG_SCALAR)), RNG_SCALAR);
    captured c = run_captured(name_a_missing_path, NULL);
    cr_assert_eq(c.status, 2);
    cr_assert_str_eq(c.err, "prog: error: --rng must be scalar or avx2 (got 'avx512')\n");
}

static void expect_standard_normal(const float *x, size_t n)
{
    double sum = 0, squares = 0;
    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        squares += (double)x[i] * x[i];
    }
    double mean = sum / (double)n, variance = squares / (double)n - mean * mean;
    cr_assert(fabs(mean) < 0.005, "mean %f", mean);
    cr_assert(fabs(variance - 1.0) < 0.007, "variance %f", variance);
}

Test(rng, every_sampler_gives_standard_normals)
{
    enum { N = 1 << 20 };
    static float x[N];
    mt19937 g;
    for (int path = RNG_SCALAR; path <= RNG_AVX2; path++) {
        mt_seed_path(&g, 1, (rng_path)path);
        torch_randn(&g, x, N);
        expect_standard_normal(x, N);
    }
    for (size_t i = 0; i < N; i += 7)
        torch_randn(&g, x + i, i + 7 <= N ? 7 : N - i);
    expect_standard_normal(x, N);
}

static tensor counting_tensor(int ndim, const size_t shape[])
{
    tensor t = tensor_new(ndim, shape);
    for (size_t i = 0; i < tensor_count(&t); i++)
        t.data[i] = (float)i * 0.25f - 3.0f;
    return t;
}

static void expect_round_trip(const char *path, int ndim, const size_t shape[])
{
    tensor t = counting_tensor(ndim, shape), back;
    char err[256];
    cr_assert_eq(npy_write(path, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npy_read(path, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back.ndim, ndim);
    cr_assert(memcmp(back.shape, t.shape, sizeof t.shape) == 0);
    cr_assert(memcmp(back.data, t.data, tensor_count(&t) * sizeof(float)) == 0);
    tensor_free(&t);
    tensor_free(&back);
}

Test(npy, round_trip_in_one_to_four_dimensions)
{
    size_t shape[4] = { 2, 3, 4, 5 };
    scratch_dir s = scratch_new();
    for (int ndim = 1; ndim <= 4; ndim++)
        expect_round_trip(s.path, ndim, shape);
    scratch_remove(&s);
    cr_assert_eq(fa_bytes_live(), 0);
}

static size_t written_bytes(const tensor *t, char *bytes, size_t capacity)
{
    scratch_dir s = scratch_new();
    char err[256];
    cr_assert_eq(npy_write(s.path, t, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(s.path, "rb");
    size_t n = fread(bytes, 1, capacity, f);
    fclose(f);
    scratch_remove(&s);
    return n;
}

Test(npy, the_header_is_the_one_numpy_writes)
{
    size_t shape[1] = { 3 };
    tensor t = counting_tensor(1, shape);
    char bytes[160];
    cr_assert_eq(written_bytes(&t, bytes, sizeof bytes), 128 + 12);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    size_t n = strlen(dict);
    cr_assert(memcmp(bytes, "\x93NUMPY\x01\x00\x76\x00", 10) == 0);
    cr_assert(memcmp(bytes + 10, dict, n) == 0);
    for (size_t i = 10 + n; i < 127; i++)
        cr_assert_eq(bytes[i], ' ');
    cr_assert_eq(bytes[127], '\n');
    cr_assert(memcmp(bytes + 128, t.data, 12) == 0);
    tensor_free(&t);
}

static void write_npy_preamble(FILE *f, int major, size_t header_length)
{
    fwrite("\x93NUMPY", 1, 6, f);
    fputc(major, f);
    fputc(0, f);
    fputc((int)(header_length & 0xff), f);
    fputc((int)(header_length >> 8 & 0xff), f);
    if (major >= 2) {
        fputc((int)(header_length >> 16 & 0xff), f);
        fputc((int)(header_length >> 24 & 0xff), f);
    }
}

static void write_npy_n(const char *path, int major, const char *dict, size_t length,
                        int bias, size_t data_bytes)
{
    FILE *f = fopen(path, "wb");
    write_npy_preamble(f, major, (size_t)((long)length + 1 + bias));
    fwrite(dict, 1, length, f);
    fputc('\n', f);
    for (size_t i = 0; i < data_bytes; i++)
        fputc(0, f);
    fclose(f);
}

static void write_npy(const char *path, int major, const char *dict, size_t data_bytes)
{
    write_npy_n(path, major, dict, strlen(dict), 0, data_bytes);
}

static void expect_read_error(const char *path, const char *expected)
{
    char err[256] = "", wanted[256];
    tensor t = { 0 };
    cr_assert_eq(npy_read(path, &t, err, sizeof err), -1);
    snprintf(wanted, sizeof wanted, "%s: %s", path, expected);
    cr_assert_str_eq(err, wanted);
    cr_assert(t.data == NULL);
    cr_assert_eq(fa_bytes_live(), 0);
}

static void expect_npy_error(int major, const char *dict, size_t data_bytes,
                             const char *expected)
{
    scratch_dir s = scratch_new();
    write_npy(s.path, major, dict, data_bytes);
    expect_read_error(s.path, expected);
    scratch_remove(&s);
}

static void expect_npy_shape(int major, const char *dict, size_t data_bytes,
                             int ndim, size_t d0, size_t d1)
{
    scratch_dir s = scratch_new();
    write_npy(s.path, major, dict, data_bytes);
    char err[256] = "";
    tensor t = { 0 };
    cr_assert_eq(npy_read(s.path, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(t.ndim, ndim);
    cr_assert_eq(t.shape[0], d0);
    cr_assert_eq(t.shape[1], d1);
    tensor_free(&t);
    scratch_remove(&s);
}

Test(npy, shapes_are_parsed_however_they_are_spaced)
{
    expect_npy_shape(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n",
                     12, 1, 3, 1);
    expect_npy_shape(1, "{'descr':'<f4','fortran_order':False,'shape':(2,3)}", 24,
                     2, 2, 3);
    expect_npy_shape(1, "{ \"shape\" : ( 2 , 3 , ) , 'fortran_order': False,"
                        " 'descr': '<f4' , }   \n", 24, 2, 2, 3);
    expect_npy_shape(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
                     24, 2, 2, 3);
    expect_npy_shape(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }",
                     0, 2, 0, 3);
}

Test(npy, wrong_dtypes_are_named)
{
    expect_npy_error(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24,
                     "dtype '<f8' is not float32 ('<f4')");
    expect_npy_error(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12,
                     "dtype '>f4' is big-endian; need little-endian '<f4'");
}

Test(npy, fortran_order_is_refused)
{
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
                     "fortran_order is True; need C order");
}

Test(npy, dimension_counts_outside_one_to_four_are_refused)
{
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (1, 1, 1, 1, 2), }",
                     8, "the array has 5 dimensions; need 1 to 4");
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4,
                     "the array has 0 dimensions; need 1 to 4");
}

Test(npy, data_must_match_the_shape_exactly)
{
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    expect_npy_error(1, dict, 20,
                     "truncated data: the header promises 24 bytes, the file holds 20");
    expect_npy_error(1, dict, 28, "4 bytes of extra data after the array");
}

Test(npy, malformed_headers_are_refused)
{
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': False}", 0,
                     "the header lacks 'descr', 'fortran_order' or 'shape'");
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,)}", 12,
                     "malformed header: 'fortran_order' is not True or False");
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "
                        "'x': 1}", 12,
                     "malformed header: unknown key");
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}", 12,
                     "malformed header: 'shape' is not a tuple of sizes");
    expect_npy_error(1, "['descr']", 0, "the header is not a dictionary");
    expect_npy_error(4, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 12,
                     "unsupported .npy version 4.0 (need 1.0, 2.0 or 3.0)");
}

Test(npy, what_python_refuses_is_refused)
{
    expect_npy_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (03,)}", 12,
                     "malformed header: 'shape' is not a tuple of sizes");
    const char *const spaces[3] = { "\v", "\f", "\r" };
    for (int i = 0; i < 3; i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr':%s'<f4', 'fortran_order': False, "
                 "'shape': (3,)}", spaces[i]);
        expect_npy_error(1, dict, 12, "malformed header: 'descr' is not a string");
    }
    static const char nul_value[] = "{'descr': '<f4\0x', 'fortran_order': False, 'shape': (3,)}";
    static const char nul_key[] = "{'descr\0x': '<f4', 'fortran_order': False, 'shape': (3,)}";
    const char *const nul_dicts[2] = { nul_value, nul_key };
    for (int i = 0; i < 2; i++) {
        scratch_dir s = scratch_new();
        write_npy_n(s.path, 1, nul_dicts[i], sizeof nul_value - 1, 0, 12);
        expect_read_error(s.path, "malformed header: it contains a NUL byte");
        scratch_remove(&s);
    }
    expect_npy_error(1, "{'descr': '<\xa0\xcb', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 12,
                     "malformed header: 'descr' is not a string");
    expect_npy_error(1, "{'descr': '<f\r', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 12,
                     "malformed header: 'descr' is not a string");
    expect_npy_shape(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1)}", 12,
                     2, 3, 1);
    expect_npy_error(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,)}", 12,
                     "malformed header: 'shape' is not a tuple of sizes");
}

Test(npy, header_lengths_that_cannot_be_right_are_named)
{
    scratch_dir s = scratch_new();
    char *dict = calloc(70001, 1);
    memset(dict, ' ', 70000);
    memcpy(dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 55);
    write_npy_n(s.path, 2, dict, 70000, 0, 12);
    expect_read_error(s.path, "the header length 70001 is over the 64 KiB limit");
    free(dict);
    write_npy_n(s.path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
                55, -1, 12);
    expect_read_error(s.path, "the header does not end in a newline "
                              "(is its length field right?)");
    scratch_remove(&s);
}

static void expect_raw_error(const char *bytes, size_t n, const char *expected)
{
    scratch_dir s = scratch_new();
    FILE *f = fopen(s.path, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    expect_read_error(s.path, expected);
    scratch_remove(&s);
}

Test(npy, bad_magic_and_truncated_headers_are_refused)
{
    expect_raw_error("PK\x03\x04 not numpy", 15, "not a .npy file (bad magic)");
    expect_raw_error("\x93NUMPY\x01\x00\x40\x00{'descr'", 17, "truncated header");
    expect_raw_error("\x93NUMPY\x01\x00\x40", 9, "truncated header");
}

Test(npy, a_missing_file_is_reported_with_the_reason)
{
    expect_read_error("/nonexistent/q.npy", "cannot open: No such file or directory");
}

Test(npy, a_failed_write_leaves_no_file)
{
    scratch_dir s = scratch_new();
    size_t shape[2] = { 64, 64 };
    tensor t = counting_tensor(2, shape);
    char err[256];
    cr_assert_eq(mkdir(s.path, 0755), 0);
    cr_assert_eq(npy_write(s.path, &t, err, sizeof err), -1);
    cr_assert(strstr(err, "not a regular file") != NULL, "%s", err);
    cr_assert_eq(rmdir(s.path), 0);
    signal(SIGXFSZ, SIG_IGN);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &(struct rlimit){ 1000, RLIM_INFINITY }), 0);
    cr_assert_eq(npy_write(s.path, &t, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot write: File too large") != NULL, "%s", err);
    cr_assert_eq(npy_write("/nonexistent/o.npy", &t, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot create /nonexistent/o.npy.tmp.") != NULL, "%s", err);
    tensor_free(&t);
    scratch_remove(&s);
}

Test(npy, writing_over_a_file_replaces_it)
{
    scratch_dir s = scratch_new();
    size_t big[2] = { 8, 8 }, small[1] = { 2 };
    tensor a = counting_tensor(2, big), b = counting_tensor(1, small), back;
    char err[256];
    cr_assert_eq(npy_write(s.path, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npy_write(s.path, &b, err, sizeof err), 0, "%s", err);
    cr_assert_eq(npy_read(s.path, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back.ndim, 1);
    cr_assert_eq(tensor_count(&back), 2);
    cr_assert(memcmp(back.data, b.data, 2 * sizeof(float)) == 0);
    tensor_free(&a);
    tensor_free(&b);
    tensor_free(&back);
    scratch_remove(&s);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL; )
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d != NULL) closedir(d);
    return n;
}

Test(npy, a_reserved_output_waits_beside_its_target)
{
    scratch_dir s = scratch_new();
    size_t shape[1] = { 3 };
    tensor t = counting_tensor(1, shape);
    char err[256];
    cr_assert_eq(npy_reserve(s.path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(entries(s.dir), 1, "the temporary is there before the data");
    cr_assert_eq(npy_write(s.path, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(entries(s.dir), 1, "x.npy alone is left");
    tensor_free(&t);
    scratch_remove(&s);
}

Test(npy, a_read_only_output_is_refused_and_a_replaced_one_keeps_its_mode)
{
    scratch_dir s = scratch_new();
    size_t shape[1] = { 3 };
    tensor t = counting_tensor(1, shape);
    char err[256];
    struct stat st;
    cr_assert_eq(close(open(s.path, O_CREAT | O_WRONLY, 0444)), 0);
    cr_assert_eq(npy_write(s.path, &t, err, sizeof err), -1);
    cr_assert(strstr(err, "not writable (mode 0444)") != NULL, "%s", err);
    cr_assert_eq(chmod(s.path, 0600), 0);
    cr_assert_eq(npy_write(s.path, &t, err, sizeof err), 0, "%s", err);
    cr_assert(stat(s.path, &st) == 0 && (st.st_mode & 07777) == 0600, "mode %o", st.st_mode);
    tensor_free(&t);
    scratch_remove(&s);
}

Test(npy, a_link_is_written_through_and_stays_a_link)
{
    scratch_dir s = scratch_new();
    size_t shape[1] = { 3 };
    tensor t = counting_tensor(1, shape), back;
    char err[256], link[160];
    struct stat st;
    snprintf(link, sizeof link, "%s/link.npy", s.dir);
    cr_assert_eq(symlink("x.npy", link), 0);
    cr_assert_eq(npy_write(link, &t, err, sizeof err), 0, "%s", err);
    cr_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link stays a link");
    cr_assert_eq(npy_read(s.path, &back, err, sizeof err), 0, "%s", err);
    unlink(link);
    tensor_free(&t); tensor_free(&back);
    scratch_remove(&s);
}

static void reserve_then_fail(void *path)
{
    npy_reserve_outputs_or_exit("ch04_tiled", (const char *const[]){ path }, 1, NULL, 0);
    die_usage("ch04_tiled", "a later refusal");
}

static void reserve_then_end_by_a_signal(void *path)
{
    npy_reserve_outputs_or_exit("ch04_tiled", (const char *const[]){ path }, 1, NULL, 0);
    raise(SIGTERM);
}

Test(npy, a_stopped_program_leaves_no_reservation)
{
    scratch_dir s = scratch_new();
    cr_assert_eq(run_captured(reserve_then_fail, s.path).status, 2);
    cr_assert_eq(entries(s.dir), 0);
    cr_assert_eq(run_captured(reserve_then_end_by_a_signal, s.path).status, -1);
    cr_assert_eq(entries(s.dir), 0);
    scratch_remove(&s);
}

static void read_a_missing_file(void *ctx)
{
    (void)ctx;
    npy_read_or_exit("ch04_tiled", "/nonexistent/q.npy");
}

Test(npy, the_exiting_reader_prints_one_line_and_exits_2)
{
    captured c = run_captured(read_a_missing_file, NULL);
    cr_assert_eq(c.status, 2);
    cr_assert_str_eq(c.err, "ch04_tiled: error: /nonexistent/q.npy: "
                            "cannot open: No such file or directory\n");
}

