/* gpu_emu.h — an emulation of CUDA's execution model on POSIX threads.
   Tangled from chapters/app_gpu_emulation.nw. */
#ifndef GPU_EMU_H
#define GPU_EMU_H
#include <stddef.h>
enum { EMU_WARP_SIZE = 32, EMU_MAX_THREADS = 1024 };
float emu_atomic_add_float(float *address, float value);   /* atomicAdd */

typedef struct { unsigned x, y, z; } emu_dim3;
typedef struct {
    size_t launches, blocks, threads;   /* kernels launched, blocks run, threads started */
    size_t block_barriers;              /* meetings of a block at __syncthreads */
    size_t warp_meetings;               /* meetings of a warp: shuffles and __syncwarp */
    size_t ldmatrix;                    /* ldmatrix instructions, one per warp each */
    size_t atomics;                     /* atomicAdd calls */
} emu_counts;
typedef void emu_kernel_fn(const void *args);
/* runs kernel(args) as a grid of blocks on OS threads; adds to counts (may be NULL) */
void emu_launch(emu_dim3 grid, emu_dim3 block, emu_kernel_fn *kernel,
                const void *args, emu_counts *counts);

void  emu_syncthreads(void);                     /* __syncthreads() */
void  emu_syncwarp(unsigned mask);               /* __syncwarp(mask) */
float emu_shfl_xor_float(unsigned mask, float value, int lane_mask);

/* mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, for the whole warp */
void emu_mma_bf16_m16n8k16(float d[4], const unsigned a[4], const unsigned b[2],
                           const float c[4]);

/* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, for the whole warp: row is
   this lane's 16-byte row, of matrix lane / 8 */
void emu_ldmatrix_x4(unsigned r[4], const unsigned short *row, int trans);

void emu_cp_async_16(void *dst, const void *src, unsigned bytes); /* cp.async.cg, 16 B */
void emu_cp_async_commit(void);                                   /* cp.async.commit_group */
void emu_cp_async_wait(unsigned groups);                          /* cp.async.wait_group */

#endif
