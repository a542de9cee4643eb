/* gpu_kernels.cuh — chapter 10's CUDA kernels, in the part of CUDA C++ that is
   also C17, so that gpu_emu_cuda.h can run them on the CPU.
   Tangled from chapters/ch10_gpu.nw. */
#ifndef GPU_KERNELS_CUH
#define GPU_KERNELS_CUH
#include <float.h>
#include <math.h>
#include <stddef.h>
#include "gpu/gpu_attention.h"
#ifdef __CUDACC__
#define GPU_UNROLL _Pragma("unroll")
#else
#include "gpu/gpu_emu_cuda.h"
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

#ifdef __CUDACC__
#define GPU_ALIGN16 __align__(16)
#else
#define GPU_ALIGN16 _Alignas(16)
#endif

enum { GPU_WARP = 32, GPU_CELL_THREADS = 256 };

enum { GPU_WARPS = 4, GPU_THREADS = GPU_WARP * GPU_WARPS, GPU_ROWS_PER_WARP = 4,
       GPU_BLOCK_Q = GPU_WARPS * GPU_ROWS_PER_WARP, GPU_BLOCK_K = GPU_WARP,
       GPU_SLICES = GPU_MAX_DIM / GPU_WARP, GPU_K_PITCH = GPU_MAX_DIM + 1 };

enum { GPU_TC_WARPS = 4, GPU_TC_THREADS = GPU_TC_WARPS * GPU_WARP, GPU_TC_ROWS = 16,
       GPU_TC_BLOCK_Q = GPU_TC_WARPS * GPU_TC_ROWS, GPU_TC_BLOCK_K = 64,
       GPU_TC_CHUNK = 8, GPU_TC_PAD = 8 };
#define GPU_TCF_WARPS(width) ((width) / GPU_TC_ROWS)   /* the forward's blocks */
#define GPU_TCF_THREADS(width) (GPU_TCF_WARPS(width) * GPU_WARP)
#define GPU_TCF_BLOCK_Q(width) (GPU_TCF_WARPS(width) * GPU_TC_ROWS)
static inline unsigned gpu_tc_width(unsigned d) { return d <= 64 ? 64 : 128; }

typedef struct {
    const float *q, *k, *v;    /* (heads, nq, d) and (heads, nk, d) */
    float *s;                  /* naive only: (heads, nq, nk) scores, then probabilities */
    float *o;                  /* (heads, nq, d) */
    unsigned nq, nk, d, heads; /* heads counts batch x heads */
    int causal;                /* top-left aligned, as in chapter 4 */
    float scale;
    unsigned short *q16, *k16, *v16;   /* tensor-core kernel only: the inputs in bf16 */
    float *lse;                /* fused and tensor-core, may be NULL: L = m + log l per query row */
} gpu_args;

static inline gpu_args gpu_args_for(const attn_params *p, const float *q,
                                    const float *k, const float *v, float *o)
{
    gpu_args a = { q, k, v, NULL, o, (unsigned)p->nq, (unsigned)p->nk,
                   (unsigned)p->d, (unsigned)(p->batch * p->heads),
                   p->causal ? 1 : 0, p->scale, NULL, NULL, NULL, NULL };
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

static inline gpu_shape gpu_convert_shape(gpu_args a)
{
    const size_t n = (size_t)a.heads * (a.nq > a.nk ? a.nq : a.nk) * a.d;
    gpu_shape s = { gpu_blocks_for(n, GPU_CELL_THREADS), 1, GPU_CELL_THREADS };
    return s;
}

static inline gpu_shape gpu_tc_shape(gpu_args a)
{
    const unsigned width = gpu_tc_width(a.d);
    gpu_shape s = { gpu_blocks_for(a.nq, GPU_TCF_BLOCK_Q(width)), a.heads, GPU_TCF_THREADS(width) };
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
        s[j] = expf(s[j] - m);
        l += s[j];
    }
    l = warp_sum(l);
    for (unsigned j = lane; j < a.nk; j += GPU_WARP) s[j] /= l;
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

static __device__ __forceinline__ unsigned fused_column(unsigned lane, unsigned g)
{
    return lane + g * GPU_WARP;
}

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
        const unsigned c = fused_column(lane, g);
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
        const unsigned c = fused_column(lane, g);
        if (c < a.d) out[c] = st->acc[g] / l;
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
    const unsigned short *q16, *k16, *v16, *dout16;   /* tensor-core backward only: bf16 */
} gpu_bwd_args;

