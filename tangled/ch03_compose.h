/* ch03_compose.h — what chapter 3's program measures, for the program and
   its tests (tangled from chapters/ch03_compose.nw; do not edit) */
#ifndef CH03_COMPOSE_H
#define CH03_COMPOSE_H
#include <stddef.h>
#include "harness/harness.h"
#include "cpu/softmax.h"
#define PROB_ULP 0x1p-24   /* spacing of floats in [0.5, 1) */

double max_error(const float *p, const double *ref, size_t count);

typedef struct {
    double error;     /* max |p - reference| over all rows */
    double far_sum;   /* the row sum farthest from 1 */
} online_check;

online_check check_online(const tensor *x, size_t block);

#define ONLINE_EXCESS_ULPS 8.0   /* online error may exceed two-pass error by this */
#define ROW_SUM_TOLERANCE 1e-5   /* |row sum - 1| */

typedef enum { ORDER_DRAWN, ORDER_ASCENDING, ORDER_DESCENDING } logit_order;
static const size_t grid_lengths[] = { 1, 2, 7, 63, 100, 2048, 5000 };
static const size_t grid_blocks[] = { 1, 3, 7, 64, 100, 128, 512, 2047, 2048, 5000 };
enum { GRID_SEEDS = 3 };

typedef struct {
    double online_ulps, two_pass_ulps;   /* errors against the reference */
    double far_sum;                      /* the online row's sum */
} grid_case;

grid_case run_grid_case(size_t n, size_t block, unsigned seed, logit_order order);

size_t split_into_partials(const float *x, size_t n, size_t block,
                           softmax_partial *parts);
softmax_partial merge_left(const softmax_partial *parts, size_t k);
softmax_partial merge_right(const softmax_partial *parts, size_t k);
softmax_partial merge_tree(const softmax_partial *parts, size_t k);
softmax_partial merge_random(softmax_partial *parts, size_t k, mt19937 *g);

float exp_f32_last_finite(void);   /* largest float x with expf(x) finite */
float exp_f16_last_finite(void);   /* largest half h with exp_f16(h) finite */
float f16_next_up(float h);        /* the half after h, for a positive half h */
_Float16 exp_f16(_Float16 h);      /* e^h rounded to the nearest half */

typedef enum { NAIVE_F32, NAIVE_F16, SHIFTED_F16, ONLINE_F32 } softmax_variant;

float naive_softmax_f32(const float *x, size_t n, float *e, float *p);
float naive_softmax_f16(const float *x, size_t n, float *e, float *p);
float shifted_softmax_f16(const float *x, size_t n, float *e, float *p);
float online_softmax_f32(const float *x, size_t n, size_t block, float *e, float *p);

typedef struct {
    float  top;          /* largest argument passed to exp */
    long   infinities;   /* among numerators and probabilities */
    long   nans;         /* among numerators and probabilities */
    long   zeros;        /* probabilities exactly 0 */
    double error;        /* max |p - reference|; NaN when a probability is NaN */
} softmax_tally;

softmax_tally tally_variant(const tensor *x, softmax_variant v, size_t block);

tensor make_logits_on(rng_path path, unsigned long seed, size_t rows, size_t cols,
                      double scale);
tensor make_logits(unsigned long seed, size_t rows, size_t cols, double scale);

typedef struct {
    float  max, min;    /* largest and smallest logit */
    double largest_p;   /* largest probability, from the reference */
} row_summary;

row_summary summarize_row(const float *x, size_t n);

typedef struct {
    double zero_largest;   /* largest reference probability where fp16 gave 0 */
    double outside_nan;    /* largest share of a row's probability not on a NaN */
} f16_damage;

f16_damage measure_f16_damage(const tensor *x);
size_t f16_sum_overflow_at(const float *x, size_t n);   /* n if it never does */
size_t f16_first_inf_at(const float *x, size_t n);      /* n if none */
long   f16_overflows(const float *x, size_t n);         /* numerators that overflow */
#endif
