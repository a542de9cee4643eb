/* gpu_kernels.cuh — chapter 10's CUDA kernels, in the part of CUDA C++ that is
   also C17, so that gpu_emu_cuda.h can run them on the CPU.
   Tangled from chapters/ch10_gpu.nw. */
#ifndef GPU_KERNELS_CUH
#define GPU_KERNELS_CUH
#include <math.h>
#include <stddef.h>
#include "gpu_attention.h"
#ifdef __CUDACC__
#define GPU_UNROLL _Pragma("unroll")
#else
#include "gpu_emu_cuda.h"
#define GPU_UNROLL
#endif

#ifdef __CUDACC__
#define GPU_FLOAT_BITS(x) __float_as_uint(x)
#else
#include <string.h>
static inline unsigned gpu_float_bits(float x)
{
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
#define GPU_FLOAT_BITS(x) gpu_float_bits(x)
#endif

enum { GPU_WARP = 32, GPU_CELL_THREADS = 256 };

enum { GPU_WARPS = 4, GPU_THREADS = GPU_WARP * GPU_WARPS, GPU_ROWS_PER_WARP = 4,
       GPU_BLOCK_Q = GPU_WARPS * GPU_ROWS_PER_WARP, GPU_BLOCK_K = GPU_WARP,
       GPU_SLICES = GPU_MAX_DIM / GPU_WARP, GPU_K_PITCH = GPU_MAX_DIM + 1 };

typedef struct {
    const float *q, *k, *v;    /* (heads, nq, d) and (heads, nk, d) */
    float *s;                  /* naive only: (heads, nq, nk) scores, then probabilities */
    float *o;                  /* (heads, nq, d) */
    unsigned nq, nk, d, heads; /* heads counts batch x heads */
    int causal;                /* top-left aligned, as in chapter 4 */
    float scale;
    float *lse;                /* fused only, may be NULL: L = m + log l per query row */
} gpu_args;

static inline gpu_args gpu_args_for(const attn_params *p, const float *q,
                                    const float *k, const float *v, float *o)
{
    gpu_args a = { q, k, v, NULL, o, (unsigned)p->nq, (unsigned)p->nk,
                   (unsigned)p->d, (unsigned)(p->batch * p->heads),
                   p->causal ? 1 : 0, p->scale, NULL };
    return a;
}

typedef struct { unsigned x, y, threads; } gpu_shape;

static inline unsigned gpu_blocks_for(size_t items, unsigned per_block)
{
    return (unsigned)((items + per_block - 1) / per_block);
}

static inline gpu_shape gpu_scores_shape(gpu_args a)
{
    gpu_shape s = { gpu_blocks_for((size_t)a.nq * a.nk, GPU_CELL_THREADS), a.heads,
                    GPU_CELL_THREADS };
    return s;
}

static inline gpu_shape gpu_softmax_shape(gpu_args a)
{
    gpu_shape s = { gpu_blocks_for((size_t)a.heads * a.nq, GPU_WARPS), 1, GPU_THREADS };
    return s;
}

static inline gpu_shape gpu_output_shape(gpu_args a)
{
    gpu_shape s = { gpu_blocks_for((size_t)a.nq * a.d, GPU_CELL_THREADS), a.heads,
                    GPU_CELL_THREADS };
    return s;
}

static inline gpu_shape gpu_fused_shape(gpu_args a)
{
    gpu_shape s = { gpu_blocks_for(a.nq, GPU_BLOCK_Q), a.heads, GPU_THREADS };
    return s;
}

static __device__ __forceinline__ float warp_max(float x)
{
    for (int k = GPU_WARP / 2; k > 0; k /= 2)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, k));
    return x;
}

static __device__ __forceinline__ float warp_sum(float x)
{
    for (int k = GPU_WARP / 2; k > 0; k /= 2)
        x += __shfl_xor_sync(0xffffffffu, x, k);
    return x;
}

__global__ void gpu_naive_scores(gpu_args a)
{
    const size_t head = blockIdx.y, cells = (size_t)a.nq * a.nk;
    const size_t cell = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= cells) return;
    const unsigned i = (unsigned)(cell / a.nk), j = (unsigned)(cell % a.nk);
    const float *qi = a.q + (head * a.nq + i) * a.d, *kj = a.k + (head * a.nk + j) * a.d;
    float dot = 0.0f;
    for (unsigned c = 0; c < a.d; c++) dot += qi[c] * kj[c];
    a.s[head * cells + cell] = a.causal && j > i ? -INFINITY : a.scale * dot;
}

