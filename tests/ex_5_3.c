#include <math.h>
#include "ex_5_3.h"

void ex_online_update(size_t rows, size_t cols, size_t d, float *scores,
                      const float *v, float *m, float *l, float *acc)
{
    for (size_t r = 0; r < rows; r++) {
        float *s = scores + r * cols, *a = acc + r * d;
        float m_new = m[r];
        for (size_t j = 0; j < cols; j++)
            m_new = fmaxf(m_new, s[j]);
        if (m_new == -INFINITY)
            continue;
        const float alpha = expf(m[r] - m_new);
        l[r] *= alpha;
        for (size_t c = 0; c < d; c++)
            a[c] *= alpha;
        for (size_t j = 0; j < cols; j++) {
            const float w = expf(s[j] - m_new);
            l[r] += w;
            for (size_t c = 0; c < d; c++)
                a[c] += w * v[j * d + c];
        }
        m[r] = m_new;
    }
}
