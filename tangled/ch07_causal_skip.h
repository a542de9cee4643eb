/* ch07_causal_skip.h — the tile types and the functions the tests call.
   Tangled from chapters/ch07_causal_skip.nw. */
#ifndef CH07_CAUSAL_SKIP_H
#define CH07_CAUSAL_SKIP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/harness.h"
#include "cpu/attention.h"
typedef enum {
    TILE_FULL,       /* every entry visible: compute, no mask */
    TILE_DIAGONAL,   /* the diagonal crosses it: compute, then mask */
    TILE_SKIPPED     /* every entry hidden: compute nothing */
} tile_state;

typedef struct {
    size_t total, computed, skipped, diagonal;
    size_t scores;   /* entries of the computed tiles */
} tile_counts;
int chapter_main(int argc, char **argv);
tile_state causal_tile_state(size_t q0, size_t q1, size_t k0, size_t k1);
tile_counts count_causal_tiles(size_t nq, size_t nk, size_t block_q, size_t block_k);
size_t blocks_of(size_t n, size_t block);
double skipped_fraction_closed_form(size_t T);
double flop_ratio_closed_form(size_t T);
bool closed_form_holds(tile_counts c, size_t T);
attn_stats run_causal_kernel(size_t n, size_t heads, size_t d, size_t block,
                             uint32_t seed, rng_path rng);
bool kernel_agrees(attn_stats st, tile_counts c, size_t heads);
#endif
