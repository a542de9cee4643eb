/* Exercise 4.4: tile classification under a padding mask (keys j >=
   nk_valid hidden), optionally with the top-left causal mask. */
#ifndef EX_4_4_H
#define EX_4_4_H
#include <stdbool.h>
#include <stddef.h>
#include "cpu/attention.h"
attn_tile_kind ex_padded_classify(size_t q0, size_t rows, size_t k0, size_t cols,
                                  size_t nk_valid, bool causal);
#endif
