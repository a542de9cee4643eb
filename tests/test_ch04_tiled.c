/* test_ch04_tiled.c — Criterion tests of the attention kernels.
   Tangled from chapters/ch04_tiled.nw. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include "../tangled/ch04_tiled.h"

typedef struct {
    attn_params p;
    float *q, *k, *v, *o;
    double *exact;
    size_t q_count;
} problem;

static problem problem_new(size_t batch, size_t heads, size_t nq, size_t nk, size_t d,
                           uint32_t seed)
{
    problem pr = { .p = attn_default(batch, heads, nq, nk, d) };
    const size_t kv_count = batch * heads * nk * d;
    pr.q_count = batch * heads * nq * d;
    pr.q = fa_alloc(pr.q_count * sizeof(float));
    pr.k = fa_alloc(kv_count * sizeof(float));
    pr.v = fa_alloc(kv_count * sizeof(float));
    pr.o = fa_alloc(pr.q_count * sizeof(float));
    pr.exact = fa_alloc(pr.q_count * sizeof(double));
    attn_draw_inputs(&pr.p, seed, pr.q, pr.k, pr.v);
    return pr;
}

static void problem_free(problem *pr)
{
    fa_free(pr->q); fa_free(pr->k); fa_free(pr->v); fa_free(pr->o); fa_free(pr->exact);
}

static void compute_reference(problem *pr)
{
    attention_reference(&pr->p, pr->q, pr->k, pr->v, pr->exact);
}

static double tiled_error(problem *pr, size_t block_q, size_t block_k)
{
    pr->p.block_q = block_q;
    pr->p.block_k = block_k;
    attention_tiled(&pr->p, pr->q, pr->k, pr->v, pr->o, NULL);
    return max_abs_diff_fd(pr->o, pr->exact, pr->q_count);
}

static const size_t test_dims[] = { 1, 3, 16, 64, 128 };
static const size_t test_blocks[] = { 1, 7, 16, 64, 128 };

static bool tile_pair_wanted(size_t n, size_t bq, size_t bk)
{
    if (n < 1000) return true;
    return bq == bk || (bq == 7 && bk == 128) || (bq == 128 && bk == 7);
}

static void check_one_problem(size_t n, size_t nk, size_t d, bool causal)
{
    problem pr = problem_new(1, 1, n, nk, d, (uint32_t)(n * 131 + nk * 7 + d));
    pr.p.causal = causal;
    compute_reference(&pr);
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 5; b++) {
            const size_t bq = test_blocks[a], bk = test_blocks[b];
            if (!tile_pair_wanted(n, bq, bk)) continue;
            const double err = tiled_error(&pr, bq, bk);
            cr_assert(err < 1e-5, "nq=%zu nk=%zu d=%zu tile %zux%zu causal=%d: "
                      "error %.3e", n, nk, d, bq, bk, causal, err);
        }
    problem_free(&pr);
}

static void check_length(size_t n, bool causal)
{
    const size_t key_lengths[3] = { n, n / 2 + 1, 2 * n + 3 };
    for (size_t l = 0; l < 3; l++) {
        if (l == 1 && key_lengths[1] == n) continue;  /* n = 1, 2: no new length */
        if (l == 2 && n >= 1000) continue;            /* longer keys: below 1000 */
        for (size_t i = 0; i < 5; i++)
            check_one_problem(n, key_lengths[l], test_dims[i], causal);
    }
}

