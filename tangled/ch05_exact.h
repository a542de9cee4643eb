/* ch05_exact.h — the experiments, options, problem and results of
   chapter 5, for the program and its test. Tangled from chapters/ch05_exact.nw. */
#ifndef CH05_EXACT_H
#define CH05_EXACT_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include "cpu/attention.h"

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

#endif
