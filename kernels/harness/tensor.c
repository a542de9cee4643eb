/* tensor.c — tensors: a float pointer and a shape. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>   /* program_invocation_short_name */
#include <stdio.h>
#include <stdlib.h>
#include "harness/memory.h"
#include "harness/tensor.h"
tensor tensor_new(int ndim, const size_t shape[])
{
    if (ndim < 1 || ndim > 4) {
        fprintf(stderr, "%s: error: a tensor has 1 to 4 dimensions, not %d\n",
                program_invocation_short_name, ndim);
        exit(2);
    }
    tensor t = { .data = NULL, .ndim = ndim, .shape = { 1, 1, 1, 1 } };
    for (int i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    t.data = fa_alloc(fa_mul(tensor_count(&t), sizeof(float)));
    return t;
}

void tensor_free(tensor *t)
{
    fa_free(t->data);
    t->data = NULL;
    t->ndim = 0;
}

size_t tensor_count(const tensor *t)
{
    size_t count = 1;
    for (int i = 0; i < t->ndim; i++)
        count = fa_mul(count, t->shape[i]);
    return count;
}

