/* ch10_gpu.h — what chapter 10's program and its tests share.
   Tangled from chapters/app_gpu_run.nw. */
#ifndef CH10_GPU_H
#define CH10_GPU_H
#include <stdbool.h>
#include "harness/tensor.h"
#include "cpu/attention.h"
typedef struct {
    double diff, bound;   /* largest |tc - fused| on the sampled rows, and its bound */
    bool ok;              /* within the bound, and every element finite */
} ch10_tc_check;
ch10_tc_check ch10_check_tc_rows(const attn_params *p, const tensor qkv[3],
                                 const float *fused, const float *tc);
#endif
