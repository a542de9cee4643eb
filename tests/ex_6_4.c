#include "ex_6_4.h"

void ex_balanced_rows(size_t n, size_t parts, size_t part, size_t *row0, size_t *row1)
{
    size_t q = n / parts, r = n % parts;
    *row0 = part * q + (part < r ? part : r);
    *row1 = *row0 + q + (part < r);
}
