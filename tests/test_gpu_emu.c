/* test_gpu_emu.c — the emulation of CUDA's execution model, on its own.
   Tangled from chapters/app_gpu_emulation.nw. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include "gpu/gpu_emu_cuda.h"
static __global__ void write_own_index(const void *args)
{
    int *out = *(int *const *)args;
    const unsigned in_block = threadIdx.y * blockDim.x + threadIdx.x;
    const unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    const unsigned threads = blockDim.x * blockDim.y;
    out[block * threads + in_block] += (int)(block * threads + in_block) + 1;
}

Test(emulation, every_thread_of_every_block_runs_once)
{
    int *out = calloc(384, sizeof *out);
    emu_counts c = { 0 };
    emu_launch((emu_dim3){ 3, 2, 1 }, (emu_dim3){ 32, 2, 1 }, write_own_index, &out, &c);
    for (int i = 0; i < 384; i++) cr_assert_eq(out[i], i + 1, "element %d", i);
    cr_assert(c.launches == 1 && c.blocks == 6 && c.threads == 64);
    cr_assert(c.block_barriers == 0 && c.warp_meetings == 0);
    free(out);
}

static __global__ void mirror_through_shared_memory(const void *args)
{
    int *out = *(int *const *)args;
    __shared__ int slot[128];
    const unsigned t = threadIdx.x;
    slot[t] = (int)(blockIdx.x * 1000 + t);
    __syncthreads();
    out[blockIdx.x * 128 + t] = slot[127 - t];
    __syncthreads();
}

Test(emulation, syncthreads_orders_shared_memory)
{
    int *out = calloc(4 * 128, sizeof *out);
    emu_counts c = { 0 };
    emu_launch((emu_dim3){ 4, 1, 1 }, (emu_dim3){ 128, 1, 1 },
               mirror_through_shared_memory, &out, &c);
    for (int b = 0; b < 4; b++)
        for (int t = 0; t < 128; t++)
            cr_assert_eq(out[b * 128 + t], b * 1000 + 127 - t, "block %d thread %d", b, t);
    cr_assert_eq(c.block_barriers, 8);
    free(out);
}

static __global__ void shuffle_every_mask(const void *args)
{
    float *out = *(float *const *)args;
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int k = 1; k < 32; k++)
        out[(warp * 32 + lane) * 32 + (unsigned)k] =
            __shfl_xor_sync(0xffffffffu, (float)(warp * 32 + lane), k);
}

Test(emulation, shuffle_xor_reads_the_partner_lane)
{
    float *out = calloc(64 * 32, sizeof *out);
    emu_counts c = { 0 };
    emu_launch((emu_dim3){ 1, 1, 1 }, (emu_dim3){ 64, 1, 1 }, shuffle_every_mask, &out, &c);
    for (int t = 0; t < 64; t++)
        for (int k = 1; k < 32; k++)
            cr_assert_eq(out[t * 32 + k], (float)((t & ~31) | ((t % 32) ^ k)),
                         "thread %d mask %d", t, k);
    cr_assert_eq(c.warp_meetings, 62);
    free(out);
}

static __global__ void load_four_matrices(const void *args)
{
    unsigned *out = *(unsigned *const *)args;
    __shared__ _Alignas(16) unsigned short rows[32 * 16];
    const unsigned lane = threadIdx.x;
    for (unsigned c = 0; c < 16; c++)
        rows[lane * 16 + c] = (unsigned short)(c < 8 ? 64 * (lane / 8) + 8 * (lane % 8) + c + 1
                                                     : 0xdead);
    __syncthreads();
    emu_ldmatrix_x4(out + 8 * lane, rows + 16 * lane, 0);
    emu_ldmatrix_x4(out + 8 * lane + 4, rows + 16 * lane, 1);
}

static unsigned pair_of(unsigned i, unsigned r0, unsigned c0, unsigned r1, unsigned c1)
{
    return (64 * i + 8 * r0 + c0 + 1) | (64 * i + 8 * r1 + c1 + 1) << 16;
}

Test(emulation, ldmatrix_gives_each_lane_the_documented_pairs)
{
    unsigned *out = calloc(32 * 8, sizeof *out);
    emu_counts c = { 0 };
    emu_launch((emu_dim3){ 1, 1, 1 }, (emu_dim3){ 32, 1, 1 }, load_four_matrices, &out, &c);
    for (unsigned lane = 0; lane < 32; lane++)
        for (unsigned i = 0; i < 4; i++) {
            const unsigned g = lane / 4, t = lane % 4;
            cr_assert_eq(out[8 * lane + i], pair_of(i, g, 2 * t, g, 2 * t + 1),
                         "lane %u register %u", lane, i);
            cr_assert_eq(out[8 * lane + 4 + i], pair_of(i, 2 * t, g, 2 * t + 1, g),
                         "lane %u register %u, .trans", lane, i);
        }
    cr_assert(out[8 * 5] == (11u | 12u << 16) && out[8 * 5 + 4] == (18u | 26u << 16));
    cr_assert(out[8 * 31 + 3] == (255u | 256u << 16) && out[8 * 31 + 7] == (248u | 256u << 16));
    cr_assert(c.ldmatrix == 2 && c.warp_meetings == 4);
    free(out);
}

