#include <math.h>
#include <stdlib.h>
#include "ex_A_3.h"

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile_of_sorted(const double *x, size_t n, double p)
{
    double pos = p * (double)(n - 1), below = floor(pos);
    size_t i = (size_t)below, j = i + 1 < n ? i + 1 : i;
    return x[i] + (pos - below) * (x[j] - x[i]);
}
double ex_iqr_of(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, compare_doubles);
    return quantile_of_sorted(x, n, 0.75) - quantile_of_sorted(x, n, 0.25);
}
