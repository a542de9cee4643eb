/* Project P.2: the flash backward of one head under a padding mask: queries
   i < nq_valid see keys j < nk_valid (and j <= i with p->causal). */
#ifndef EX_P_2_H
#define EX_P_2_H
#include "cpu/attention.h"
#include "cpu/backward.h"
void proj_masked_backward(const attn_params *p, size_t nq_valid, size_t nk_valid,
                          const float *q, const float *k, const float *v, const float *o,
                          const float *lse, const float *dout, float *dq, float *dk,
                          float *dv, bwd_counts *counts);
#endif
