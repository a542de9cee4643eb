#ifndef EX_13_4_H
#define EX_13_4_H
#include <stddef.h>
void zigzag_spans(size_t n, int ranks, int rank, size_t lo[2], size_t hi[2]);
#endif
