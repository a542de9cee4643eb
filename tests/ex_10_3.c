#include "gpu/gpu_emu_cuda.h"
#include "ex_10_3.h"

__global__ void ex_block_sum_kernel(const void *args)
{
    const ex_block_sum_args *a = args;
    __shared__ float s[128];
    const unsigned t = threadIdx.x;
    s[t] = a->in[blockIdx.x * 128 + t];
    __syncthreads();
    for (unsigned stride = 64; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) a->out[blockIdx.x] = s[0];
}
