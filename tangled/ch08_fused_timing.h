/* ch08_fused_timing.h — the functions of the program that its test calls, and
   the types they need. Tangled from chapters/app_timing.nw. */
#ifndef CH08_FUSED_TIMING_H
#define CH08_FUSED_TIMING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/harness.h"
#include "cpu/fused.h"
#include "cpu/decode.h"
attn_counts counted_fused(size_t n, bool causal, size_t block);
attn_counts counted_naive(size_t n);
typedef struct { double u0, v0, u1, v1; } plot_box;
typedef struct { double u, v; bool left_of_point, moved; } label_place;
plot_box label_box(label_place l, int chars);
void place_labels(const double u[], const double v[], const int chars[], int count,
                  label_place out[]);
const char *roof_place(char *buf, size_t size, double i, double one, double all);
typedef struct {
    decode_params p;
    float *q, *o;
    float *k32, *v32;     /* K and V as drawn */
    bf16  *k16, *v16;     /* rounded to bf16, or NULL */
    float *kr, *vr;       /* the bf16 numbers as floats, or NULL */
} decode_problem;
size_t decode_problem_bytes(const decode_params *p, bool bf16_too);
decode_problem decode_problem_new(const decode_params *p, uint32_t seed, bool bf16_too);
double decode_intensity(const decode_params *p, int element_bytes);   /* FLOP a byte */
double decode_arithmetic_share(const decode_params *p, int element_bytes, double gbs,
                               double peak_gflops);   /* multiply-adds' time over the read's */
void   decode_problem_free(decode_problem *t);
void   decode_run(decode_problem *t, decode_cache cache, const decode_config *cfg);
void   decode_reference(const decode_params *p, const float *q, const float *k,
                        const float *v, double *out);
double decode_bf16_bound(const decode_problem *t);
#endif
