/* amx_attention.h — bf16 FlashAttention-2 on AMX tiles, on AVX512-BF16 vectors,
   and on the model of either. Tangled from chapters/ch11_amx.nw. */
#ifndef AMX_ATTENTION_H
#define AMX_ATTENTION_H
#include "cpu/attention.h"
#include "cpu/bf16.h"
#include "cpu/decode.h"
typedef enum {
    AMX_KERNEL_AMX, AMX_KERNEL_AVX512BF16, AMX_KERNEL_EMULATED, AMX_KERNEL_EMULATED_VDP,
    AMX_ENGINES
} amx_kernel;
enum { AMX_MAX_THREADS = 256, AMX_STEP_BLOCKS = 4 };   /* blocks of 32 keys in one softmax step */
typedef struct { size_t blocks_computed, blocks_skipped; } amx_counts;
/* bf16 attention: Q, K, V rounded to bf16, sums in fp32; d <= 128 */
void attention_bf16(amx_kernel kernel, const attn_params *p, const float *q, const float *k,
                    const float *v, float *o, int threads, amx_counts *counts);
size_t attention_bf16_bytes(const attn_params *p, int threads);
const char *bf16_params_problem(const attn_params *p);
/* the AMX engine with parts of its work left out, to time the parts: o is not attention */
enum { AMX_LEAVE_TILES = 1, AMX_LEAVE_VECTORS = 2, AMX_LEAVE_PAIRS = 4 };   /* pairs: one slice at a time */
void attention_bf16_without(int leave_out, const attn_params *p, const float *q, const float *k,
                            const float *v, float *o, int threads);
/* 2^t to 2^-13 for the probabilities: the model, and sixteen lanes of AVX-512 (AVX-512 only) */
float amx_exp2(float t);
void  amx_exp2_hw16(const float t[16], float out[16]);
/* one block of 32 keys of V (nk x d, from key k0) as the kernel packs it: dpad/16 tiles */
void amx_pack_values(size_t nk, size_t d, const float *v, size_t k0, bf16 *out);
/* chapter 8's decoding with its products on the tiles (AMX and AVX512-BF16), or on their model */
decode_piece_kernel amx_decode_piece, amx_decode_piece_model;
const char *amx_decode_problem(const decode_params *p, decode_cache cache);   /* NULL: it runs */
#endif