static inline gpu_bwd_args gpu_bwd_sizes(const attn_params *p)
{
    gpu_bwd_args a = { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                       (unsigned)p->nq, (unsigned)p->nk, (unsigned)p->d,
                       (unsigned)(p->batch * p->heads), p->causal ? 1 : 0, p->scale,
                       NULL, NULL, NULL, NULL };
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
#ifdef __CUDACC__
    unsigned pair;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pair) : "f"(hi), "f"(lo));
    return pair;
#else
    return gpu_bf16_bits(lo) | gpu_bf16_bits(hi) << 16;
#endif
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

__global__ void gpu_convert_bf16(gpu_args a)
{
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t qn = (size_t)a.heads * a.nq * a.d, kn = (size_t)a.heads * a.nk * a.d;
    if (e < qn) a.q16[e] = (unsigned short)gpu_bf16_bits(a.q[e]);
    if (e < kn) a.k16[e] = (unsigned short)gpu_bf16_bits(a.k[e]);
    if (e < kn) a.v16[e] = (unsigned short)gpu_bf16_bits(a.v[e]);
}

typedef struct {
    float m[2];                              /* rows g and g + 8: running max (log2 units) */
    float l[2];                              /* this lane's share of each row's sum */
    float acc[GPU_MAX_DIM / 8][4];           /* the rows' accumulator fragments */
} gpu_tc_rows;

#define GPU_TC_PITCH(width) ((width) + GPU_TC_PAD)   /* a tile row, padded */

static inline size_t gpu_tc_shared_bytes(unsigned width)
{
    return 2 * 2 * GPU_TC_BLOCK_K * GPU_TC_PITCH(width) * sizeof(unsigned short);
}

#ifdef __CUDACC__
#define GPU_TC_TILES extern __shared__ __align__(16) unsigned short gpu_tc_tiles[]
#else
#define GPU_TC_TILES static _Alignas(16) unsigned short \
    gpu_tc_tiles[2 * 2 * GPU_TC_BLOCK_K * (GPU_MAX_DIM + GPU_TC_PAD)]
#endif

static __device__ __forceinline__ void gpu_cp_async_16(void *dst, const void *src,
                                                       unsigned bytes)
{
#ifdef __CUDACC__
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(bytes)
                 : "memory");
#else
    emu_cp_async_16(dst, src, bytes);
#endif
}

static __device__ __forceinline__ void gpu_cp_async_commit(void)
{
#ifdef __CUDACC__
    asm volatile("cp.async.commit_group;" ::: "memory");
#else
    emu_cp_async_commit();
#endif
}

static __device__ __forceinline__ void gpu_cp_async_wait_all_but_one(void)
{
#ifdef __CUDACC__
    asm volatile("cp.async.wait_group 1;" ::: "memory");
#else
    emu_cp_async_wait(1);
#endif
}

static __device__ __forceinline__ void gpu_tc_copy_rows(unsigned short *to,
    const unsigned short *from, const unsigned short *src, unsigned rows_left,
    unsigned bytes, size_t step, const unsigned width, const unsigned apart,
    const bool check_rows)
{
    GPU_UNROLL
    for (unsigned it = 0; it < GPU_TC_BLOCK_K / apart; it++, from += step) {
        const bool inside = bytes && (!check_rows || it * apart < rows_left);
        gpu_cp_async_16(to + it * apart * GPU_TC_PITCH(width), inside ? from : src,
                        inside ? bytes : 0u);
    }
}

