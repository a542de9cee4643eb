/* test_ch10_gpu.c — chapter 10's kernels, on the CPU emulation of CUDA.
   Tangled from chapters/ch10_gpu.nw. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "gpu/gpu_attention.h"
#include "gpu/gpu_emu_cuda.h"
#include "../tangled/ch10_gpu.h"
enum { CH10_BWD_TENSORS = 8 };
typedef struct {
    float *x[CH10_BWD_TENSORS];
    size_t qo, kv;
} ch10_bwd_tensors;
ch10_bwd_tensors ch10_bwd_tensors_new(const attn_params *p, uint32_t seed);
void ch10_bwd_tensors_free(ch10_bwd_tensors *t);

typedef struct {
    const char *device, *kernel, *q_path, *k_path, *v_path, *out_path, *data_dir;
    bool causal, json, bench, cuda_info;
    long seed, batch, heads, seq, seq_k, dim, repeats;
    double scale;
    const char *dout_path, *dq_path, *dk_path, *dv_path;
    bool backward;
    long bwd_dim;
    const char *points_path;
} ch10_options;
typedef struct {
    gpu_kernel kernel;
    bool causal;
    double error, cpu_naive_error;
    emu_counts counts;
} ch10_run;
enum { CH10_RUNS = 4 };
int chapter_main(int argc, char **argv);
ch10_options ch10_defaults(void);

static char *default_run_json(void)
{
    const char *args[] = { "ch10_gpu", "--device", "cpu", "--json", NULL };
    return capture_stdout_shared("ch10-default", chapter_main, 4, (char **)args);
}
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    capture_shared_forget("ch10-default");
}
typedef struct {
    attn_params p;
    float *q, *k, *v, *o;
    double *exact;
    size_t count;
} gpu_problem;

static gpu_problem gpu_problem_new(size_t heads, size_t nq, size_t nk, size_t d,
                                   bool causal, uint32_t seed)
{
    gpu_problem pr = { .p = attn_default(1, heads, nq, nk, d), .count = heads * nq * d };
    pr.p.causal = causal;
    pr.q = fa_alloc(pr.count * sizeof(float));
    pr.k = fa_alloc(heads * nk * d * sizeof(float));
    pr.v = fa_alloc(heads * nk * d * sizeof(float));
    pr.o = fa_alloc(pr.count * sizeof(float));
    pr.exact = fa_alloc(pr.count * sizeof(double));
    attn_draw_inputs(&pr.p, seed, pr.q, pr.k, pr.v);
    attention_reference(&pr.p, pr.q, pr.k, pr.v, pr.exact);
    return pr;
}

static void gpu_problem_free(gpu_problem *pr)
{
    fa_free(pr->q); fa_free(pr->k); fa_free(pr->v); fa_free(pr->o); fa_free(pr->exact);
}

static double run_emulated(gpu_problem *pr, gpu_kernel kernel, emu_counts *counts)
{
    for (size_t i = 0; i < pr->count; i++) pr->o[i] = NAN;
    gpu_attention_emulated(kernel, &pr->p, pr->q, pr->k, pr->v, pr->o, counts);
    return max_abs_diff_fd(pr->o, pr->exact, pr->count);
}

static void check_both_kernels(size_t heads, size_t nq, size_t nk, size_t d, bool causal)
{
    gpu_problem pr = gpu_problem_new(heads, nq, nk, d, causal, (uint32_t)(nq * 31 + d));
    const double naive = run_emulated(&pr, GPU_NAIVE, NULL);
    const double fused = run_emulated(&pr, GPU_FUSED, NULL);
    const double bound = gpu_fused_error_bound(&pr.p, pr.q, pr.k, pr.v, pr.exact, naive);
    cr_assert(naive <= 1e-5, "naive nq=%zu nk=%zu d=%zu causal=%d: %.3e",
              nq, nk, d, causal, naive);
    cr_assert(fused <= 1e-5 && fused <= bound,
              "fused nq=%zu nk=%zu d=%zu causal=%d: %.3e, bound %.3e",
              nq, nk, d, causal, fused, bound);
    gpu_problem_free(&pr);
}

static void check_cross_product(size_t d)
{
    static const size_t lengths[] = { 1, 7, 33, 65 };
    for (int a = 0; a < 4; a++)
        for (int same = 0; same < 2; same++)
            for (int causal = 0; causal < 2; causal++)
                check_both_kernels(1, lengths[a], same ? lengths[a] : 50, d, causal);
}

Test(kernels, head_dimension_1) { check_cross_product(1); }
Test(kernels, head_dimension_3) { check_cross_product(3); }
Test(kernels, head_dimension_16) { check_cross_product(16); }
Test(kernels, head_dimension_64) { check_cross_product(64); }
Test(kernels, head_dimension_128) { check_cross_product(128); }

Test(kernels, two_heads_ragged_tiles)
{
    check_both_kernels(2, 37, 45, 16, false);
    check_both_kernels(2, 37, 45, 16, true);
}

Test(kernels, every_column_has_one_lane)
{
    int owners[GPU_MAX_DIM] = { 0 };
    for (unsigned lane = 0; lane < 32; lane++)
        for (unsigned g = 0, c; g < GPU_MAX_DIM && (c = gpu_fused_column_of(lane, g)) < GPU_MAX_DIM; g++) {
            owners[c]++;
            if (lane > 0) cr_expect_eq(c, gpu_fused_column_of(lane - 1, g) + 1, "lane %u, acc[%u]", lane, g);
        }
    for (unsigned c = 0; c < GPU_MAX_DIM; c++) cr_expect_eq(owners[c], 1, "column %u", c);
}

Test(kernels, huge_logits_stay_finite)
{
    gpu_problem pr = gpu_problem_new(1, 40, 40, 16, false, 3);
    pr.p.scale *= 1000.0f;
    attention_reference(&pr.p, pr.q, pr.k, pr.v, pr.exact);
    const double naive = run_emulated(&pr, GPU_NAIVE, NULL);
    for (size_t i = 0; i < pr.count; i++) cr_assert(isfinite(pr.o[i]), "naive, %zu", i);
    const double fused = run_emulated(&pr, GPU_FUSED, NULL);
    for (size_t i = 0; i < pr.count; i++) cr_assert(isfinite(pr.o[i]), "fused, %zu", i);
    const double bound = gpu_fused_error_bound(&pr.p, pr.q, pr.k, pr.v, pr.exact, naive);
    cr_assert(fused <= bound, "fused %.3e, bound %.3e", fused, bound);
    gpu_problem_free(&pr);
}

Test(kernels, limits_are_refused_with_a_reason)
{
    attn_params p = attn_default(1, 1, 8, 8, GPU_MAX_DIM);
    cr_assert_null(gpu_params_problem(&p));
    p.d = GPU_MAX_DIM + 1;
    cr_assert_not_null(gpu_params_problem(&p));
    p.d = 8; p.window = 4;
    cr_assert_not_null(gpu_params_problem(&p));
    p.window = 0; p.nq = 0;
    cr_assert_str_eq(gpu_params_problem(&p), attn_params_problem(&p));
}

Test(kernels, mma_matches_the_product_exactly)
{
    float a[256], b[128], c[128], d[128];
    gpu_mma_test_inputs(a, b, c);
    for (int i = 0; i < 128; i++) d[i] = NAN;
    gpu_mma_emulated(a, b, c, d);
    cr_assert_eq(gpu_mma_exact_count(a, b, c, d), 128);
}

Test(kernels, mma_rounds_its_operands_to_nearest_even)
{
    float a[256] = { 0 }, b[128] = { 0 }, c[128] = { 0 }, d[128];
    const float in[3] = { 1 + 0x1p-8f, 1 + 3 * 0x1p-9f, 1 + 0x1p-7f + 0x1p-8f },
                out[3] = { 1.0f, 1 + 0x1p-7f, 1 + 0x1p-6f };
    for (int k = 0; k < 8; k++) b[k * 8 + k] = 1.0f;
    for (int i = 0; i < 3; i++) a[i] = in[i];
    gpu_mma_emulated(a, b, c, d);
    for (int i = 0; i < 3; i++) cr_assert_eq(d[i], out[i], "%a became %a", in[i], d[i]);
}

Test(kernels, ldmatrix_check_kernel_loads_the_documented_layout)
{
    unsigned short m[256];
    unsigned out[256], swapped[256];
    gpu_ldmatrix_test_input(m);
    for (int i = 0; i < 256; i++) out[i] = 0;
    gpu_ldmatrix_emulated(m, out);
    cr_assert_eq(gpu_ldmatrix_exact_count(m, out), 256);
    for (int i = 0; i < 256; i++) swapped[i] = out[i ^ 4];
    cr_assert_eq(gpu_ldmatrix_exact_count(m, swapped), 0);
}

static emu_counts fused_counts_by_formula(size_t heads, size_t nq, size_t nk, bool causal)
{
    emu_counts c = { .launches = 1, .threads = 128 };
    for (size_t q0 = 0; q0 < nq; q0 += 16) {
        const size_t key_end = causal && q0 + 16 < nk ? q0 + 16 : nk;
        const size_t tiles = (key_end + 31) / 32, rows = nq - q0 < 16 ? nq - q0 : 16;
        c.blocks += heads;
        c.block_barriers += heads * 2 * tiles;
        c.warp_meetings += heads * rows * (7 * tiles + 5);
    }
    return c;
}

Test(counts, fused_kernel_matches_the_formulas)
{
    for (int causal = 0; causal < 2; causal++) {
        gpu_problem pr = gpu_problem_new(2, 50, 70, 8, causal, 1);
        emu_counts got = { 0 }, want = fused_counts_by_formula(2, 50, 70, causal);
        run_emulated(&pr, GPU_FUSED, &got);
        cr_assert(got.launches == want.launches && got.blocks == want.blocks &&
                  got.threads == want.threads);
        cr_assert_eq(got.block_barriers, want.block_barriers, "causal=%d", causal);
        cr_assert_eq(got.warp_meetings, want.warp_meetings, "causal=%d", causal);
        gpu_problem_free(&pr);
    }
}

Test(counts, naive_kernels_match_the_formulas)
{
    gpu_problem pr = gpu_problem_new(2, 50, 70, 8, false, 1);
    emu_counts got = { 0 };
    run_emulated(&pr, GPU_NAIVE, &got);
    cr_assert_eq(got.launches, 3);
    cr_assert_eq(got.block_barriers, 0);
    cr_assert_eq(got.warp_meetings, 10 * 2 * 50);
    gpu_problem_free(&pr);
}

Test(receipts, default_run_on_the_emulation)
{
    char *json = default_run_json();
    const emu_counts want = fused_counts_by_formula(1, 100, 100, false);
    char expect[32];
    cr_expect(json_fact_is(json, "fused_blocks", fmt_int(expect, (long long)want.blocks)));
    cr_expect(json_fact_is(json, "fused_block_barriers",
                           fmt_int(expect, (long long)want.block_barriers)));
    cr_expect(json_fact_is(json, "fused_warp_meetings",
                           fmt_int(expect, (long long)want.warp_meetings)));
    cr_expect(json_fact_is(json, "naive_warp_meetings", "1,000"));
    cr_expect(json_fact_is(json, "mma_exact", "128 of 128"));
    cr_expect(json_fact_is(json, "gpu_speed", "not yet measured on a GPU"));
    static const char *const keys[] = { "naive_error", "fused_error", "naive_error_causal",
                                        "fused_error_causal" };
    for (int i = 0; i < 4; i++) {
        char *value = json_fact(json, keys[i]);
        cr_assert_not_null(value, "%s", keys[i]);
        cr_expect(strtod(value, NULL) > 0 && strtod(value, NULL) <= 1e-5, "%s = %s",
                  keys[i], value);
        free(value);
    }
    free(json);
}
static void check_tc(size_t heads, size_t nq, size_t nk, size_t d, bool causal)
{
    gpu_problem pr = gpu_problem_new(heads, nq, nk, d, causal, (uint32_t)(nq * 31 + d));
    const double error = run_emulated(&pr, GPU_TC, NULL);
    const double plain = gpu_bf16_naive_error(&pr.p, pr.q, pr.k, pr.v, pr.exact);
    cr_assert(error <= 2 * plain, "tc heads=%zu nq=%zu nk=%zu d=%zu causal=%d: %.3e, "
              "plain bf16 %.3e", heads, nq, nk, d, causal, error, plain);
    gpu_problem_free(&pr);
}

Test(tc, width_64_ragged_tiles)
{
    check_tc(1, 70, 70, 64, false);
    check_tc(1, 70, 70, 64, true);
    check_tc(1, 1, 1, 64, false);
    check_tc(1, 5, 1, 64, true);
}

Test(tc, width_128_with_other_key_lengths)
{
    check_tc(1, 33, 100, 128, false);
    check_tc(1, 33, 100, 128, true);
    check_tc(1, 100, 33, 128, true);
}

Test(tc, three_key_tiles_two_heads)
{
    check_tc(2, 130, 150, 64, false);
    check_tc(2, 130, 150, 64, true);
    check_tc(2, 200, 150, 128, true);
}

Test(tc, head_dimensions_below_the_width)
{
    check_tc(1, 20, 70, 40, false);
    check_tc(1, 20, 70, 40, true);
    check_tc(1, 20, 70, 96, false);
}

Test(tc, huge_logits_stay_finite)
{
    gpu_problem pr = gpu_problem_new(1, 40, 80, 64, false, 3);
    pr.p.scale *= 1000.0f;
    attention_reference(&pr.p, pr.q, pr.k, pr.v, pr.exact);
    const double error = run_emulated(&pr, GPU_TC, NULL);
    for (size_t i = 0; i < pr.count; i++) cr_assert(isfinite(pr.o[i]), "%zu", i);
    const double plain = gpu_bf16_naive_error(&pr.p, pr.q, pr.k, pr.v, pr.exact);
    cr_assert(error <= 2 * plain, "%.3e, plain bf16 %.3e", error, plain);
    gpu_problem_free(&pr);
}

Test(tc, refuses_what_it_cannot_load)
{
    attn_params p = attn_default(1, 1, 8, 8, 12);
    cr_assert_null(gpu_kernel_problem(GPU_FUSED, &p));
    cr_assert_not_null(gpu_kernel_problem(GPU_TC, &p));
    p.d = 16;
    cr_assert_null(gpu_kernel_problem(GPU_TC, &p));
    p.d = GPU_MAX_DIM + 8;
    cr_assert_str_eq(gpu_kernel_problem(GPU_TC, &p), gpu_params_problem(&p));
}

static emu_counts tc_counts_by_formula(size_t heads, size_t nq, size_t nk, size_t d,
                                       bool causal)
{
    const size_t width = d <= 64 ? 64 : 128, elements = heads * (nq > nk ? nq : nk) * d;
    emu_counts c = { .launches = 2, .threads = 256 + 2 * width, .blocks = (elements + 255) / 256 };
    for (size_t q0 = 0; q0 < nq; q0 += width) {
        const size_t key_end = causal && q0 + width < nk ? q0 + width : nk;
        const size_t tiles = (key_end + 63) / 64;
        c.blocks += heads;
        c.block_barriers += heads * 2 * tiles;
        c.warp_meetings += heads * width / 16 * (tiles * (3 * width + 4) + 4);
        c.ldmatrix += heads * width / 16 * tiles * width / 2;
    }
    return c;
}

Test(tc, counts_match_the_formulas)
{
    for (int run = 0; run < 4; run++) {
        const bool causal = run % 2;
        const size_t d = run < 2 ? 16 : 128;
        gpu_problem pr = gpu_problem_new(1, 150, 200, d, causal, 1);
        emu_counts got = { 0 }, want = tc_counts_by_formula(1, 150, 200, d, causal);
        run_emulated(&pr, GPU_TC, &got);
        cr_assert(got.launches == want.launches && got.blocks == want.blocks &&
                  got.threads == want.threads, "causal=%d", causal);
        cr_assert_eq(got.block_barriers, want.block_barriers, "causal=%d", causal);
        cr_assert_eq(got.warp_meetings, want.warp_meetings, "causal=%d", causal);
        cr_assert_eq(got.ldmatrix, want.ldmatrix, "causal=%d", causal);
        gpu_problem_free(&pr);
    }
}

Test(receipts, tensor_core_kernel_within_twice_plain_bf16)
{
    char *json = default_run_json();
    char *ratio = json_fact(json, "tc_ratio"), *error = json_fact(json, "tc_error"), want[32];
    gpu_problem pr = gpu_problem_new(1, 100, 100, 64, false, 0);
    cr_assert(ratio && error);
    cr_expect_str_eq(error, fmt_num(want, run_emulated(&pr, GPU_TC, NULL)));
    cr_expect(strtod(ratio, NULL) > 0 && strtod(ratio, NULL) <= 2.0, "tc_ratio = %s", ratio);
    gpu_problem_free(&pr);
    free(ratio); free(error); free(json);
}

Test(receipts, ldmatrix_count_matches_the_formula)
{
    char *json = default_run_json();
    char *counted = json_fact(json, "tc_ldmatrix_per_tile");
    char *formula = json_fact(json, "tc_loads_after_64");
    cr_assert(counted && formula);
    cr_expect_eq(strtod(counted, NULL), strtod(formula, NULL), "%s vs %s", counted, formula);
    cr_expect(json_fact_is(json, "ldmatrix_exact", "256 of 256"));
    free(counted); free(formula); free(json);
}

static ch10_tc_check check_tc_on_emulation(bool causal, size_t poke, float by)
{
    gpu_problem pr = gpu_problem_new(2, 130, 130, 64, causal, 17);
    float *fused = fa_alloc(pr.count * sizeof(float));
    run_emulated(&pr, GPU_FUSED, NULL);
    memcpy(fused, pr.o, pr.count * sizeof(float));
    run_emulated(&pr, GPU_TC, NULL);
    const tensor qkv[3] = { { .data = pr.q }, { .data = pr.k }, { .data = pr.v } };
    ch10_tc_check c = ch10_check_tc_rows(&pr.p, qkv, fused, pr.o);
    if (poke < pr.count) {
        pr.o[poke] = isnan(by) ? NAN : pr.o[poke] + by * (float)c.bound;
        c = ch10_check_tc_rows(&pr.p, qkv, fused, pr.o);
    }
    fa_free(fused); gpu_problem_free(&pr);
    return c;
}

Test(tc, benchmark_check_passes_the_kernels_and_fails_a_wrong_answer)
{
    for (int causal = 0; causal < 2; causal++) {
        const ch10_tc_check c = check_tc_on_emulation(causal, (size_t)-1, 0.0f);
        cr_expect(c.ok && c.bound > 0 && c.diff <= c.bound, "causal %d: %g > %g", causal,
                  c.diff, c.bound);
    }
    cr_expect(!check_tc_on_emulation(false, 64 * 64 + 5, 2.0f).ok, "row 64, twice the bound");
    cr_expect(!check_tc_on_emulation(true, 40 * 64 + 3, NAN).ok, "a NaN on row 40");
}

Test(tc, exponential_flushes_results_below_the_normal_range)
{
    gpu_problem pr = gpu_problem_new(1, 1, 2, 16, false, 3);
    for (size_t i = 0; i < 16; i++) pr.q[i] = pr.k[i] = pr.k[16 + i] = pr.v[i] = pr.v[16 + i] = 0;
    pr.q[0] = 1.0f; pr.k[0] = 64.0f; pr.k[16] = -26.0f; pr.v[16] = 1.0f;
    pr.p.scale = 1.0f;
    run_emulated(&pr, GPU_TC, NULL);
    cr_expect(exp2f(-90.0f * 1.4426950f) > 0.0f, "the weight is representable unflushed");
    cr_expect_eq(pr.o[0], 0.0f, "the weight 2^-130 was kept: %g", (double)pr.o[0]);
    gpu_problem_free(&pr);
}

typedef struct {
    attn_params p;
    ch10_bwd_tensors t;
    double *exact[3], naive[3], flash[3], bound[3];
} bwd_problem;

static bwd_problem bwd_problem_new(size_t heads, size_t nq, size_t nk, size_t d,
                                   bool causal, uint32_t seed)
{
    bwd_problem b = { .p = attn_default(1, heads, nq, nk, d) };
    b.p.causal = causal;
    b.t = ch10_bwd_tensors_new(&b.p, seed);
    for (int g = 0; g < 3; g++) b.exact[g] = fa_alloc((g ? b.t.kv : b.t.qo) * sizeof(double));
    gpu_backward_reference(&b.p, b.t.x[0], b.t.x[1], b.t.x[2], b.t.x[3], b.exact, b.naive,
                           b.flash, b.bound);
    return b;
}

static void bwd_problem_free(bwd_problem *b)
{
    ch10_bwd_tensors_free(&b->t);
    for (int g = 0; g < 3; g++) fa_free(b->exact[g]);
}

static void run_backward_emulated(bwd_problem *b, double error[3], emu_counts counts[3])
{
    for (int i = 4; i < 8; i++)
        for (size_t e = 0; e < (i == 4 || i == 5 ? b->t.qo : b->t.kv); e++) b->t.x[i][e] = NAN;
    gpu_backward_emulated(&b->p, b->t.x[0], b->t.x[1], b->t.x[2], b->t.x[3], b->t.x[4],
                          b->t.x[5], b->t.x[6], b->t.x[7], counts);
    for (int g = 0; g < 3; g++)
        error[g] = max_abs_diff_fd(b->t.x[5 + g], b->exact[g], g ? b->t.kv : b->t.qo);
}

static void check_backward(size_t heads, size_t nq, size_t nk, size_t d, bool causal)
{
    bwd_problem b = bwd_problem_new(heads, nq, nk, d, causal, (uint32_t)(nq * 7 + d));
    double error[3];
    static const char *const names[3] = { "dQ", "dK", "dV" };
    run_backward_emulated(&b, error, NULL);
    for (int g = 0; g < 3; g++)
        cr_assert(error[g] <= b.bound[g] && error[g] <= 1e-5,
                  "heads=%zu nq=%zu nk=%zu d=%zu causal=%d: %s error %.3e, bound %.3e "
                  "(chapter 9 fp32: naive %.3e, flash %.3e)", heads, nq, nk, d, causal,
                  names[g], error[g], b.bound[g], b.naive[g], b.flash[g]);
    bwd_problem_free(&b);
}

Test(backward, ragged_tiles_two_key_blocks)
{
    for (int causal = 0; causal < 2; causal++) {
        check_backward(1, 37, 45, 16, causal);
        check_backward(2, 21, 70, 8, causal);
        check_backward(1, 70, 33, 4, causal);
    }
}

Test(backward, head_dimensions)
{
    static const size_t dims[] = { 1, 3, 64, 100, 128 };
    for (int i = 0; i < 5; i++)
        for (int causal = 0; causal < 2; causal++) check_backward(1, 9, 40, dims[i], causal);
}

static void bwd_counts_by_formula(size_t heads, size_t nq, size_t nk, size_t d, bool causal,
                                  emu_counts c[3])
{
    c[1] = (emu_counts){ .launches = 1, .threads = 128, .blocks = heads * ((nq + 3) / 4),
                         .warp_meetings = 5 * heads * nq };
    c[2] = (emu_counts){ .launches = 1, .threads = 128, .blocks = heads * ((nk + 31) / 32) };
    for (size_t k0 = 0; k0 < nk; k0 += 32) {
        const size_t first = causal ? k0 / 8 * 8 : 0;
        c[2].block_barriers += first < nq ? heads * 3 * ((nq - first + 7) / 8) : 0;
        c[2].atomics += first < nq ? heads * (nq - first) * d : 0;
    }
}

Test(backward, counts_match_the_formulas)
{
    for (int causal = 0; causal < 2; causal++) {
        bwd_problem b = bwd_problem_new(2, 50, 70, 4, causal, 3);
        emu_counts got[3], want[3];
        double error[3];
        run_backward_emulated(&b, error, got);
        bwd_counts_by_formula(2, 50, 70, 4, causal, want);
        const emu_counts fwd = fused_counts_by_formula(2, 50, 70, causal);
        cr_assert_eq(got[0].block_barriers, fwd.block_barriers, "causal=%d", causal);
        for (int i = 1; i < 3; i++) {
            cr_assert_eq(got[i].blocks, want[i].blocks, "launch %d causal=%d", i, causal);
            cr_assert_eq(got[i].block_barriers, want[i].block_barriers, "launch %d", i);
            cr_assert_eq(got[i].warp_meetings, want[i].warp_meetings, "launch %d", i);
            cr_assert_eq(got[i].atomics, want[i].atomics, "launch %d causal=%d", i, causal);
        }
        bwd_problem_free(&b);
    }
}

static __global__ void add_own_index(const void *args)
{
    float *sum = *(float *const *)args;
    for (int r = 0; r < 100; r++) atomicAdd(sum, (float)(threadIdx.x + 1));
}

Test(backward, emulated_atomic_add_loses_nothing)
{
    float sum = 0.0f, *where = &sum;
    emu_counts c = { 0 };
    emu_launch((emu_dim3){ 4, 1, 1 }, (emu_dim3){ 128, 1, 1 }, add_own_index, &where, &c);
    cr_assert_eq(sum, 100.0f * 4 * 128 * 129 / 2);
    cr_assert_eq(c.atomics, 100 * 4 * 128);
}

static void run_tc_backward_emulated(bwd_problem *b, double error[3],
                                     emu_counts counts[GPU_TC_BWD_LAUNCHES])
{
    for (int i = 4; i < 8; i++)
        for (size_t e = 0; e < (i == 4 || i == 5 ? b->t.qo : b->t.kv); e++) b->t.x[i][e] = NAN;
    gpu_backward_tc_emulated(&b->p, b->t.x[0], b->t.x[1], b->t.x[2], b->t.x[3], b->t.x[4],
                             b->t.x[5], b->t.x[6], b->t.x[7], counts);
    for (int g = 0; g < 3; g++)
        error[g] = max_abs_diff_fd(b->t.x[5 + g], b->exact[g], g ? b->t.kv : b->t.qo);
}

static void check_tc_backward(size_t heads, size_t nq, size_t nk, size_t d, bool causal)
{
    bwd_problem b = bwd_problem_new(heads, nq, nk, d, causal, (uint32_t)(nq * 5 + d));
    double error[3], plain[3];
    static const char *const names[3] = { "dQ", "dK", "dV" };
    run_tc_backward_emulated(&b, error, NULL);
    gpu_bf16_naive_backward_error(&b.p, b.t.x[0], b.t.x[1], b.t.x[2], b.t.x[3], b.exact, plain);
    for (int g = 0; g < 3; g++) {
        cr_log_info("heads=%zu nq=%zu nk=%zu d=%zu causal=%d: %s error %.3e, plain bf16 %.3e "
                    "(ratio %.2f), chapter 9 flash fp32 %.3e", heads, nq, nk, d, causal,
                    names[g], error[g], plain[g], error[g] / plain[g], b.flash[g]);
        cr_assert(error[g] <= 2 * plain[g], "heads=%zu nq=%zu nk=%zu d=%zu causal=%d: %s "
                  "error %.3e > 2 x %.3e", heads, nq, nk, d, causal, names[g], error[g], plain[g]);
    }
    bwd_problem_free(&b);
}

Test(tc_backward, ragged_tiles_two_blocks)
{
    for (int causal = 0; causal < 2; causal++) {
        check_tc_backward(2, 70, 80, 16, causal);
        check_tc_backward(1, 100, 67, 8, causal);
    }
}

Test(tc_backward, head_dimensions)
{
    static const size_t dims[] = { 40, 64, 96, 128 };
    for (int i = 0; i < 4; i++)
        for (int causal = 0; causal < 2; causal++) check_tc_backward(1, 9, 70, dims[i], causal);
}

Test(tc_backward, counts_match_the_formulas)
{
    for (int causal = 0; causal < 2; causal++) {
        bwd_problem b = bwd_problem_new(2, 70, 130, 8, causal, 3);
        emu_counts got[GPU_TC_BWD_LAUNCHES], want = { .blocks = 2 * 3 };
        double error[3];
        run_tc_backward_emulated(&b, error, got);
        for (size_t k0 = 0; k0 < 130; k0 += 64) {
            const size_t first = causal ? k0 : 0;
            want.block_barriers += first < 70 ? 2 * 3 * ((70 - first + 63) / 64) : 0;
            want.atomics += first < 70 ? 2 * (70 - first) * 8 : 0;
        }
        cr_assert_eq(got[4].blocks, want.blocks, "causal=%d", causal);
        cr_assert_eq(got[4].block_barriers, want.block_barriers, "causal=%d", causal);
        cr_assert_eq(got[4].atomics, want.atomics, "causal=%d", causal);
        bwd_problem_free(&b);
    }
}

Test(receipts, backward_of_the_default_run)
{
    char *json = default_run_json();
    emu_counts want[3];
    char expect[32];
    bwd_counts_by_formula(1, 100, 100, 16, false, want);
    cr_expect(json_fact_is(json, "bwd_blocks", fmt_int(expect, (long long)want[2].blocks)));
    cr_expect(json_fact_is(json, "bwd_block_barriers",
                           fmt_int(expect, (long long)want[2].block_barriers)));
    cr_expect(json_fact_is(json, "bwd_dsum_warp_meetings",
                           fmt_int(expect, (long long)want[1].warp_meetings)));
    cr_expect(json_fact_is(json, "bwd_atomics", fmt_int(expect, (long long)want[2].atomics)));
    char *ratio = json_fact(json, "bwd_worst_ratio");
    cr_assert_not_null(ratio);
    cr_expect(strtod(ratio, NULL) <= 1.0, "bwd_worst_ratio = %s", ratio);
    free(ratio);
    ratio = json_fact(json, "bwd_tc_ratio");
    cr_assert_not_null(ratio);
    cr_expect(strtod(ratio, NULL) <= 2.0, "bwd_tc_ratio = %s", ratio);
    free(ratio);
    free(json);
}

