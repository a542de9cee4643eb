#include "ex_13_4.h"
void zigzag_spans(size_t n, int ranks, int rank, size_t lo[2], size_t hi[2])
{
    const size_t c = 2 * (size_t)ranks, k[2] = { (size_t)rank, c - 1 - (size_t)rank };
    for (int i = 0; i < 2; i++) { lo[i] = n * k[i] / c; hi[i] = n * (k[i] + 1) / c; }
}