static __device__ __forceinline__ void gpu_tc_copy_tile(unsigned short *tile,
    const unsigned short *src, unsigned k0, unsigned nk, unsigned d, const unsigned width,
    const unsigned threads)
{
    const unsigned per_row = width / GPU_TC_CHUNK, apart = threads / per_row;
    const unsigned r0 = threadIdx.x / per_row, c = threadIdx.x % per_row * GPU_TC_CHUNK;
    const unsigned bytes = c < d ? 16u : 0u, rows_left = k0 + r0 < nk ? nk - k0 - r0 : 0u;
    const unsigned short *from = src + (size_t)(k0 + r0) * d + c;
    unsigned short *to = tile + r0 * GPU_TC_PITCH(width) + c;
    if (k0 + GPU_TC_BLOCK_K <= nk)
        gpu_tc_copy_rows(to, from, src, rows_left, bytes, (size_t)apart * d, width, apart,
                         false);
    else
        gpu_tc_copy_rows(to, from, src, rows_left, bytes, (size_t)apart * d, width, apart,
                         true);
}

static __device__ __forceinline__ void gpu_tcf_load_tile(unsigned short *tile,
    const unsigned short *src, unsigned k0, unsigned nk, unsigned d, const unsigned width)
{
    gpu_tc_copy_tile(tile, src, k0, nk, d, width, GPU_TCF_THREADS(width));
}
static __device__ __forceinline__ void gpu_tc_load_tile(unsigned short *tile,
    const unsigned short *src, unsigned k0, unsigned nk, unsigned d, const unsigned width)
{
    gpu_tc_copy_tile(tile, src, k0, nk, d, width, GPU_TC_THREADS);
}

static __device__ __forceinline__ void gpu_ldmatrix_x4(unsigned r[4], const unsigned short *row)
{
#ifdef __CUDACC__
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(row)));
#else
    emu_ldmatrix_x4(r, row, 0);
#endif
}

static __device__ __forceinline__ void gpu_ldmatrix_x4_trans(unsigned r[4],
                                                             const unsigned short *row)
{
#ifdef __CUDACC__
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(row)));
#else
    emu_ldmatrix_x4(r, row, 1);
#endif
}

#ifdef __CUDACC__
#define GPU_LOAD_BF16X2(p) (*(const unsigned *)(p))
#else
#define GPU_LOAD_BF16X2(p) ((unsigned)(p)[0] | (unsigned)(p)[1] << 16)
#endif

static __device__ __forceinline__ void gpu_tc_scores(float s[][4], unsigned qf[][4],
    const unsigned short *ks, unsigned lane, const unsigned width)
{
    const unsigned pitch = GPU_TC_PITCH(width);
    const unsigned short *row = ks + (lane % 8) * pitch + 8 * (lane / 8);
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_K / 8; n++) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        GPU_UNROLL
        for (unsigned kk = 0; kk < width / 16; kk += 2) {
            unsigned b[4];
            gpu_ldmatrix_x4(b, row + 8 * n * pitch + 16 * kk);
            gpu_mma_bf16(s[n], qf[kk], b, s[n]);
            gpu_mma_bf16(s[n], qf[kk + 1], b + 2, s[n]);
        }
    }
}

static __device__ __forceinline__ void gpu_tc_load_q(unsigned qf[][4],
    const unsigned short *q, unsigned row0, unsigned nq, unsigned d, unsigned lane,
    const unsigned width)
{
    GPU_UNROLL
    for (unsigned kk = 0; kk < width / 16; kk++) {
        GPU_UNROLL
        for (unsigned r = 0; r < 4; r++) {
            const unsigned row = row0 + 8 * (r % 2), c = 16 * kk + 2 * (lane % 4) + 8 * (r / 2);
            qf[kk][r] = row < nq && c < d ? GPU_LOAD_BF16X2(q + (size_t)row * d + c) : 0u;
        }
    }
}

#define GPU_LOG2E 1.4426950408889634f

static __device__ __forceinline__ void gpu_tc_mask(float s[][4], gpu_args a, unsigned k0,
                                                   unsigned q0, unsigned row0, unsigned lane)
{
    const bool edge = k0 + GPU_TC_BLOCK_K > a.nk || (a.causal && k0 + GPU_TC_BLOCK_K > q0 + 1);
    if (__builtin_expect(!edge, 1)) return;   /* interior tiles: a branch, not predication */
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_K / 8; n++) {
        GPU_UNROLL
        for (unsigned e = 0; e < 4; e++) {
            const unsigned j = k0 + 8 * n + 2 * (lane % 4) + e % 2, i = row0 + 8 * (e / 2);
            if (j >= a.nk || (a.causal && j > i)) s[n][e] = -INFINITY;
        }
    }
}

