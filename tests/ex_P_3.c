#include <math.h>
#include "ex_P_3.h"
#ifndef __CUDACC__
#pragma GCC poison gpu_attention_emulated gpu_backward_emulated
#endif

__global__ void proj_decode_split(proj_decode_args a)
{
    __shared__ float s[PROJ_THREADS];
    const unsigned t = threadIdx.x, k0 = blockIdx.x * a.chunk;
    const unsigned k1 = a.n - k0 < a.chunk ? a.n : k0 + a.chunk;
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (unsigned j0 = k0; j0 < k1; j0 += PROJ_THREADS) {
        const unsigned cols = k1 - j0 < PROJ_THREADS ? k1 - j0 : PROJ_THREADS;
        __syncthreads();   /* every thread is done with the previous tile */
        if (t < cols) {
            float dot = 0.0f;
            for (unsigned x = 0; x < a.d; x++) dot += a.q[x] * a.k[(size_t)(j0 + t) * a.d + x];
            s[t] = a.scale * dot;
        }
        __syncthreads();
        float tile_max = -INFINITY;
        for (unsigned c = 0; c < cols; c++) tile_max = fmaxf(tile_max, s[c]);
        const float m_new = fmaxf(m, tile_max), alpha = expf(m - m_new);
        l *= alpha;
        acc *= alpha;
        for (unsigned c = 0; c < cols; c++) {
            const float p = expf(s[c] - m_new);
            l += p;
            if (t < a.d) acc += p * a.v[(size_t)(j0 + c) * a.d + t];
        }
        m = m_new;
    }
    if (t == 0) { a.part_m[blockIdx.x] = m; a.part_l[blockIdx.x] = l; }
    if (t < a.d) a.part_o[(size_t)blockIdx.x * a.d + t] = acc;
}

__global__ void proj_decode_combine(proj_decode_args a)
{
    const unsigned t = threadIdx.x, splits = (a.n + a.chunk - 1) / a.chunk;
    if (t >= a.d) return;
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (unsigned b = 0; b < splits; b++) m = fmaxf(m, a.part_m[b]);
    for (unsigned b = 0; b < splits; b++) {
        const float w = expf(a.part_m[b] - m);
        l += w * a.part_l[b];
        acc += w * a.part_o[(size_t)b * a.d + t];
    }
    a.o[t] = acc / l;
}
