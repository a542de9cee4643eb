/* ch06_memory.h — the record of one path and the functions the tests call.
   Tangled from chapters/ch06_memory.nw. */
#ifndef CH06_MEMORY_H
#define CH06_MEMORY_H
#include <stddef.h>
#include <stdint.h>
#include "harness/harness.h"
#include "cpu/attention.h"
typedef struct {
    size_t inputs;      /* bytes of Q, K, V, O, allocated before the path ran */
    size_t fa_peak;     /* the allocator's peak while the path ran, inputs included */
    size_t rss_start;   /* VmHWM when the measurement began */
    size_t rss_peak;    /* VmHWM after the path ran: its peak included */
    size_t tile_stats;  /* attn_stats.peak_tile_bytes (tiled path only) */
    double seconds;     /* how long the path ran */
} path_memory;

typedef enum { NAIVE_PATH, TILED_PATH } path_kind;
int chapter_main(int argc, char **argv);
size_t score_matrix_bytes(size_t heads, size_t n, size_t elem_bytes);
size_t qkvo_bytes(size_t heads, size_t n, size_t d, size_t elem_bytes);
size_t tile_bytes(size_t heads, size_t block_q, size_t block_k, size_t elem_bytes);
size_t kv_cache_bytes_per_token(size_t layers, size_t kv_heads, size_t head_dim,
                                size_t elem_bytes);
double cards_exact(double bytes, double card_bytes);
size_t cards_needed(double bytes, double card_bytes);
void naive_all_heads(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o, size_t threads);
path_memory measure_path(path_kind kind, const attn_params *p, uint32_t seed,
                         size_t threads, size_t tiled_rows);
path_memory measure_in_fresh_process(path_kind kind, const attn_params *p,
                                     uint32_t seed, size_t threads, size_t tiled_rows);
#endif
