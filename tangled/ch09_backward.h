/* ch09_backward.h — options, types and the functions the tests call.
   Tangled from chapters/ch09_backward.nw. */
#ifndef CH09_BACKWARD_H
#define CH09_BACKWARD_H
#include <stdbool.h>
#include <stdint.h>
#include "harness/harness.h"
#include "cpu/backward.h"
#define PROGRAM "ch09_backward"
enum { CH09_MAX_BLOCK = 4096 };
typedef struct {
    const char *q_path, *k_path, *v_path, *dout_path;
    const char *out_path, *dq_path, *dk_path, *dv_path;
    const char *save_dir, *data_dir, *python, *machine, *recorded;
    bool causal, reference, json, bench, quick;
    long window, block_q, block_k, seed, batch, heads, seq, seq_k, dim, threads, max_n;
    long time_seq;                     /* n of the timing problem */
    double scale;                      /* 0: the default 1/sqrt(d) */
} ch09_options;
typedef struct { tensor q, k, v, dout; } ch09_inputs;
typedef struct { tensor o, lse, dq, dk, dv; } ch09_outputs;
typedef struct {
    const char *label;
    size_t batch, heads, nq, nk, d, block_q, block_k;
    bool causal;
    long window;
} ch09_case;
typedef struct { double flash_fd, naive_fd, flash_naive; } ch09_case_errors;
typedef struct {
    bool causal;
    double diff;                          /* flash vs naive, all three gradients */
    double largest;                       /* the largest |gradient| of the flash pass */
    bwd_counts fwd, flash, naive;         /* the forward is the flash pass's */
} ch09_big_run;
typedef struct {
    const attn_params *p;
    const ch09_inputs *in;
    ch09_outputs *out;
    const float *probs;       /* the naive pass's P; NULL for the flash pass */
    int threads;
} ch09_timed;
typedef struct { double median, min, max; size_t peak_bytes; } ch09_timing;
enum { CH09_TIME_N = 1024, CH09_TIME_HEADS = 4, CH09_TIME_D = 64, CH09_REPEATS = 5 };
int chapter_main(int argc, char **argv);
void ch09_draw(const attn_params *p, uint32_t seed, ch09_inputs *in);
ch09_outputs ch09_outputs_new(const ch09_inputs *in);
void ch09_free(ch09_inputs *in, ch09_outputs *out);
void ch09_flash(const attn_params *p, const ch09_inputs *in, ch09_outputs *out,
                int threads, bwd_counts *fwd, bwd_counts *bwd);
void ch09_naive(const attn_params *p, const ch09_inputs *in, ch09_outputs *out,
                int threads, bwd_counts *fwd, bwd_counts *bwd);
double ch09_error_vs_fd(const ch09_outputs *out, double *const fd[3]);
double ch09_error_between(const ch09_outputs *a, const ch09_outputs *b);
ch09_case_errors ch09_check_case(const ch09_case *c, uint32_t seed, int threads);
double ch09_kept_p(size_t heads, size_t n);
double ch09_kept_l(size_t heads, size_t n);
double ch09_tensors(size_t heads, size_t n, size_t d);
extern const ch09_case CH09_CASES[];
extern const size_t CH09_CASE_COUNT;
#endif
