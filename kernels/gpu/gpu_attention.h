/* gpu_attention.h — chapter 10's attention kernels, on a CUDA device or on the
   CPU through an emulation of CUDA's execution model.
   Tangled from chapters/ch10_gpu.nw. */
#ifndef GPU_ATTENTION_H
#define GPU_ATTENTION_H
#ifdef __cplusplus
extern "C" {
#endif
#include <stdbool.h>
#include "cpu/attention.h"
#include "gpu/gpu_emu.h"
typedef enum { GPU_NAIVE, GPU_FUSED, GPU_TC } gpu_kernel;
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

/* the column of a row that lane `lane` of the fused kernel keeps in acc[slice] */
unsigned gpu_fused_column_of(unsigned lane, unsigned slice);

/* NULL when this kernel can run the problem, else why not */
const char *gpu_kernel_problem(gpu_kernel kernel, const attn_params *p);

/* the error against exact of attention done plainly with Q, K, V and P rounded to
   bf16 and float32 sums; the tensor-core kernel's bound is twice that */
double gpu_bf16_naive_error(const attn_params *p, const float *q, const float *k,
                            const float *v, const double *exact);

enum { GPU_TC_BWD_LAUNCHES = 5 };   /* convert, forward with L, convert dO, D, backward */
/* the tensor-core forward (saving L) and backward on the emulation: o, dq, dk, dv
   are written; counts (may be NULL) per launch; d must be a multiple of 8 */
void gpu_backward_tc_emulated(const attn_params *p, const float *q, const float *k,
                              const float *v, const float *dout, float *o, float *dq,
                              float *dk, float *dv, emu_counts counts[GPU_TC_BWD_LAUNCHES]);

/* the same on the CUDA device: 0, or -1 with why; ms as for gpu_backward_cuda */
int gpu_backward_tc_cuda(const attn_params *p, const float *q, const float *k,
                         const float *v, const float *dout, float *o, float *dq, float *dk,
                         float *dv, int repeats, double *ms, char why[256]);

/* the errors against exact[0..2] of a plain bf16 backward: Q, K, V, dO rounded to
   bf16, float32 sums, P and dS rounded to bf16 where they enter a product, D from
   the float32 dO; the tensor-core backward's bound is twice each */
void gpu_bf16_naive_backward_error(const attn_params *p, const float *q, const float *k,
                                   const float *v, const float *dout,
                                   double *const exact[3], double error[3]);

/* D = AB + C for row-major 16x16 A, 16x8 B and C, through one warp's mma.sync
   (A and B rounded to bf16): on the emulation, and on the device (0, or -1 and why) */
void gpu_mma_emulated(const float *a, const float *b, const float *c, float *d);
int  gpu_mma_cuda(const float *a, const float *b, const float *c, float *d,
                  char why[256]);

/* the four 8x8 matrices m (row-major, one after another) through one warp's
   ldmatrix.x4 and ldmatrix.x4.trans: out[8 * lane + i] is register i of the plain
   form, out[8 * lane + 4 + i] of the transposed; on the emulation, and on the
   device (0, or -1 and why) */
void gpu_ldmatrix_emulated(const unsigned short m[256], unsigned out[256]);
int  gpu_ldmatrix_cuda(const unsigned short m[256], unsigned out[256], char why[256]);

/* ldmatrix instructions per warp and key tile, from a tensor-core run's counts */
double gpu_tc_ldmatrix_per_warp_tile(const emu_counts *c, unsigned d);

void gpu_ldmatrix_test_input(unsigned short m[256]);
int  gpu_ldmatrix_exact_count(const unsigned short m[256], const unsigned out[256]);

enum { GPU_BWD_LAUNCHES = 3 };   /* forward with L, D pre-pass, main kernel */
/* the forward (saving L) and the backward on the emulation: o, dq, dk, dv are
   written; counts (may be NULL) per launch */
void gpu_backward_emulated(const attn_params *p, const float *q, const float *k,
                           const float *v, const float *dout, float *o, float *dq,
                           float *dk, float *dv, emu_counts counts[GPU_BWD_LAUNCHES]);
/* the same on the CUDA device: 0, or -1 with why; ms (may be NULL): the median
   of repeats timed runs of the backward alone (pre-pass and main kernel) */
int gpu_backward_cuda(const attn_params *p, const float *q, const float *k,
                      const float *v, const float *dout, float *o, float *dq, float *dk,
                      float *dv, int repeats, double *ms, char why[256]);

/* exact[0..2] (caller's, double): dq, dk, dv by chapter 9's finite differences;
   naive_error, flash_error: chapter 9's float32 backwards' max errors against
   them, for comparison; bound: what the GPU backward's max errors may be, from
   the error analysis of its arithmetic (any summation order). Slow: small problems */
void gpu_backward_reference(const attn_params *p, const float *q, const float *k,
                            const float *v, const float *dout, double *const exact[3],
                            double naive_error[3], double flash_error[3], double bound[3]);
/* the bound alone: the largest first-order error bound of dq, dk, dv */
void gpu_backward_bound(const attn_params *p, const float *q, const float *k,
                        const float *v, const float *dout, double bound[3]);

/* what the fused kernel's error may be: twice the larger of naive_error (the
   naive kernel's) and chapter 4's tiled kernel's in 16 x 32 tiles, and at least
   one ulp of the largest exact output */
double gpu_fused_error_bound(const attn_params *p, const float *q, const float *k,
                             const float *v, const double *exact, double naive_error);

/* inputs whose product is exact in float32 and bf16, and how many of D's 128
   elements equal the exact D = AB + C */
void gpu_mma_test_inputs(float a[256], float b[128], float c[128]);
int  gpu_mma_exact_count(const float *a, const float *b, const float *c, const float *d);

#ifdef __cplusplus
}
#endif
#endif
