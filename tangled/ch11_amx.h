/* ch11_amx.h — what chapter 11's program and its tests share.
   Tangled from chapters/ch11_amx.nw. */
#ifndef CH11_AMX_H
#define CH11_AMX_H
#include <stdbool.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "cpu/amx_attention.h"
#define CH11_PROGRAM "ch11_amx"
typedef struct {
    const char *q_path, *k_path, *v_path, *out_path, *kernel, *data_dir, *python, *machine;
    const char *recorded;
    bool causal, json, bench, quick;
    long seed, heads, seq, seq_k, dim, threads, repeats;
    double scale;
} ch11_options;
#define CH11_KERNELS "auto (the best here), amx, avx512bf16, emulated (AMX's model) " \
                     "or emulated-avx512bf16 (AVX512-BF16's model)"
enum { CH11_BENCH_HEADS = 8 };
typedef struct { double kernel, plain, bound; } ch11_error;   /* max errors against float64 */
int chapter_main(int argc, char **argv);
ch11_options ch11_defaults(void);
amx_kernel ch11_best_kernel(char why[160]);
amx_kernel ch11_kernel_of(const char *name);
const char *ch11_kernel_name(amx_kernel k);
ch11_error ch11_error_of(amx_kernel kernel, const attn_params *p, uint32_t seed, int threads);
double ch11_flops(const attn_params *p);
spread ch11_time_kernel(amx_kernel kernel, const attn_params *p, int threads, int repeats);
void ch11_recorded_note(const char *path, char *note, size_t size);
#endif
