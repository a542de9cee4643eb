/* random.h — the PyTorch-identical random generator. Tangled from chapters/app_torch.nw; edit that file. */
#ifndef FA_RANDOM_H
#define FA_RANDOM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef enum {
    RNG_SCALAR,   /* PyTorch's portable kernel: libm, angle in double */
    RNG_AVX2      /* its x86-64 AVX2/AVX-512 kernel: avx_mathfun polynomials */
} rng_path;
const char *rng_path_name(rng_path path);
rng_path    rng_path_named(const char *program, const char *name);
#define RNG_OPTION(name) { "rng", OPT_STRING, (name), 0, 0, "PATH", \
    "draw normals as PyTorch's scalar or x86 avx2 kernel does" }

typedef struct {
    uint32_t state[624];
    int      index;            /* next word to temper; 624 = twist first */
    bool     has_next_normal;  /* PyTorch's cached second Box–Muller value */
    double   next_normal;
    rng_path path;             /* which of PyTorch's kernels torch_randn follows */
} mt19937;
void     mt_seed(mt19937 *g, uint32_t seed);
void     mt_seed_path(mt19937 *g, uint32_t seed, rng_path path);
uint32_t mt_next(mt19937 *g);
float    mt_uniform(mt19937 *g);
void     torch_randn(mt19937 *g, float *out, size_t count);
void     torch_rand(mt19937 *g, float *out, size_t count);

#endif
