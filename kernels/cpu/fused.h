/* fused.h — the fast CPU kernels of chapter 8: naive attention on OpenBLAS, and
   the fused, vectorized, threaded kernel. Tangled from chapters/ch08_fused_timing.nw. */
#ifndef FUSED_H
#define FUSED_H
#include <stdbool.h>
#include <stddef.h>
#include "cpu/attention.h"
#include "cpu/workers.h"
typedef struct {
    double flops;             /* 2 per multiply-add, in the tiles computed */
    double q_bytes, k_bytes, v_bytes, o_bytes;  /* tensor traffic          */
    double score_bytes;       /* scores and probabilities through memory   */
    size_t tiles_computed, tiles_skipped;
} attn_counts;
void add_counts(attn_counts *to, const attn_counts *c);
void blas_use_known_kernels(char **argv);
const char *blas_kernels(void);
void attention_naive_blas(const attn_params *p, const float *q, const float *k,
                          const float *v, float *o, int threads, attn_counts *counts);
void count_naive_head(attn_counts *c, const attn_params *p);
typedef enum { FUSED_ISA_AUTO, FUSED_ISA_AVX2, FUSED_ISA_AVX512 } fused_isa;
bool        fused_isa_available(fused_isa isa);
fused_isa   fused_isa_chosen(fused_isa wanted);   /* AUTO: the widest available (AUTO: none) */
const char *fused_isa_name(fused_isa isa);
typedef struct {
    int       threads;      /* >= 1                                      */
    fused_isa isa;          /* FUSED_ISA_AUTO: the widest the CPU has    */
    bool      count_only;   /* walk the blocks and count; compute nothing */
    size_t    block_q, block_k;  /* 0: the kernel's own choice          */
    float    *lse;          /* NULL, or per query row m + log l (-inf: no key) */
    workers_crew *crew;     /* NULL, or threads kept between calls        */
} fused_config;

void attention_fused(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o, const fused_config *cfg,
                     attn_counts *counts);
size_t attention_fused_bytes(const attn_params *p, const fused_config *cfg);
attn_params fused_blocks(const attn_params *p, const fused_config *cfg);
#endif