__global__ void gpu_naive_softmax(gpu_args a)
{
    const unsigned lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const size_t row = (size_t)blockIdx.x * (blockDim.x / GPU_WARP) + warp;
    if (row >= (size_t)a.heads * a.nq) return;
    float *s = a.s + row * a.nk, m = -INFINITY, l = 0.0f;
    for (unsigned j = lane; j < a.nk; j += GPU_WARP) m = fmaxf(m, s[j]);
    m = warp_max(m);
    for (unsigned j = lane; j < a.nk; j += GPU_WARP) {
        s[j] = m == -INFINITY ? 0.0f : expf(s[j] - m);
        l += s[j];
    }
    l = warp_sum(l);
    for (unsigned j = lane; j < a.nk; j += GPU_WARP) if (l > 0.0f) s[j] /= l;
}

__global__ void gpu_naive_output(gpu_args a)
{
    const size_t head = blockIdx.y, cells = (size_t)a.nq * a.d;
    const size_t cell = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= cells) return;
    const unsigned i = (unsigned)(cell / a.d), c = (unsigned)(cell % a.d);
    const float *p = a.s + (head * a.nq + i) * a.nk, *v = a.v + head * a.nk * a.d + c;
    float sum = 0.0f;
    for (unsigned j = 0; j < a.nk; j++) sum += p[j] * v[(size_t)j * a.d];
    a.o[head * cells + cell] = sum;
}

typedef struct {
    float q[GPU_BLOCK_Q * GPU_MAX_DIM];   /* the block's query rows */
    float k[GPU_BLOCK_K * GPU_K_PITCH];   /* one key tile, rows padded by one */
    float v[GPU_BLOCK_K * GPU_MAX_DIM];   /* one value tile */
    float p[GPU_WARPS][GPU_BLOCK_K];      /* each warp's current row of weights */
} gpu_fused_shared;

typedef struct {
    float m;                    /* running max of the row: the same in every lane */
    float l;                    /* this lane's share of the running sum */
    float acc[GPU_SLICES];      /* columns lane, lane + 32, ... of the accumulator */
} gpu_row_state;

static __device__ __forceinline__ void start_rows(gpu_row_state st[GPU_ROWS_PER_WARP])
{
    GPU_UNROLL
    for (int t = 0; t < GPU_ROWS_PER_WARP; t++) {
        st[t].m = -INFINITY;
        st[t].l = 0.0f;
        GPU_UNROLL
        for (int g = 0; g < GPU_SLICES; g++) st[t].acc[g] = 0.0f;
    }
}

static __device__ __forceinline__ void load_rows(float *tile, unsigned pitch,
                                                 const float *src, unsigned first,
                                                 unsigned rows, unsigned count, unsigned d)
{
    for (unsigned e = threadIdx.x; e < rows * GPU_MAX_DIM; e += GPU_THREADS) {
        const unsigned r = e / GPU_MAX_DIM, c = e % GPU_MAX_DIM;
        tile[r * pitch + c] =
            first + r < count && c < d ? src[(size_t)(first + r) * d + c] : 0.0f;
    }
}

static __device__ __forceinline__ float dot_shared(const float *x, const float *y,
                                                   unsigned d)
{
    float sum = 0.0f;
    for (unsigned c = 0; c < d; c++) sum += x[c] * y[c];
    return sum;
}

static __device__ __forceinline__ void fold_tile_into_row(
    gpu_args a, gpu_fused_shared *sh, gpu_row_state *st, unsigned r, unsigned k0,
    unsigned lane, unsigned warp)
{
    const unsigned i = blockIdx.x * GPU_BLOCK_Q + r, j = k0 + lane;
    float s = -INFINITY;
    if (j < a.nk && !(a.causal && j > i))
        s = a.scale * dot_shared(sh->q + r * GPU_MAX_DIM, sh->k + lane * GPU_K_PITCH, a.d);
    const float m_new = fmaxf(st->m, warp_max(s));
    if (m_new == -INFINITY) return;             /* nothing visible yet */
    const float alpha = expf(st->m - m_new), p = expf(s - m_new);
    st->l = alpha * st->l + p;
    sh->p[warp][lane] = p;
    __syncwarp(0xffffffffu);
    GPU_UNROLL
    for (unsigned g = 0; g < GPU_SLICES; g++) {
        const unsigned c = lane + g * GPU_WARP;
        if (c >= a.d) break;
        float sum = alpha * st->acc[g];
        for (unsigned jj = 0; jj < GPU_BLOCK_K; jj++) sum += sh->p[warp][jj] * sh->v[jj * GPU_MAX_DIM + c];
        st->acc[g] = sum;
    }
    __syncwarp(0xffffffffu);
    st->m = m_new;
}

