/* ch04_tiled.h — the options, the record of a run and the functions the
   test calls. Tangled from chapters/ch04_tiled.nw. */
#ifndef CH04_TILED_H
#define CH04_TILED_H
#include <stdbool.h>
#include <stdint.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#define PROGRAM "ch04_tiled"
enum { CH04_MAX_BLOCK = 4096 };   /* the largest tile side an option accepts */
typedef struct {
    const char *q_path, *k_path, *v_path, *out_path, *save_dir, *data_dir, *rng;
    bool causal, reference, json;
    long window, block_q, block_k, seed, batch, heads, seq, seq_k, dim;
    double scale;                      /* 0: the default 1/sqrt(d) */
} ch04_options;

typedef struct {
    size_t block_q, block_k;
    bool masked;
    attn_stats stats;
    double max_error;          /* against the double-precision reference */
} ch04_run;
enum { CH04_SHAPES = 5, CH04_RUNS = 2 * CH04_SHAPES };

enum { CH04_WALK_BLOCK = 2 };
typedef struct {
    size_t key_block;
    float  m, l, alpha, acc0;   /* after this key block; alpha = e^(m_old - m) */
} ch04_walk_step;

size_t ch04_walk(const attn_params *p, const float *q, const float *k,
                 const float *v, ch04_walk_step *steps);
ch04_options ch04_defaults(void);
attn_params ch04_seeded_params(const ch04_options *o);
void ch04_draw_inputs(const attn_params *p, uint32_t seed, tensor qkv[3]);
void ch04_measure(const ch04_options *o, const attn_params *p, const tensor qkv[3],
                  ch04_run runs[CH04_RUNS]);

#endif
