/* Exercise 2.4: the online sum of n logits streamed in blocks; returns l,
   stores the running max in *max_out. */
#ifndef EX_2_4_H
#define EX_2_4_H
#include <stddef.h>
float ex_stream_sum(const float *x, size_t n, size_t block, float *max_out);
#endif
