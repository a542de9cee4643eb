/* Exercise 10.3: the sum of a block's 128 values, in shared memory. */
#ifndef EX_10_3_H
#define EX_10_3_H
#include "gpu/gpu_emu.h"
typedef struct { const float *in; float *out; } ex_block_sum_args;
void ex_block_sum_kernel(const void *args);   /* launch with blocks of 128 */
#endif
