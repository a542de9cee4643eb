/* Project P.1: sliding-window attention, tiled, skipping every tile the
   window hides. */
#ifndef EX_P_1_H
#define EX_P_1_H
#include "cpu/attention.h"
void proj_window_attention(const attn_params *p, const float *q, const float *k,
                           const float *v, float *o, attn_stats *stats);
#endif