static __device__ __forceinline__ float gpu_ex2(float x)
{
#ifdef __CUDACC__
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    const float y = exp2f(x);
    return y < FLT_MIN ? 0.0f : y;   /* .ftz: a result below 2^-126 becomes 0 */
#endif
}

static __device__ __forceinline__ void gpu_tc_softmax_row(gpu_tc_rows *st, float s[][4],
                                                          unsigned h, float c,
                                                          const unsigned width)
{
    float mx = -INFINITY, sum = 0.0f;
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_K / 8; n++) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(st->m[h], mx * c), base = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = gpu_ex2(st->m[h] - base);
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_K / 8; n++) {
        GPU_UNROLL
        for (unsigned e = 2 * h; e < 2 * h + 2; e++) {
            s[n][e] = gpu_ex2(fmaf(s[n][e], c, -base));
            sum += s[n][e];
        }
    }
    st->m[h] = m_new;
    st->l[h] = alpha * st->l[h] + sum;
    GPU_UNROLL
    for (unsigned n = 0; n < width / 8; n++) { st->acc[n][2 * h] *= alpha; st->acc[n][2 * h + 1] *= alpha; }
}

static __device__ __forceinline__ void gpu_tc_add_pv(float acc[][4], float p[][4],
    const unsigned short *vs, unsigned lane, const unsigned width)
{
    const unsigned pitch = GPU_TC_PITCH(width);
    const unsigned short *row = vs + (lane % 8 + 8 * (lane / 8 % 2)) * pitch + 8 * (lane / 16);
    GPU_UNROLL
    for (unsigned kk = 0; kk < GPU_TC_BLOCK_K / 16; kk++) {
        const unsigned a[4] = { gpu_pack_bf16x2(p[2 * kk][0], p[2 * kk][1]),
                                gpu_pack_bf16x2(p[2 * kk][2], p[2 * kk][3]),
                                gpu_pack_bf16x2(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                                gpu_pack_bf16x2(p[2 * kk + 1][2], p[2 * kk + 1][3]) };
        GPU_UNROLL
        for (unsigned n = 0; n < width / 8; n += 2) {
            unsigned b[4];
            gpu_ldmatrix_x4_trans(b, row + 16 * kk * pitch + 8 * n);
            gpu_mma_bf16(acc[n], a, b, acc[n]);
            gpu_mma_bf16(acc[n + 1], a, b + 2, acc[n + 1]);
        }
    }
}

static __device__ __forceinline__ void gpu_tc_fold_tile(gpu_tc_rows *st, gpu_args a,
    unsigned qf[][4], const unsigned short *stage, unsigned k0, unsigned q0,
    unsigned row0, unsigned lane, const unsigned width)
{
    float s[GPU_TC_BLOCK_K / 8][4];
    gpu_tc_scores(s, qf, stage, lane, width);
    gpu_tc_mask(s, a, k0, q0, row0, lane);
    gpu_tc_softmax_row(st, s, 0, a.scale * GPU_LOG2E, width);
    gpu_tc_softmax_row(st, s, 1, a.scale * GPU_LOG2E, width);
    gpu_tc_add_pv(st->acc, s, stage + GPU_TC_BLOCK_K * GPU_TC_PITCH(width), lane, width);
}

static __device__ __forceinline__ void gpu_tc_finish(const gpu_tc_rows *st, gpu_args a,
    unsigned row0, unsigned lane, const unsigned width)
{
    float *out = a.o + (size_t)blockIdx.y * a.nq * a.d;
    GPU_UNROLL
    for (unsigned h = 0; h < 2; h++) {
        float l = st->l[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const unsigned i = row0 + 8 * h;
        if (a.lse && lane % 4 == 0 && i < a.nq)
            a.lse[(size_t)blockIdx.y * a.nq + i] =
                st->m[h] == -INFINITY ? -INFINITY : st->m[h] / GPU_LOG2E + logf(l);
        GPU_UNROLL
        for (unsigned n = 0; n < width / 8; n++) {
            const unsigned c = 8 * n + 2 * (lane % 4);
            if (i >= a.nq || c >= a.d) continue;
            out[(size_t)i * a.d + c] = st->acc[n][2 * h] / l;
            out[(size_t)i * a.d + c + 1] = st->acc[n][2 * h + 1] / l;
        }
    }
}

static __device__ __forceinline__ void gpu_tc_forward_body(gpu_args a, const unsigned width)
{
    GPU_TC_TILES;
    const unsigned lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const unsigned block = a.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const unsigned q0 = block * GPU_TCF_BLOCK_Q(width), row0 = q0 + warp * GPU_TC_ROWS + lane / 4;
    const unsigned pitch = GPU_TC_PITCH(width);
    const size_t head = blockIdx.y;
    const unsigned short *k = a.k16 + head * a.nk * a.d, *v = a.v16 + head * a.nk * a.d;
    const unsigned rows = GPU_TCF_BLOCK_Q(width), key_end = a.causal && q0 + rows < a.nk ? q0 + rows : a.nk;
    const unsigned tiles = (key_end + GPU_TC_BLOCK_K - 1) / GPU_TC_BLOCK_K;
    unsigned qf[GPU_MAX_DIM / 16][4];
    gpu_tc_rows st;
    st.m[0] = st.m[1] = -INFINITY;
    st.l[0] = st.l[1] = 0.0f;
    GPU_UNROLL
    for (unsigned n = 0; n < width / 8; n++) st.acc[n][0] = st.acc[n][1] = st.acc[n][2] = st.acc[n][3] = 0.0f;
    gpu_tc_load_q(qf, a.q16 + head * a.nq * a.d, row0, a.nq, a.d, lane, width);
    gpu_tcf_load_tile(gpu_tc_tiles, k, 0, a.nk, a.d, width);
    gpu_tcf_load_tile(gpu_tc_tiles + GPU_TC_BLOCK_K * pitch, v, 0, a.nk, a.d, width);
    gpu_cp_async_commit();
    for (unsigned j = 0; j < tiles; j++) {
        if (j + 1 < tiles) {
            unsigned short *next = gpu_tc_tiles + ((j + 1) % 2) * 2 * GPU_TC_BLOCK_K * pitch;
            gpu_tcf_load_tile(next, k, (j + 1) * GPU_TC_BLOCK_K, a.nk, a.d, width);
            gpu_tcf_load_tile(next + GPU_TC_BLOCK_K * pitch, v, (j + 1) * GPU_TC_BLOCK_K, a.nk, a.d,
                             width);
        }
        gpu_cp_async_commit();
        gpu_cp_async_wait_all_but_one();
        __syncthreads();
        gpu_tc_fold_tile(&st, a, qf, gpu_tc_tiles + (j % 2) * 2 * GPU_TC_BLOCK_K * pitch,
                         j * GPU_TC_BLOCK_K, q0, row0, lane, width);
        __syncthreads();
    }
    gpu_tc_finish(&st, a, row0, lane, width);
}

__global__ void gpu_tc_forward_64(gpu_args a) { gpu_tc_forward_body(a, 64); }
__global__ void gpu_tc_forward_128(gpu_args a) { gpu_tc_forward_body(a, 128); }

typedef struct { const unsigned short *m; unsigned *out; } gpu_ldmatrix_args;

__global__ void gpu_ldmatrix_check(gpu_ldmatrix_args x)
{
    __shared__ GPU_ALIGN16 unsigned short rows[GPU_WARP * 8];
    const unsigned lane = threadIdx.x % GPU_WARP;
    for (unsigned c = 0; c < 8; c++) rows[lane * 8 + c] = x.m[lane * 8 + c];
    __syncthreads();
    gpu_ldmatrix_x4(x.out + lane * 8, rows + lane * 8);
    gpu_ldmatrix_x4_trans(x.out + lane * 8 + 4, rows + lane * 8);
}

enum { GPU_TCB_DS_PITCH = GPU_TC_BLOCK_Q + GPU_TC_PAD };   /* a row of dS^T, padded */

static inline size_t gpu_tcb_shared_bytes(unsigned width)
{
    return (4 * GPU_TC_BLOCK_K * GPU_TC_PITCH(width) + GPU_TC_BLOCK_K * GPU_TCB_DS_PITCH)
           * sizeof(unsigned short);
}

#ifdef __CUDACC__
#define GPU_TCB_TILES extern __shared__ __align__(16) unsigned short gpu_tcb_tiles[]
#else
#define GPU_TCB_TILES static _Alignas(16) unsigned short gpu_tcb_tiles[4 * GPU_TC_BLOCK_K \
    * (GPU_MAX_DIM + GPU_TC_PAD) + GPU_TC_BLOCK_K * GPU_TCB_DS_PITCH]
#endif

static __device__ __forceinline__ void gpu_tcb_product(float s[][4], const unsigned short *as,
    const unsigned short *bs, unsigned lane, const unsigned width)
{
    const unsigned pitch = GPU_TC_PITCH(width);
    const unsigned short *arow = as + (lane % 8 + 8 * (lane / 8 % 2)) * pitch + 8 * (lane / 16);
    const unsigned short *brow = bs + (lane % 8 + 8 * (lane / 16)) * pitch + 8 * (lane / 8 % 2);
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_Q / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    GPU_UNROLL
    for (unsigned kk = 0; kk < width / 16; kk++) {
        unsigned af[4];
        gpu_ldmatrix_x4(af, arow + 16 * kk);
        GPU_UNROLL
        for (unsigned n = 0; n < GPU_TC_BLOCK_Q / 8; n += 2) {
            unsigned b[4];
            gpu_ldmatrix_x4(b, brow + 8 * n * pitch + 16 * kk);
            gpu_mma_bf16(s[n], af, b, s[n]);
            gpu_mma_bf16(s[n + 1], af, b + 2, s[n + 1]);
        }
    }
}

static __device__ __forceinline__ void gpu_tcb_load_rows(float rows[2][GPU_TC_BLOCK_Q],
                                                         gpu_bwd_args a, unsigned q0)
{
    const unsigned r = threadIdx.x % GPU_TC_BLOCK_Q, i = q0 + r;
    const size_t at = (size_t)blockIdx.y * a.nq + i;
    if (threadIdx.x < GPU_TC_BLOCK_Q) rows[0][r] = i < a.nq ? a.lse[at] * GPU_LOG2E : INFINITY;
    else rows[1][r] = i < a.nq ? a.dsum[at] : 0.0f;
}

static __device__ __forceinline__ void gpu_tcb_probabilities(float s[][4],
    float rows[2][GPU_TC_BLOCK_Q], gpu_bwd_args a, unsigned q0, unsigned k0, unsigned key0,
    unsigned lane)
{
    const float c = a.scale * GPU_LOG2E;
    const bool edge = k0 + GPU_TC_BLOCK_K > a.nk || (a.causal && k0 + GPU_TC_BLOCK_K > q0 + 1);
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_Q / 8; n++) {
        GPU_UNROLL
        for (unsigned e = 0; e < 4; e++) {
            const unsigned col = 8 * n + 2 * (lane % 4) + e % 2, j = key0 + 8 * (e / 2);
            const bool seen = !edge || (j < a.nk && !(a.causal && j > q0 + col));
            s[n][e] = seen ? gpu_ex2(fmaf(s[n][e], c, -rows[0][col])) : 0.0f;
        }
    }
}

