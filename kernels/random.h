/* random.h — the PyTorch-identical random generator. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_RANDOM_H
#define FA_RANDOM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef struct {
    uint32_t state[624];
    int      index;            /* next word to temper; 624 = twist first */
    bool     has_next_normal;  /* PyTorch's cached second Box–Muller value */
    double   next_normal;
} mt19937;
void     mt_seed(mt19937 *g, uint32_t seed);
uint32_t mt_next(mt19937 *g);
float    mt_uniform(mt19937 *g);
void     torch_randn(mt19937 *g, float *out, size_t count);
void     torch_rand(mt19937 *g, float *out, size_t count);

#endif
