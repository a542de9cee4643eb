/* bf16.h — bf16 numbers, the instruction set manual's model of VCVTNEPS2BF16,
   VDPBF16PS and TDPBF16PS, and the hardware instructions for comparison.
   Tangled from chapters/ch11_amx.nw. */
#ifndef BF16_H
#define BF16_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/harness.h"
typedef uint16_t bf16;
enum { AMX_TILE_ROWS = 16, AMX_TILE_BYTES = 64, AMX_TILE_COLS = 16, AMX_TILE_ELEMS = 512 };
enum { AMX_ARCH_REQ_XCOMP_PERM = 0x1023, AMX_XFEATURE_XTILEDATA = 18 };
#define BF16_DEFAULT_NAN 0xffc00000u
typedef struct {
    size_t cases, differ, nan_payloads;       /* nan_payloads: both NaN, other bits */
    uint32_t first[4][5];                     /* x or acc, a, b, hardware, model */
} bf16_comparison;
bf16  bf16_round(float x);                    /* VCVTNEPS2BF16 on one number */
float bf16_float(bf16 h);                     /* the manual's make_fp32 */
float bf16_dot_lane(float acc, uint32_t a, uint32_t b);   /* VDPBF16PS, one lane */
/* TDPBF16PS: c (rows x cols fp32) += a (rows x 2 pairs bf16) . b (pairs x 2 cols, VNNI) */
void  amx_tile_dot(float *c, size_t ldc, const bf16 *a, size_t lda, const bf16 *b,
                   size_t ldb, size_t rows, size_t pairs, size_t cols);
bool  bf16_isa_allowed(void);                 /* FA_ISA permits AVX-512 */
bool  bf16_cpu_has_avx512bf16(void);
bool  amx_available(char why[160]);           /* asks Linux for the tiles once */
void  amx_configure_tiles(void);              /* every tile 16 rows of 64 bytes */
void  amx_configure_decode_tiles(void);       /* the shapes of decoding on the tiles */
void  amx_release_tiles(void);
void  bf16_hw_round32(const float *x, bf16 *out);                   /* AVX512-BF16 only */
void  bf16_hw_dot16(float *acc, const uint32_t *a, const uint32_t *b); /* AVX512-BF16 only */
void  amx_hw_tile_dot(float c[256], const bf16 a[512], const bf16 b[512]);  /* AMX only */
uint32_t bf16_hostile_bits(mt19937 *mt, int kind);   /* 0 hostile, 1 extreme, 2 random */
void  amx_draw_tiles(mt19937 *mt, size_t round, float c[256], bf16 a[512], bf16 b[512]);
void  bf16_note_difference(bf16_comparison *c, uint32_t x, uint32_t a, uint32_t b,
                           uint32_t hw, uint32_t model);
bf16_comparison bf16_compare_rounding(uint32_t seed, size_t rounds);   /* AVX512-BF16 only */
bf16_comparison bf16_compare_dot(uint32_t seed, size_t rounds);        /* AVX512-BF16 only */
bf16_comparison amx_compare_tile_dot(uint32_t seed, size_t rounds);    /* AMX only */
/* GFLOP/s of TDPBF16PS (amx) or VDPBF16PS on `threads` threads at once */
spread bf16_peak_gflops(bool amx, int threads, long iterations, int repeats);
/* ns a round: 128 vector multiply-adds alone, four tile products alone, both (AMX only) */
typedef struct { spread vectors, tiles, both; } amx_overlap;
amx_overlap amx_overlap_probe(long rounds, int repeats);
#endif
