/* Project P.3: flash-decoding: one query row over n keys cut into chunks. */
#ifndef EX_P_3_H
#define EX_P_3_H
#include "gpu/gpu_attention.h"
#ifndef __CUDACC__
#include "gpu/gpu_emu_cuda.h"
#endif
enum { PROJ_THREADS = GPU_MAX_DIM };   /* threads of a block; d <= PROJ_THREADS */
typedef struct {
    const float *q, *k, *v;      /* q: (d); k, v: (n, d) */
    float *part_m, *part_l;      /* (S): each chunk's max and sum, S = ceil(n / chunk) */
    float *part_o;               /* (S, d): each chunk's unnormalised output */
    float *o;                    /* (d) */
    unsigned n, d, chunk;
    float scale;
} proj_decode_args;
__global__ void proj_decode_split(proj_decode_args a);     /* S blocks of PROJ_THREADS */
__global__ void proj_decode_combine(proj_decode_args a);   /* 1 block of PROJ_THREADS */
#endif
