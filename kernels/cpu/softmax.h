/* softmax.h: partial softmaxes and the merge that composes them
   (tangled from chapters/ch03_compose.nw; do not edit) */
#ifndef SOFTMAX_H
#define SOFTMAX_H
#include <stddef.h>
#include "cpu/online_softmax.h"

/* The summary of a block of logits x_i: max = max x_i and
   sum = sum of exp(x_i - max), chapter 2's running statistics.  It stands
   for exp(max) * sum, the block's sum of exp(x_i).  Empty: (-inf, 0). */
typedef online_stats softmax_partial;

softmax_partial softmax_partial_of(const float *x, size_t count);
softmax_partial softmax_merge(softmax_partial a, softmax_partial b);
/* block >= 1 */
softmax_partial softmax_stream(const float *x, size_t count, size_t block);
void softmax_normalize(const float *x, size_t count, softmax_partial s, float *p);
void softmax_online(const float *x, size_t count, size_t block, float *p);
void softmax_two_pass(const float *x, size_t count, float *p);
void softmax_reference(const float *x, size_t count, double *p);
#endif
