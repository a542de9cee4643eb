/* gpu_cuda_absent.c — what gpu_cuda.cu provides, for builds without nvcc.
   Tangled from chapters/app_gpu_emulation.nw. */
#include <stdio.h>
#include "gpu/gpu_attention.h"

#define NO_CUDA "this build has no CUDA: nvcc was not found when it was built"
__attribute__((weak)) bool gpu_cuda_device(char text[256])
{
    snprintf(text, 256, "%s", NO_CUDA);
    return false;
}

__attribute__((weak)) int gpu_mma_cuda(const float *a, const float *b, const float *c,
                                       float *d, char why[256])
{
    (void)a; (void)b; (void)c; (void)d;
    snprintf(why, 256, "%s", NO_CUDA);
    return -1;
}

__attribute__((weak)) int gpu_attention_cuda(gpu_kernel kernel, const attn_params *p,
                                             const float *q, const float *k,
                                             const float *v, float *o, int repeats,
                                             double *ms, char why[256])
{
    (void)kernel; (void)p; (void)q; (void)k; (void)v; (void)o; (void)repeats; (void)ms;
    snprintf(why, 256, "%s", NO_CUDA);
    return -1;
}

__attribute__((weak)) int gpu_backward_cuda(const attn_params *p, const float *q,
                                            const float *k, const float *v,
                                            const float *dout, float *o, float *dq,
                                            float *dk, float *dv, int repeats, double *ms,
                                            char why[256])
{
    (void)p; (void)q; (void)k; (void)v; (void)dout; (void)o; (void)dq; (void)dk; (void)dv;
    (void)repeats; (void)ms;
    snprintf(why, 256, "%s", NO_CUDA);
    return -1;
}

__attribute__((weak)) int gpu_backward_tc_cuda(const attn_params *p, const float *q,
                                               const float *k, const float *v,
                                               const float *dout, float *o, float *dq,
                                               float *dk, float *dv, int repeats,
                                               double *ms, char why[256])
{
    return gpu_backward_cuda(p, q, k, v, dout, o, dq, dk, dv, repeats, ms, why);
}
__attribute__((weak)) int gpu_ldmatrix_cuda(const unsigned short m[256], unsigned out[256],
                                            char why[256])
{
    (void)m; (void)out;
    snprintf(why, 256, "%s", NO_CUDA);
    return -1;
}