static __device__ __forceinline__ void gpu_tcb_ds(float dp[][4], float p[][4],
                                                  float rows[2][GPU_TC_BLOCK_Q], unsigned lane)
{
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_Q / 8; n++) {
        GPU_UNROLL
        for (unsigned e = 0; e < 4; e++)
            dp[n][e] = p[n][e] * (dp[n][e] - rows[1][8 * n + 2 * (lane % 4) + e % 2]);
    }
}

static __device__ __forceinline__ void gpu_store_bf16x2(unsigned short *p, unsigned pair)
{
#ifdef __CUDACC__
    *(unsigned *)p = pair;
#else
    p[0] = (unsigned short)pair;
    p[1] = (unsigned short)(pair >> 16);
#endif
}

static __device__ __forceinline__ void gpu_tcb_store_ds(unsigned short *dst, float ds[][4],
                                                        unsigned warp, unsigned lane)
{
    GPU_UNROLL
    for (unsigned n = 0; n < GPU_TC_BLOCK_Q / 8; n++) {
        GPU_UNROLL
        for (unsigned h = 0; h < 2; h++)
            gpu_store_bf16x2(dst + (16 * warp + lane / 4 + 8 * h) * GPU_TCB_DS_PITCH + 8 * n
                             + 2 * (lane % 4), gpu_pack_bf16x2(ds[n][2 * h], ds[n][2 * h + 1]));
    }
}