#define LENGTH_TESTS(N) \
    Test(tiled_equals_reference, n##N) { check_length(N, false); } \
    Test(tiled_equals_reference, n##N##_causal) { check_length(N, true); }
LENGTH_TESTS(1) LENGTH_TESTS(2) LENGTH_TESTS(7) LENGTH_TESTS(63)
LENGTH_TESTS(64) LENGTH_TESTS(65) LENGTH_TESTS(129) LENGTH_TESTS(1000)

Test(tiled_equals_reference, batches_heads_and_windows)
{
    const long windows[] = { 0, 1, 5, 64 };
    for (size_t w = 0; w < 4; w++)
        for (int causal = 0; causal < 2; causal++) {
            problem pr = problem_new(2, 3, 65, 97, 16, 7);
            pr.p.causal = causal || windows[w] > 0;
            pr.p.window = windows[w];
            compute_reference(&pr);
            const double err = tiled_error(&pr, 7, 16);
            cr_assert(err < 1e-5, "window %ld causal %d: error %.3e", windows[w], causal,
                      err);
            problem_free(&pr);
        }
}

Test(naive, equals_reference)
{
    const size_t lengths[][2] = { { 1, 1 }, { 7, 4 }, { 65, 65 }, { 129, 261 } };
    const long windows[] = { 0, 0, 5 };
    for (size_t l = 0; l < 4; l++)
        for (size_t m = 0; m < 3; m++) {
            problem pr = problem_new(2, 2, lengths[l][0], lengths[l][1], 16, 3);
            pr.p.causal = m > 0;
            pr.p.window = windows[m];
            compute_reference(&pr);
            attention_naive(&pr.p, pr.q, pr.k, pr.v, pr.o);
            const double err = max_abs_diff_fd(pr.o, pr.exact, pr.q_count);
            cr_assert(err < 1e-5, "n=%zu nk=%zu mask %zu: error %.3e",
                      lengths[l][0], lengths[l][1], m, err);
            problem_free(&pr);
        }
}

static void check_inside_value_range(const problem *pr)
{
    const size_t nq = pr->p.nq, nk = pr->p.nk, d = pr->p.d;
    for (size_t i = 0; i < nq; i++)
        for (size_t c = 0; c < d; c++) {
            float lo = INFINITY, hi = -INFINITY;
            for (size_t j = 0; j < nk; j++) {
                lo = fminf(lo, pr->v[j * d + c]);
                hi = fmaxf(hi, pr->v[j * d + c]);
            }
            const float x = pr->o[i * d + c];
            cr_assert(isfinite(x) && x >= lo - 1e-6f && x <= hi + 1e-6f,
                      "row %zu col %zu: %g outside [%g, %g]", i, c, x, lo, hi);
        }
}

Test(huge_logits, stay_finite)
{
    for (int causal = 0; causal < 2; causal++) {
        problem pr = problem_new(1, 1, 129, 200, 64, 11);
        for (size_t i = 0; i < pr.q_count; i++) pr.q[i] *= 1000.0f;
        pr.p.causal = causal;
        pr.p.block_q = pr.p.block_k = 16;
        attention_tiled(&pr.p, pr.q, pr.k, pr.v, pr.o, NULL);
        check_inside_value_range(&pr);
        attention_naive(&pr.p, pr.q, pr.k, pr.v, pr.o);
        check_inside_value_range(&pr);
        problem_free(&pr);
    }
}

Test(masked_rows, give_zeros_not_nan)
{
    problem pr = problem_new(1, 2, 10, 3, 8, 5);
    pr.p.window = 2;
    pr.p.block_q = 4;
    pr.p.block_k = 2;
    compute_reference(&pr);
    for (int kernel = 0; kernel < 2; kernel++) {
        if (kernel == 0) attention_tiled(&pr.p, pr.q, pr.k, pr.v, pr.o, NULL);
        else attention_naive(&pr.p, pr.q, pr.k, pr.v, pr.o);
        for (size_t h = 0; h < 2; h++)
            for (size_t i = 0; i < 10; i++)
                for (size_t c = 0; c < 8; c++) {
                    const size_t at = (h * 10 + i) * 8 + c;
                    if (i >= 4) cr_assert(pr.o[at] == 0.0f && pr.exact[at] == 0.0,
                                          "kernel %d row %zu: %g", kernel, i, pr.o[at]);
                    else cr_assert(fabs(pr.o[at] - pr.exact[at]) < 1e-6,
                                   "kernel %d row %zu: %g vs %g", kernel, i, pr.o[at],
                                   pr.exact[at]);
                }
    }
    problem_free(&pr);
}

Test(bad_data, a_nan_or_infinite_query_makes_its_row_nan)
{
    const float bad[3] = { NAN, INFINITY, -INFINITY }, second_key[2] = { 0, 2 };
    for (int b = 0; b < 3; b++)
        for (int variant = 0; variant < 2; variant++) {
            const float q[4] = { bad[b], 0, 1, 0 }, v[4] = { 5, 5, 7, 7 };
            const float k[4] = { 1, 0, second_key[variant], 1 - (float)variant };
            float o[4];
            double exact[4];
            attn_params p = attn_default(1, 1, 2, 2, 2);
            p.block_q = p.block_k = 1;
            attention_tiled(&p, q, k, v, o, NULL);
            attention_reference(&p, q, k, v, exact);
            for (int c = 0; c < 2; c++) {
                cr_assert(isnan(o[c]) && isnan(exact[c]), "q0 = %g, variant %d: row 0 is %g, %g",
                          bad[b], variant, o[c], exact[c]);
                cr_assert(isfinite(o[2 + c]) && fabs(o[2 + c] - exact[2 + c]) < 1e-6);
            }
            attention_naive(&p, q, k, v, o);
            cr_assert(b != 0 || (isnan(o[0]) && isnan(o[1])), "naive: row 0 is %g", o[0]);
        }
}

Test(bad_data, a_nan_key_or_value_reaches_the_rows_that_see_it)
{
    for (size_t block = 1; block <= 8; block *= 2)
        for (int causal = 0; causal < 2; causal++)
            for (int tensor_kind = 0; tensor_kind < 2; tensor_kind++) {
                problem pr = problem_new(1, 1, 8, 8, 3, 17);
                pr.p.causal = causal;
                pr.p.block_q = pr.p.block_k = block;
                for (size_t c = 0; c < 3; c++) (tensor_kind == 0 ? pr.k : pr.v)[5 * 3 + c] = NAN;
                compute_reference(&pr);
                attention_tiled(&pr.p, pr.q, pr.k, pr.v, pr.o, NULL);
                for (size_t i = 0; i < 8; i++)
                    for (size_t c = 0; c < 3; c++) {
                        const float x = pr.o[i * 3 + c];
                        if (causal && i < 5)
                            cr_assert(isfinite(x) && fabs(x - pr.exact[i * 3 + c]) < 1e-6,
                                      "block %zu row %zu: %g", block, i, x);
                        else
                            cr_assert(isnan(x) && isnan(pr.exact[i * 3 + c]),
                                      "block %zu causal %d row %zu: %g", block, causal, i, x);
                    }
                problem_free(&pr);
            }
}

static attn_tile_kind brute_force_kind(const attn_params *p, size_t q0, size_t rows,
                                       size_t k0, size_t cols)
{
    size_t visible = 0;
    for (size_t i = q0; i < q0 + rows; i++)
        for (size_t j = k0; j < k0 + cols; j++) visible += attn_visible(p, i, j);
    if (visible == 0) return ATTN_TILE_SKIPPED;
    return visible == rows * cols ? ATTN_TILE_FULL : ATTN_TILE_MASKED;
}

Test(tiles, classification_matches_brute_force)
{
    const long windows[] = { 0, 1, 3, 8, 40 };
    for (size_t nq = 1; nq <= 23; nq += 11)
        for (size_t nk = 1; nk <= 37; nk += 9)
            for (size_t w = 0; w < 5; w++)
                for (size_t bq = 1; bq <= 9; bq += 4)
                    for (size_t bk = 1; bk <= 9; bk += 2) {
                        attn_params p = attn_default(1, 1, nq, nk, 4);
                        p.causal = true;
                        p.window = windows[w];
                        for (size_t q0 = 0; q0 < nq; q0 += bq)
                            for (size_t k0 = 0; k0 < nk; k0 += bk) {
                                const size_t rows = nq - q0 < bq ? nq - q0 : bq;
                                const size_t cols = nk - k0 < bk ? nk - k0 : bk;
                                cr_assert_eq(attn_tile_classify(&p, q0, rows, k0, cols),
                                             brute_force_kind(&p, q0, rows, k0, cols),
                                             "nq=%zu nk=%zu w=%ld tile at (%zu,%zu) %zux%zu",
                                             nq, nk, p.window, q0, k0, rows, cols);
                            }
                    }
}

static attn_stats stats_for(bool causal, long window)
{
    problem pr = problem_new(1, 1, 256, 256, 8, 1);
    attn_stats st;
    pr.p.causal = causal;
    pr.p.window = window;
    attention_tiled(&pr.p, pr.q, pr.k, pr.v, pr.o, &st);
    problem_free(&pr);
    return st;
}

Test(tiles, counts_on_a_four_by_four_grid)
{
    const attn_stats none = stats_for(false, 0), causal = stats_for(true, 0),
                     window = stats_for(true, 64);
    cr_assert(none.tiles_total == 16 && none.tiles_computed == 16 &&
              none.tiles_skipped == 0 && none.tiles_masked == 0);
    cr_assert(causal.tiles_total == 16 && causal.tiles_computed == 10 &&
              causal.tiles_skipped == 6 && causal.tiles_masked == 4);
    cr_assert(window.tiles_computed == 7 && window.tiles_skipped == 9 &&
              window.tiles_masked == 7);
    cr_assert_eq(none.peak_tile_bytes, (64 * 64 + 2 * 64) * sizeof(float));
}

Test(receipts, default_run)
{
    const ch04_options o = ch04_defaults();
    const attn_params p = ch04_seeded_params(&o);
    tensor qkv[3];
    ch04_run runs[CH04_RUNS];
    ch04_draw_inputs(&p, (uint32_t)o.seed, qkv);
    ch04_measure(&o, &p, qkv, runs);
    cr_assert_eq(runs[0].stats.tiles_total, 1024);
    cr_assert_eq(runs[0].stats.tiles_computed, 1024);
    cr_assert_eq(runs[0].stats.peak_tile_bytes, 16896);
    cr_assert_eq(runs[CH04_SHAPES].stats.tiles_computed, 544);
    cr_assert_eq(runs[CH04_SHAPES].stats.tiles_skipped, 480);
    cr_assert_eq(runs[CH04_SHAPES].stats.tiles_masked, 64);
    cr_assert_eq(runs[1].stats.tiles_total, 63 * 63 * 4);   /* 16 x 16 tiles: 63 per side */
    for (int i = 0; i < CH04_RUNS; i++)
        cr_assert(runs[i].max_error < 1e-5, "run %d: error %.3e", i, runs[i].max_error);
    for (int t = 0; t < 3; t++) tensor_free(&qkv[t]);
}
Test(walk, ends_at_the_kernels_output_row)
{
    const ch04_options o = ch04_defaults();
    attn_params p = ch04_seeded_params(&o);
    tensor qkv[3];
    ch04_draw_inputs(&p, (uint32_t)o.seed, qkv);
    const size_t blocks_k = (p.nk + p.block_k - 1) / p.block_k;
    ch04_walk_step *steps = fa_alloc(blocks_k * sizeof *steps);
    const size_t row = ch04_walk(&p, qkv[0].data, qkv[1].data, qkv[2].data, steps);
    cr_assert_eq(row, CH04_WALK_BLOCK * p.block_q);
    for (size_t b = 1; b < blocks_k; b++)
        cr_expect(steps[b].m >= steps[b - 1].m, "the max fell at key block %zu", b);
    p.batch = p.heads = 1;
    float *o_tiled = fa_alloc(p.nq * p.d * sizeof(float));
    attention_tiled(&p, qkv[0].data, qkv[1].data, qkv[2].data, o_tiled, NULL);
    const ch04_walk_step *last = &steps[blocks_k - 1];
    float acc0 = last->acc0, l = last->l;
    cr_expect_eq(acc0 / l, o_tiled[row * p.d], "walk %.9g, kernel %.9g", acc0 / l,
                 o_tiled[row * p.d]);
    fa_free(o_tiled);
    fa_free(steps);
    for (int t = 0; t < 3; t++) tensor_free(&qkv[t]);
}
