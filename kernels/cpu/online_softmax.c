#include <math.h>
#include "cpu/online_softmax.h"

online_stats online_start(void)
{
    return (online_stats){ .max = -INFINITY, .sum = 0.0f };
}
float max_keeping_nan(float a, float b)
{
    return isnan(a) || isnan(b) ? NAN : fmaxf(a, b);
}

float block_max(const float *x, size_t count)
{
    float m = -INFINITY;
    for (size_t i = 0; i < count; i++)
        m = max_keeping_nan(m, x[i]);
    return m;
}

float sum_exp_below(const float *x, size_t count, float m)
{
    float s = 0.0f;
    for (size_t i = 0; i < count; i++)
        s += expf(x[i] - m);
    return s;
}
float online_absorb(online_stats *s, const float *x, size_t count)
{
    float new_max = max_keeping_nan(s->max, block_max(x, count));
    if (new_max == -INFINITY)
        return 1.0f;
    float correction = expf(s->max - new_max);
    s->sum = s->sum * correction + sum_exp_below(x, count, new_max);
    s->max = new_max;
    return correction;
}