static __device__ __forceinline__ void finish_row(gpu_args a, const gpu_row_state *st,
                                                  unsigned i, unsigned lane)
{
    const float l = warp_sum(st->l);
    if (a.lse && lane == 0)
        a.lse[(size_t)blockIdx.y * a.nq + i] = st->m == -INFINITY ? -INFINITY : st->m + logf(l);
    float *out = a.o + ((size_t)blockIdx.y * a.nq + i) * a.d;
    GPU_UNROLL
    for (unsigned g = 0; g < GPU_SLICES; g++) {
        const unsigned c = lane + g * GPU_WARP;
        if (c < a.d) out[c] = st->m == -INFINITY ? 0.0f : st->acc[g] / l;
    }
}

__global__ void gpu_fused_forward(gpu_args a)
{
    __shared__ gpu_fused_shared sh;
    const unsigned lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const unsigned q0 = blockIdx.x * GPU_BLOCK_Q;
    const size_t head = blockIdx.y;
    const unsigned key_end = a.causal && q0 + GPU_BLOCK_Q < a.nk ? q0 + GPU_BLOCK_Q : a.nk;
    gpu_row_state st[GPU_ROWS_PER_WARP];
    start_rows(st);
    load_rows(sh.q, GPU_MAX_DIM, a.q + head * a.nq * a.d, q0, GPU_BLOCK_Q, a.nq, a.d);
    for (unsigned k0 = 0; k0 < key_end; k0 += GPU_BLOCK_K) {
        __syncthreads();
        load_rows(sh.k, GPU_K_PITCH, a.k + head * a.nk * a.d, k0, GPU_BLOCK_K, a.nk, a.d);
        load_rows(sh.v, GPU_MAX_DIM, a.v + head * a.nk * a.d, k0, GPU_BLOCK_K, a.nk, a.d);
        __syncthreads();
        GPU_UNROLL
        for (unsigned t = 0; t < GPU_ROWS_PER_WARP; t++) {
            const unsigned r = warp * GPU_ROWS_PER_WARP + t;
            if (q0 + r < a.nq) fold_tile_into_row(a, &sh, &st[t], r, k0, lane, warp);
        }
    }
    GPU_UNROLL
    for (unsigned t = 0; t < GPU_ROWS_PER_WARP; t++) {
        const unsigned i = q0 + warp * GPU_ROWS_PER_WARP + t;
        if (i < a.nq) finish_row(a, &st[t], i, lane);
    }
}

typedef struct {
    const float *q, *k, *v, *o, *dout;   /* (heads, nq or nk, d) */
    const float *lse;                    /* the forward's L: (heads, nq) */
    float *dsum;                         /* D: (heads, nq), from the pre-pass */
    float *dq, *dk, *dv;                 /* shaped as q, k, v */
    unsigned nq, nk, d, heads;           /* heads counts batch x heads */
    int causal;
    float scale;
} gpu_bwd_args;

static inline gpu_bwd_args gpu_bwd_sizes(const attn_params *p)
{
    gpu_bwd_args a = { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                       (unsigned)p->nq, (unsigned)p->nk, (unsigned)p->d,
                       (unsigned)(p->batch * p->heads), p->causal ? 1 : 0, p->scale };
    return a;
}

static inline gpu_shape gpu_bwd_dsum_shape(gpu_bwd_args a)
{
    gpu_shape s = { gpu_blocks_for(a.nq, GPU_WARPS), a.heads, GPU_THREADS };
    return s;
}

static inline gpu_shape gpu_bwd_keys_shape(gpu_bwd_args a)
{
    gpu_shape s = { gpu_blocks_for(a.nk, GPU_BLOCK_K), a.heads, GPU_THREADS };
    return s;
}

__global__ void gpu_bwd_dsum(gpu_bwd_args a)
{
    const unsigned lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const unsigned i = blockIdx.x * GPU_WARPS + warp;
    if (i >= a.nq) return;                        /* the whole warp, past the end */
    const size_t row = (size_t)blockIdx.y * a.nq + i;
    float sum = 0.0f;
    for (unsigned c = lane; c < a.d; c += GPU_WARP) {
        sum += a.dout[row * a.d + c] * a.o[row * a.d + c];
        a.dq[row * a.d + c] = 0.0f;
    }
    sum = warp_sum(sum);
    if (lane == 0) a.dsum[row] = sum;
}