static __device__ __forceinline__ void gpu_tcb_fold_tile(float dk[][4], float dv[][4],
    gpu_bwd_args a, unsigned short *tiles, float rows[2][GPU_TC_BLOCK_Q], unsigned q0,
    unsigned k0, unsigned warp, unsigned lane, const unsigned width)
{
    const unsigned pitch = GPU_TC_PITCH(width), tile = GPU_TC_BLOCK_K * pitch;
    const unsigned short *ks = tiles, *vs = ks + tile, *qs = vs + tile, *dos = qs + tile;
    float p[GPU_TC_BLOCK_Q / 8][4], ds[GPU_TC_BLOCK_Q / 8][4];
    gpu_tcb_product(ds, vs + 16 * warp * pitch, dos, lane, width);        /* dP^T = V dO^T */
    gpu_tcb_product(p, ks + 16 * warp * pitch, qs, lane, width);          /* S^T = K Q^T */
    gpu_tcb_probabilities(p, rows, a, q0, k0, k0 + 16 * warp + lane / 4, lane);
    gpu_tc_add_pv(dv, p, dos, lane, width);                            /* dV += P^T dO */
    gpu_tcb_ds(ds, p, rows, lane);
    gpu_tc_add_pv(dk, ds, qs, lane, width);                            /* dK += dS^T Q */
    gpu_tcb_store_ds(tiles + 4 * tile, ds, warp, lane);
}

