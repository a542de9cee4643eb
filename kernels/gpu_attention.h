/* gpu_attention.h — chapter 10's attention kernels, on a CUDA device or on the
   CPU through an emulation of CUDA's execution model.
   Tangled from chapters/ch10_gpu.nw. */
#ifndef GPU_ATTENTION_H
#define GPU_ATTENTION_H
#ifdef __cplusplus
extern "C" {
#endif
#include <stdbool.h>
#include "attention.h"
#include "gpu_emu.h"
typedef enum { GPU_NAIVE, GPU_FUSED } gpu_kernel;
enum { GPU_MAX_DIM = 128 };     /* the largest head dimension the kernels take */
/* NULL when the GPU kernels can run this problem, else why not */
const char *gpu_params_problem(const attn_params *p);

/* runs the kernel on the CPU, in the emulation of CUDA's execution model */
void gpu_attention_emulated(gpu_kernel kernel, const attn_params *p, const float *q,
                            const float *k, const float *v, float *o,
                            emu_counts *counts);

/* true and the device ("NVIDIA H200, sm_90, ..."), or false and why not */
bool gpu_cuda_device(char text[256]);
/* 0, or -1 with the reason in why; ms (may be NULL): median of repeats timed runs */
int gpu_attention_cuda(gpu_kernel kernel, const attn_params *p, const float *q,
                       const float *k, const float *v, float *o, int repeats,
                       double *ms, char why[256]);

/* what the fused kernel's error may be: twice the larger of naive_error (the
   naive kernel's) and chapter 4's tiled kernel's in 16 x 32 tiles, and at least
   one ulp of the largest exact output */
double gpu_fused_error_bound(const attn_params *p, const float *q, const float *k,
                             const float *v, const double *exact, double naive_error);

#ifdef __cplusplus
}
#endif
#endif