enum { GPU_BWD_Q = 8, GPU_BWD_ROWS_PER_WARP = GPU_BWD_Q / GPU_WARPS,
       GPU_BWD_KEYS_PER_WARP = GPU_BLOCK_K / GPU_WARPS };
typedef struct {
    float k[GPU_BLOCK_K * GPU_K_PITCH];     /* the block's keys, rows padded by one */
    float v[GPU_BLOCK_K * GPU_K_PITCH];     /* its values, padded alike */
    float q[GPU_BWD_Q * GPU_MAX_DIM];       /* the current query tile */
    float dout[GPU_BWD_Q * GPU_MAX_DIM];    /* the tile's rows of dO */
    float p[GPU_BWD_Q][GPU_BLOCK_K];        /* P of the tile, recomputed from L */
    float ds[GPU_BWD_Q][GPU_BLOCK_K];       /* dS of the tile */
} gpu_bwd_shared;

typedef struct {
    float dk[GPU_BWD_KEYS_PER_WARP][GPU_SLICES];
    float dv[GPU_BWD_KEYS_PER_WARP][GPU_SLICES];
} gpu_key_grads;

static __device__ __forceinline__ void start_key_grads(gpu_key_grads *g)
{
    GPU_UNROLL
    for (int kk = 0; kk < GPU_BWD_KEYS_PER_WARP; kk++) {
        GPU_UNROLL
        for (int s = 0; s < GPU_SLICES; s++) g->dk[kk][s] = g->dv[kk][s] = 0.0f;
    }
}

static __device__ __forceinline__ void recompute_tile(gpu_bwd_args a, gpu_bwd_shared *sh,
                                                      unsigned q0, unsigned k0,
                                                      unsigned lane, unsigned warp)
{
    GPU_UNROLL
    for (unsigned t = 0; t < GPU_BWD_ROWS_PER_WARP; t++) {
        const unsigned r = warp * GPU_BWD_ROWS_PER_WARP + t, i = q0 + r, j = k0 + lane;
        const size_t row = (size_t)blockIdx.y * a.nq + i;
        float p = 0.0f, ds = 0.0f;
        if (i < a.nq && j < a.nk && !(a.causal && j > i)) {
            const float s = a.scale * dot_shared(sh->q + r * GPU_MAX_DIM, sh->k + lane * GPU_K_PITCH, a.d);
            p = expf(s - a.lse[row]);
            const float dp = dot_shared(sh->dout + r * GPU_MAX_DIM, sh->v + lane * GPU_K_PITCH, a.d);
            ds = p * (dp - a.dsum[row]);
        }
        sh->p[r][lane] = p;
        sh->ds[r][lane] = ds;
    }
}

static __device__ __forceinline__ void add_tile_to_keys(gpu_bwd_args a,
                                                        const gpu_bwd_shared *sh,
                                                        gpu_key_grads *g, unsigned lane,
                                                        unsigned warp)
{
    GPU_UNROLL
    for (unsigned kk = 0; kk < GPU_BWD_KEYS_PER_WARP; kk++) {
        const unsigned jj = warp * GPU_BWD_KEYS_PER_WARP + kk;
        GPU_UNROLL
        for (unsigned s = 0; s < GPU_SLICES; s++) {
            const unsigned c = lane + s * GPU_WARP;
            if (c >= a.d) break;
            float dv = g->dv[kk][s], dk = g->dk[kk][s];
            for (unsigned r = 0; r < GPU_BWD_Q; r++) {
                dv += sh->p[r][jj] * sh->dout[r * GPU_MAX_DIM + c];
                dk += sh->ds[r][jj] * sh->q[r * GPU_MAX_DIM + c];
            }
            g->dv[kk][s] = dv;
            g->dk[kk][s] = dk;
        }
    }
}

static __device__ __forceinline__ void add_tile_to_dq(gpu_bwd_args a,
                                                      const gpu_bwd_shared *sh, unsigned q0,
                                                      unsigned lane, unsigned warp)
{
    GPU_UNROLL
    for (unsigned t = 0; t < GPU_BWD_ROWS_PER_WARP; t++) {
        const unsigned r = warp * GPU_BWD_ROWS_PER_WARP + t, i = q0 + r;
        if (i >= a.nq) break;
        float *dq = a.dq + ((size_t)blockIdx.y * a.nq + i) * a.d;
        GPU_UNROLL
        for (unsigned s = 0; s < GPU_SLICES; s++) {
            const unsigned c = lane + s * GPU_WARP;
            if (c >= a.d) break;
            float sum = 0.0f;
            for (unsigned jj = 0; jj < GPU_BLOCK_K; jj++)
                sum += sh->ds[r][jj] * sh->k[jj * GPU_K_PITCH + c];
            atomicAdd(&dq[c], a.scale * sum);
        }
    }
}

