/* softmax.c: partial softmaxes and the merge that composes them
   (tangled from chapters/ch03_compose.nw; do not edit) */
#include <assert.h>
#include <math.h>
#include "cpu/softmax.h"

softmax_partial softmax_partial_of(const float *x, size_t count)
{
    float m = block_max(x, count);
    if (m == -INFINITY) return online_start();
    return (softmax_partial){ m, sum_exp_below(x, count, m) };
}

softmax_partial softmax_merge(softmax_partial a, softmax_partial b)
{
    softmax_partial hi = a.max >= b.max ? a : b;
    softmax_partial lo = a.max >= b.max ? b : a;
    if (hi.max == -INFINITY) return online_start();
    float rescale = expf(lo.max - hi.max);          /* e^{m_lo - m}, at most 1 */
    return (softmax_partial){ hi.max, hi.sum + lo.sum * rescale };
}

softmax_partial softmax_stream(const float *x, size_t count, size_t block)
{
    assert(block >= 1);
    softmax_partial s = online_start();
    for (size_t start = 0; start < count; start += block) {
        size_t len = count - start < block ? count - start : block;
        s = softmax_merge(s, softmax_partial_of(x + start, len));
    }
    return s;
}

void softmax_normalize(const float *x, size_t count, softmax_partial s, float *p)
{
    for (size_t i = 0; i < count; i++)
        p[i] = s.sum > 0.0f ? expf(x[i] - s.max) / s.sum : 0.0f;
}

void softmax_online(const float *x, size_t count, size_t block, float *p)
{
    softmax_normalize(x, count, softmax_stream(x, count, block), p);
}

void softmax_two_pass(const float *x, size_t count, float *p)
{
    softmax_normalize(x, count, softmax_partial_of(x, count), p);
}

void softmax_reference(const float *x, size_t count, double *p)
{
    double m = -INFINITY, l = 0.0;
    for (size_t i = 0; i < count; i++)
        if (x[i] > m) m = x[i];
    for (size_t i = 0; i < count; i++)
        l += m == -INFINITY ? 0.0 : exp(x[i] - m);
    for (size_t i = 0; i < count; i++)
        p[i] = l > 0.0 ? exp(x[i] - m) / l : 0.0;
}
