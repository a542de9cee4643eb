/* gpu_emu_cuda.h — CUDA's names for C code run by gpu_emu.c.
   Tangled from chapters/app_gpu_emulation.nw. */
#ifndef GPU_EMU_CUDA_H
#define GPU_EMU_CUDA_H
#include "gpu/gpu_emu.h"
extern _Thread_local emu_dim3 emu_thread_idx, emu_block_idx, emu_block_dim, emu_grid_dim;
#define atomicAdd(address, value) emu_atomic_add_float(address, value)
#define threadIdx emu_thread_idx
#define blockIdx  emu_block_idx
#define blockDim  emu_block_dim
#define gridDim   emu_grid_dim
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() emu_syncthreads()
#define __syncwarp(mask) emu_syncwarp(mask)
#define __shfl_xor_sync(mask, value, lane_mask) emu_shfl_xor_float(mask, value, lane_mask)
#endif
