#include "ex_4_4.h"

attn_tile_kind ex_padded_classify(size_t q0, size_t rows, size_t k0, size_t cols,
                                  size_t nk_valid, bool causal)
{
    size_t q1 = q0 + rows - 1, k1 = k0 + cols - 1;
    size_t most = causal && q1 + 1 < nk_valid ? q1 + 1 : nk_valid;   /* keys < most */
    size_t least = causal && q0 + 1 < nk_valid ? q0 + 1 : nk_valid;  /* keys < least */
    if (k0 >= most)
        return ATTN_TILE_SKIPPED;
    return k1 < least ? ATTN_TILE_FULL : ATTN_TILE_MASKED;
}
