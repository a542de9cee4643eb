/* decode.h — attention for decoding: a few query rows against a long K/V cache,
   fp32 or bf16, grouped-query heads, the keys split among threads and merged in a
   fixed order. Tangled from chapters/ch08_fused_timing.nw. */
#ifndef DECODE_H
#define DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include "cpu/bf16.h"
#include "cpu/softmax.h"
#include "cpu/workers.h"
enum { DECODE_MAX_ROWS = 16,      /* query rows per head, n_q      */
       DECODE_MAX_KEYS = 131072,  /* keys of the cache, n_k        */
       DECODE_SPAN = 1024,        /* keys per piece of work: fixed */
       DECODE_BLOCK = 64 };       /* keys per block inside a span  */
typedef struct {
    size_t batch, heads, kv_heads, nq, nk, d;   /* kv_heads divides heads */
    float  scale;
} decode_params;
typedef enum { DECODE_FP32, DECODE_BF16 } decode_cache;
typedef enum { DECODE_ISA_AUTO, DECODE_ISA_SCALAR, DECODE_ISA_AVX2,
               DECODE_ISA_AVX512 } decode_isa;
typedef struct {
    const float *q;          /* rows x d, scaled, in order */
    const void *k, *v;       /* the cache head, from its key 0 */
    decode_cache cache;      /* the element type of k and v */
    size_t rows, d, first, last;   /* the keys [first, last) */
} decode_piece;
typedef void decode_piece_kernel(const decode_piece *piece, softmax_partial *part, float *acc);
typedef struct {
    int          threads;   /* >= 1 */
    decode_isa   isa;       /* AUTO: the widest the CPU has and FA_ISA allows */
    decode_cache cache;     /* the element type of K and V */
    workers_crew *crew;     /* NULL, or threads kept between calls (workers.h) */
    decode_piece_kernel *piece;   /* NULL: this chapter's copies; or a later chapter's */
} decode_config;
const char *decode_params_problem(const decode_params *p);   /* NULL: usable */
size_t decode_spans(size_t nk);                    /* spans of DECODE_SPAN keys */
size_t decode_units(const decode_params *p);       /* batch x kv_heads x spans  */
size_t decode_first_unit(size_t units, int threads, int t);   /* thread t's first */
bool        decode_isa_available(decode_isa isa);
decode_isa  decode_isa_chosen(decode_isa wanted, size_t d);
const char *decode_isa_problem(decode_isa isa, size_t d);   /* NULL: it runs d */
const char *decode_isa_name(decode_isa isa);
void   attention_decode(const decode_params *p, const float *q, const void *k,
                        const void *v, float *o, const decode_config *cfg);
size_t attention_decode_bytes(const decode_params *p, const decode_config *cfg);
size_t decode_cache_bytes(const decode_params *p, decode_cache cache);   /* K and V */
#endif
