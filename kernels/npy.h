/* npy.h — NumPy .npy files read and written. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_NPY_H
#define FA_NPY_H
#include <stddef.h>
#include "tensor.h"
int    npy_read(const char *path, tensor *out, char *err, size_t errlen);
int    npy_write(const char *path, const tensor *t, char *err, size_t errlen);
tensor npy_read_or_exit(const char *program, const char *path);
void   npy_write_or_exit(const char *program, const char *path, const tensor *t);

#endif
