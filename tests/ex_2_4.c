#include <math.h>
#include "cpu/online_softmax.h"
#include "ex_2_4.h"

float ex_stream_sum(const float *x, size_t n, size_t block, float *max_out)
{
    float m = -INFINITY, sum = 0.0f;
    for (size_t first = 0; first < n; first += block) {
        size_t count = n - first < block ? n - first : block;
        float m_new = fmaxf(m, block_max(x + first, count));
        if (m_new == -INFINITY)
            continue;                      /* nothing visible yet */
        sum = sum * expf(m - m_new) + sum_exp_below(x + first, count, m_new);
        m = m_new;
    }
    *max_out = m;
    return sum;
}