static __device__ __forceinline__ void gpu_tcb_add_dq(gpu_bwd_args a,
    const unsigned short *dst, const unsigned short *ks, unsigned q0, unsigned warp,
    unsigned lane, const unsigned width)
{
    const unsigned pitch = GPU_TC_PITCH(width), i0 = q0 + 16 * warp + lane / 4;
    const unsigned short *row = ks + (lane % 8 + 8 * (lane / 8 % 2)) * pitch + 8 * (lane / 16);
    float *dq = a.dq + (size_t)blockIdx.y * a.nq * a.d;
    unsigned af[GPU_TC_BLOCK_K / 16][4];
    GPU_UNROLL
    for (unsigned kk = 0; kk < GPU_TC_BLOCK_K / 16; kk++)
        gpu_ldmatrix_x4_trans(af[kk], dst + (16 * kk + lane % 8 + 8 * (lane / 16)) * GPU_TCB_DS_PITCH
                                      + 16 * warp + 8 * (lane / 8 % 2));
    GPU_UNROLL
    for (unsigned n = 0; n < width / 8; n += 2) {
        float acc[2][4] = { { 0.0f, 0.0f, 0.0f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f } };
        GPU_UNROLL
        for (unsigned kk = 0; kk < GPU_TC_BLOCK_K / 16; kk++) {
            unsigned b[4];
            gpu_ldmatrix_x4_trans(b, row + 16 * kk * pitch + 8 * n);
            gpu_mma_bf16(acc[0], af[kk], b, acc[0]);
            gpu_mma_bf16(acc[1], af[kk], b + 2, acc[1]);
        }
        GPU_UNROLL
        for (unsigned e = 0; e < 8; e++) {
            const unsigned i = i0 + 8 * (e % 4 / 2), c = 8 * (n + e / 4) + 2 * (lane % 4) + e % 2;
            if (i < a.nq && c < a.d) atomicAdd(&dq[(size_t)i * a.d + c], a.scale * acc[e / 4][e % 4]);
        }
    }
}

