/* attention.h — attention kernels: naive three-step, tiled online softmax,
   double-precision reference. Tangled from chapters/ch04_tiled.nw. */
#ifndef ATTENTION_H
#define ATTENTION_H
#include "harness/harness.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/harness.h"

typedef struct {
    size_t batch, heads, nq, nk, d;
    float  scale;          /* usually 1/sqrt(d) */
    bool   causal;         /* top-left aligned: query i sees keys 0..i */
    long   window;         /* sliding window: query i sees keys j with i-window < j <= i
                              (implies causal); <= 0 means no window */
    size_t block_q, block_k;  /* tile sizes for the tiled kernel (>= 1) */
    rng_path rng;          /* PyTorch's kernel that attn_draw_inputs follows */
} attn_params;

typedef struct {
    size_t tiles_total;     /* (query blocks) x (key blocks) x batch x heads */
    size_t tiles_computed;  /* tiles whose scores were computed */
    size_t tiles_skipped;   /* tiles skipped because every entry is masked */
    size_t tiles_masked;    /* computed tiles that needed an element mask (diagonal) */
    size_t peak_tile_bytes; /* bytes of the largest score tile and its statistics */
} attn_stats;

attn_params attn_default(size_t batch, size_t heads, size_t nq, size_t nk, size_t d);
/* naive three-step: S = scale*QK^T (materialized, fa_alloc), P = softmax(S), O = PV */
void attention_naive(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o);
/* tiled online-softmax attention (Flash Attention's loop), stats may be NULL */
void attention_tiled(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o, attn_stats *stats);
/* double-precision two-pass reference, O in double */
void attention_reference(const attn_params *p, const float *q, const float *k,
                         const float *v, double *o);
/* max |a - b| over count elements; NaN if any a is NaN */
double max_abs_diff_fd(const float *a, const double *b, size_t count);
/* every row of o holding a NaN or an infinity, computed again as the
   reference does, in double over the visible keys, and rounded; returns
   how many rows */
size_t attention_repair(const attn_params *p, const float *q, const float *k,
                        const float *v, float *o);

/* NULL when the parameters are usable, else what is wrong with them */
const char *attn_params_problem(const attn_params *p);
/* may query i see key j? */
bool attn_visible(const attn_params *p, size_t i, size_t j);
/* does query i see any key at all? */
bool attn_row_sees_a_key(const attn_params *p, size_t i);

typedef enum { ATTN_TILE_SKIPPED, ATTN_TILE_FULL, ATTN_TILE_MASKED } attn_tile_kind;
/* the tile of query rows q0..q0+rows-1 and key rows k0..k0+cols-1 */
attn_tile_kind attn_tile_classify(const attn_params *p, size_t q0, size_t rows,
                                  size_t k0, size_t cols);

/* fold one tile of scores (rows x cols, overwritten) and its value rows (cols x d)
   into the running max m, running sum l and accumulator acc (rows x d) */
typedef void attn_update_fn(size_t rows, size_t cols, size_t d, float *scores,
                            const float *v, float *m, float *l, float *acc);
void attn_online_update(size_t rows, size_t cols, size_t d, float *scores,
                        const float *v, float *m, float *l, float *acc);
void attention_tiled_with(const attn_params *p, const float *q, const float *k,
                          const float *v, float *o, attn_stats *stats,
                          attn_update_fn *update);

float attn_exp_row(float *x, size_t n, float m);  /* x_j = e^(x_j - m); returns sum */
void  attn_scale_row(float *x, size_t n, float factor);
void  attn_add_weighted_rows(float *acc, const float *weights, const float *v,
                             size_t cols, size_t d);  /* acc += sum_j weights_j v_j */

/* Q, K, V as torch.manual_seed(seed) and three torch.randn calls draw them:
   q gets batch*heads*nq*d floats, k and v batch*heads*nk*d each */
void attn_draw_inputs(const attn_params *p, uint32_t seed, float *q, float *k,
                      float *v);

/* shapes as Python prints tuples: "(2, 3)" */
const char *shape_text(const tensor *t, char buf[96]);
/* the problem that .npy tensors Q, K, V describe; exits 2 with one line
   naming PROGRAM when their shapes disagree */
attn_params attn_params_from_tensors(const char *program, const tensor *q,
                                     const tensor *k, const tensor *v);
/* the same from the .npy headers of the files PATHS (Q, K, V), before
   their data is read */
attn_params attn_params_from_headers(const char *program, const char *const paths[3]);
/* the options --causal, --window, --block-q, --block-k and --scale applied
   to P (a window implies causal; scale 0 keeps 1/sqrt(d)) */
void attn_apply_options(attn_params *p, bool causal, long window, long block_q,
                        long block_k, double scale);
#endif
