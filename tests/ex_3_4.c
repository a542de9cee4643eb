#include <math.h>
#include "ex_3_4.h"

float ex_lse_merge(float lambda_1, float lambda_2)
{
    float top = fmaxf(lambda_1, lambda_2);
    if (top == -INFINITY)
        return -INFINITY;
    return top + log1pf(expf(-fabsf(lambda_1 - lambda_2)));
}
