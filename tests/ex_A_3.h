/* Exercise A.3: the interquartile range of n numbers (sorted in place),
   quartiles interpolated linearly; NaN when n is 0. */
#ifndef EX_A_3_H
#define EX_A_3_H
#include <stddef.h>
double ex_iqr_of(double *x, size_t n);
#endif
