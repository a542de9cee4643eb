/* Exercise 9.3: the second pass of a two-pass backward, dQ for one query block. */
#ifndef EX_9_3_H
#define EX_9_3_H
#include <stddef.h>
#include "cpu/attention.h"
#include "cpu/backward.h"
void dq_for_query_block(const attn_params *p, const float *q, const float *k,
                        const float *v, const float *o, const float *lse,
                        const float *dout, size_t q0, size_t rows, float *dq);
#endif
