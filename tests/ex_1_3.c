#include <math.h>
#include "ex_1_3.h"

double ex_score_intensity(double n, double d)
{
    return 2.0 * n * n * d / (4.0 * (2.0 * n * d + n * n));
}

double ex_ridge_dim(double n, double ridge)
{
    if (n <= 4.0 * ridge)
        return INFINITY;
    return 2.0 * ridge * n / (n - 4.0 * ridge);
}
