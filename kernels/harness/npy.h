/* npy.h — NumPy .npy files read and written. Tangled from chapters/app_torch.nw; edit that file. */
#ifndef FA_NPY_H
#define FA_NPY_H
#include <stddef.h>
#include "harness/tensor.h"
int    npy_read(const char *path, tensor *out, char *err, size_t errlen);
int    npy_write(const char *path, const tensor *t, char *err, size_t errlen);
/* writes n files, all or none: on failure no target has changed */
int    npy_write_all(size_t n, const char *const paths[], const tensor *const ts[],
                     char *err, size_t errlen);
tensor npy_read_or_exit(const char *program, const char *path);
void   npy_write_or_exit(const char *program, const char *path, const tensor *t);
void   npy_write_all_or_exit(const char *program, size_t n, const char *const paths[],
                             const tensor *const ts[]);
/* exits 2 if OUT is the same file as one of the n INPUTS (same device and inode) */
void   npy_refuse_same_file(const char *program, const char *out,
                            const char *const inputs[], size_t n);
/* exits 2 if two of the n OUTPUTS name one file, or one of them names one of
   the m INPUTS, by whatever spelling or link (NULL names are skipped) */
void   npy_refuse_overlap(const char *program, const char *const outputs[], size_t n,
                          const char *const inputs[], size_t m);
/* the shape of a .npy file, checked as npy_read checks the whole file, with
   no data read or allocated (data is NULL): a run is sized before it reads */
int    npy_read_shape(const char *path, tensor *out, char *err, size_t errlen);
tensor npy_shape_or_exit(const char *program, const char *path);

/* refuses (exit 2, one line) an output that is an input or another output, or
   that cannot be written; then creates each output's temporary file now, beside
   the file it will replace (a symbolic link followed), for npy_write_or_exit and
   npy_write_all_or_exit to fill: call it before reading any input */
void   npy_reserve_outputs_or_exit(const char *program, const char *const outputs[], size_t n,
                                   const char *const inputs[], size_t m);
/* removes the temporaries this process reserved, and forgets them: outputs
   checked, none held while the work runs (the write reserves them again) */
void   npy_release_reserved(void);
/* reserves one output, as above: 0, or -1 with one line in err */
int    npy_reserve(const char *path, char *err, size_t errlen);

#endif
