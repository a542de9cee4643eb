/* Exercise 7.4: tile classification under the causal mask aligned at the
   bottom right: query i sees keys j <= i + nk - nq. */
#ifndef EX_7_4_H
#define EX_7_4_H
#include <stddef.h>
#include "cpu/attention.h"
attn_tile_kind ex_lower_right_classify(size_t q0, size_t rows, size_t k0, size_t cols,
                                       size_t nq, size_t nk);
#endif