static __device__ __forceinline__ void gpu_tcb_store_keys(float *out, float acc[][4],
    gpu_bwd_args a, unsigned key0, float factor, unsigned lane, const unsigned width)
{
    GPU_UNROLL
    for (unsigned h = 0; h < 2; h++) {
        const unsigned j = key0 + 8 * h;
        GPU_UNROLL
        for (unsigned n = 0; n < width / 8; n++) {
            const unsigned c = 8 * n + 2 * (lane % 4);
            if (j >= a.nk || c >= a.d) continue;
            out[(size_t)j * a.d + c] = factor * acc[n][2 * h];
            out[(size_t)j * a.d + c + 1] = factor * acc[n][2 * h + 1];
        }
    }
}

static __device__ __forceinline__ void gpu_cp_async_wait_all(void)
{
#ifdef __CUDACC__
    asm volatile("cp.async.wait_all;" ::: "memory");
#else
    emu_cp_async_wait(0);
#endif
}

static __device__ __forceinline__ void gpu_tc_backward_body(gpu_bwd_args a,
                                                            const unsigned width)
{
    GPU_TCB_TILES;
    __shared__ float rows[2][GPU_TC_BLOCK_Q];   /* the tile's L log2(e) and D */
    const unsigned lane = threadIdx.x % GPU_WARP, warp = threadIdx.x / GPU_WARP;
    const unsigned k0 = blockIdx.x * GPU_TC_BLOCK_K, first = a.causal ? k0 : 0;
    const unsigned tile = GPU_TC_BLOCK_K * GPU_TC_PITCH(width);
    const size_t head = blockIdx.y;
    float dk[GPU_MAX_DIM / 8][4], dv[GPU_MAX_DIM / 8][4];
    GPU_UNROLL
    for (unsigned n = 0; n < width / 8; n++) {
        GPU_UNROLL
        for (unsigned e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;
    }
    if (first < a.nq) {
        gpu_tc_load_tile(gpu_tcb_tiles, a.k16 + head * a.nk * a.d, k0, a.nk, a.d, width);
        gpu_tc_load_tile(gpu_tcb_tiles + tile, a.v16 + head * a.nk * a.d, k0, a.nk, a.d, width);
    }
    for (unsigned q0 = first; q0 < a.nq; q0 += GPU_TC_BLOCK_Q) {
        __syncthreads();
        gpu_tc_load_tile(gpu_tcb_tiles + 2 * tile, a.q16 + head * a.nq * a.d, q0, a.nq, a.d, width);
        gpu_tc_load_tile(gpu_tcb_tiles + 3 * tile, a.dout16 + head * a.nq * a.d, q0, a.nq, a.d, width);
        gpu_cp_async_commit();
        gpu_tcb_load_rows(rows, a, q0);
        gpu_cp_async_wait_all();
        __syncthreads();
        gpu_tcb_fold_tile(dk, dv, a, gpu_tcb_tiles, rows, q0, k0, warp, lane, width);
        __syncthreads();
        gpu_tcb_add_dq(a, gpu_tcb_tiles + 4 * tile, gpu_tcb_tiles, q0, warp, lane, width);
    }
    const unsigned key0 = k0 + 16 * warp + lane / 4;
    gpu_tcb_store_keys(a.dk + head * a.nk * a.d, dk, a, key0, a.scale, lane, width);
    gpu_tcb_store_keys(a.dv + head * a.nk * a.d, dv, a, key0, 1.0f, lane, width);
}

__global__ void gpu_tc_backward_64(gpu_bwd_args a) { gpu_tc_backward_body(a, 64); }
__global__ void gpu_tc_backward_128(gpu_bwd_args a) { gpu_tc_backward_body(a, 128); }

static inline gpu_shape gpu_tcb_shape(gpu_bwd_args a)
{
    gpu_shape s = { gpu_blocks_for(a.nk, GPU_TC_BLOCK_K), a.heads, GPU_TC_THREADS };
    return s;
}

#endif
