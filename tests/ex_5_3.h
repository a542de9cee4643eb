/* Exercise 5.3: one tile folded into the running max m, sum l and
   accumulator acc of a block of rows (the type attn_update_fn). */
#ifndef EX_5_3_H
#define EX_5_3_H
#include <stddef.h>
void ex_online_update(size_t rows, size_t cols, size_t d, float *scores,
                      const float *v, float *m, float *l, float *acc);
#endif