static __device__ __forceinline__ void write_key_grads(gpu_bwd_args a,
                                                       const gpu_key_grads *g, unsigned k0,
                                                       unsigned lane, unsigned warp)
{
    GPU_UNROLL
    for (unsigned kk = 0; kk < GPU_BWD_KEYS_PER_WARP; kk++) {
        const unsigned j = k0 + warp * GPU_BWD_KEYS_PER_WARP + kk;
        if (j >= a.nk) break;
        const size_t row = ((size_t)blockIdx.y * a.nk + j) * a.d;
        GPU_UNROLL
        for (unsigned s = 0; s < GPU_SLICES; s++) {
            const unsigned c = lane + s * GPU_WARP;
            if (c >= a.d) break;
            a.dk[row + c] = a.scale * g->dk[kk][s];
            a.dv[row + c] = g->dv[kk][s];
        }
    }
}

__global__ void gpu_bwd_keys(gpu_bwd_args a)
{
    __shared__ gpu_bwd_shared sh;
    const unsigned lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const unsigned k0 = blockIdx.x * GPU_BLOCK_K;
    const size_t head = blockIdx.y;
    gpu_key_grads g;
    start_key_grads(&g);
    load_rows(sh.k, GPU_K_PITCH, a.k + head * a.nk * a.d, k0, GPU_BLOCK_K, a.nk, a.d);
    load_rows(sh.v, GPU_K_PITCH, a.v + head * a.nk * a.d, k0, GPU_BLOCK_K, a.nk, a.d);
    for (unsigned q0 = a.causal ? k0 / GPU_BWD_Q * GPU_BWD_Q : 0; q0 < a.nq; q0 += GPU_BWD_Q) {
        __syncthreads();
        load_rows(sh.q, GPU_MAX_DIM, a.q + head * a.nq * a.d, q0, GPU_BWD_Q, a.nq, a.d);
        load_rows(sh.dout, GPU_MAX_DIM, a.dout + head * a.nq * a.d, q0, GPU_BWD_Q, a.nq, a.d);
        __syncthreads();
        recompute_tile(a, &sh, q0, k0, lane, warp);
        __syncthreads();
        add_tile_to_keys(a, &sh, &g, lane, warp);
        add_tile_to_dq(a, &sh, q0, lane, warp);
    }
    write_key_grads(a, &g, k0, lane, warp);
}

static __device__ __forceinline__ unsigned gpu_bf16_bits(float x)
{
    unsigned u = GPU_FLOAT_BITS(x);
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

static __device__ __forceinline__ unsigned gpu_pack_bf16x2(float lo, float hi)
{
    return gpu_bf16_bits(lo) | gpu_bf16_bits(hi) << 16;
}

static __device__ __forceinline__ void gpu_mma_bf16(float d[4], const unsigned a[4],
                                                    const unsigned b[2], const float c[4])
{
#ifdef __CUDACC__
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    emu_mma_bf16_m16n8k16(d, a, b, c);
#endif
}

typedef struct { const float *a, *b, *c; float *d; } gpu_mma_args;

__global__ void gpu_mma_check(gpu_mma_args m)
{
    const unsigned lane = threadIdx.x % GPU_WARP, g = lane / 4, t = lane % 4;
    unsigned a[4], b[2];
    float c[4], d[4];
    for (unsigned r = 0; r < 4; r++) {
        const unsigned row = g + 8 * (r % 2), k = 2 * t + 8 * (r / 2);
        a[r] = gpu_pack_bf16x2(m.a[row * 16 + k], m.a[row * 16 + k + 1]);
    }
    for (unsigned r = 0; r < 2; r++)
        b[r] = gpu_pack_bf16x2(m.b[(2 * t + 8 * r) * 8 + g], m.b[(2 * t + 8 * r + 1) * 8 + g]);
    for (unsigned e = 0; e < 4; e++) c[e] = m.c[(g + 8 * (e / 2)) * 8 + 2 * t + e % 2];
    gpu_mma_bf16(d, a, b, c);
    for (unsigned e = 0; e < 4; e++) m.d[(g + 8 * (e / 2)) * 8 + 2 * t + e % 2] = d[e];
}

#endif
