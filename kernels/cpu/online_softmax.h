#ifndef ONLINE_SOFTMAX_H
#define ONLINE_SOFTMAX_H
#include <stddef.h>

typedef struct {
    float max;   /* m: the largest logit seen so far   */
    float sum;   /* l: the sum of e^(x - m) so far      */
} online_stats;

online_stats online_start(void);
float block_max(const float *x, size_t count);      /* NaN if any x is NaN */
float max_keeping_nan(float a, float b);             /* NaN if either is */
float sum_exp_below(const float *x, size_t count, float m);
/* absorbs a block into s; returns the correction applied to the old sum */
float online_absorb(online_stats *s, const float *x, size_t count);
#endif
