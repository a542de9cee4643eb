#include "ex_7_4.h"

attn_tile_kind ex_lower_right_classify(size_t q0, size_t rows, size_t k0, size_t cols,
                                       size_t nq, size_t nk)
{
    const long long delta = (long long)nk - (long long)nq;
    const long long first_sees = (long long)q0 + delta;               /* last key of row q0 */
    const long long last_sees = (long long)(q0 + rows - 1) + delta;   /* of the last row */
    if ((long long)k0 > last_sees)
        return ATTN_TILE_SKIPPED;
    return (long long)(k0 + cols - 1) <= first_sees ? ATTN_TILE_FULL : ATTN_TILE_MASKED;
}
