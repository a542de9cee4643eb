/* Exercise 6.4: rows row0..row1-1 of n for part `part` of `parts`, in
   order, covering every row once, sizes differing by at most one. */
#ifndef EX_6_4_H
#define EX_6_4_H
#include <stddef.h>
void ex_balanced_rows(size_t n, size_t parts, size_t part, size_t *row0, size_t *row1);
#endif
