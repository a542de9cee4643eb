/* test_ch05_exact.c — Criterion tests of chapter 5's receipts.
   Tangled from chapters/ch05_exact.nw. */
#include <criterion/criterion.h>
#include <string.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include "harness.h"
#include "online_softmax.h"
#include "attention.h"

enum { CH05_TILES = 3, CH05_WINDOWS = 2 };
static const size_t ch05_tiles[CH05_TILES][2] = {
    { 64, 64 }, { 128, 128 }, { 256, 512 } };
static const long ch05_windows[CH05_WINDOWS] = { 256, 64 };

#define PROGRAM "ch05_exact"
typedef struct {
    long seed, batch, heads, seq, dim;
    bool json;
    const char *data_dir, *rng;
} ch05_options;

static const ch05_options ch05_default_options = {
    .seed = 0, .batch = 2, .heads = 4, .seq = 1024, .dim = 64, .rng = "scalar" };

typedef struct {
    attn_params p;          /* sizes and the default scale; no mask, 64 x 64 tiles */
    tensor qkv[3];
    double *exact;          /* reference output, no mask */
    double *exact_causal;   /* reference output, causal */
    float *out;             /* scratch output of the run under test */
    size_t count;           /* elements of one output */
} ch05_problem;

typedef struct {
    double tiled_error[CH05_TILES][2];         /* [tile shape][causal] */
    size_t tiles_visited[CH05_TILES][2];
    double naive_error;                        /* three-step kernel, no mask */
    double window_diff[CH05_WINDOWS];          /* against exact causal attention */
    size_t window_tiles[CH05_WINDOWS];         /* tiles visited, 64 x 64 */
    double unrescaled_error;                   /* 64 x 64, no mask */
    double mean_abs_output;                    /* mean |o| of exact causal attention */
} ch05_results;

ch05_problem ch05_problem_new(const ch05_options *o);
void ch05_problem_free(ch05_problem *pr);
double ch05_tiled_error(ch05_problem *pr, const attn_params *p, attn_update_fn *update,
                        attn_stats *stats);
void ch05_measure(ch05_problem *pr, ch05_results *r);
void ch05_update_unrescaled(size_t rows, size_t cols, size_t d, float *scores,
                            const float *v, float *m, float *l, float *acc);

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
