/* tensor.h — tensors: a float pointer and a shape. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_TENSOR_H
#define FA_TENSOR_H
#include <stddef.h>
typedef struct {
    float *data;
    int    ndim;        /* 1 to 4 */
    size_t shape[4];    /* entries past ndim are 1 */
} tensor;
tensor tensor_new(int ndim, const size_t shape[]);
void   tensor_free(tensor *t);
size_t tensor_count(const tensor *t);

#endif
