/* gpu_emu.c — CUDA's execution model on POSIX threads.
   Tangled from chapters/app_gpu_emulation.nw. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "gpu/gpu_emu_cuda.h"
typedef struct {
    unsigned a[EMU_WARP_SIZE][4], b[EMU_WARP_SIZE][2];
    const unsigned short *rows[EMU_WARP_SIZE];   /* ldmatrix: each lane's row address */
} emu_mma_exchange;

typedef struct {
    pthread_barrier_t meet;
    float slot[2][EMU_WARP_SIZE];       /* shuffle exchange, two rows used in turn */
    emu_mma_exchange mma;               /* the fragments of one mma.sync */
    size_t meetings, ldmatrix;
} emu_warp;

typedef struct {
    emu_dim3 grid, block;
    emu_kernel_fn *kernel;
    const void *args;
    pthread_barrier_t block_meet;
    size_t block_meetings;
    size_t atomics;                     /* atomicAdd calls, summed after the join */
    emu_warp *warps;
} emu_launch_state;

typedef struct {
    emu_launch_state *launch;
    unsigned linear, lane;            /* index in the block, index in the warp */
    emu_warp *warp;
    int phase;                        /* row of slots for the next shuffle */
    size_t atomics;                   /* this thread's atomicAdd calls */
} emu_thread;

static _Thread_local emu_thread *emu_self;
_Thread_local emu_dim3 emu_thread_idx, emu_block_idx, emu_block_dim, emu_grid_dim;

float emu_atomic_add_float(float *address, float value)
{
    uint32_t *bits = (uint32_t *)(void *)address, seen, sum_bits;
    float before, sum;
    seen = __atomic_load_n(bits, __ATOMIC_RELAXED);
    do {
        memcpy(&before, &seen, sizeof before);
        sum = before + value;
        memcpy(&sum_bits, &sum, sizeof sum_bits);
    } while (!__atomic_compare_exchange_n(bits, &seen, sum_bits, false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    emu_self->atomics++;
    return before;
}

void emu_syncthreads(void)
{
    emu_launch_state *L = emu_self->launch;
    if (pthread_barrier_wait(&L->block_meet) == PTHREAD_BARRIER_SERIAL_THREAD)
        L->block_meetings++;
}

static void warp_meet(emu_warp *w)
{
    if (pthread_barrier_wait(&w->meet) == PTHREAD_BARRIER_SERIAL_THREAD) w->meetings++;
}

static void require_full_warp(unsigned mask, const char *what)
{
    if (mask == 0xffffffffu) return;
    fprintf(stderr, "emulation: %s with mask %#x: only full warps are emulated\n",
            what, mask);
    exit(1);
}

void emu_syncwarp(unsigned mask)
{
    require_full_warp(mask, "__syncwarp");
    warp_meet(emu_self->warp);
}

float emu_shfl_xor_float(unsigned mask, float value, int lane_mask)
{
    emu_thread *t = emu_self;
    require_full_warp(mask, "__shfl_xor_sync");
    t->warp->slot[t->phase][t->lane] = value;
    warp_meet(t->warp);
    const float other = t->warp->slot[t->phase][(t->lane ^ (unsigned)lane_mask) % EMU_WARP_SIZE];
    t->phase ^= 1;
    return other;
}

static void *emu_thread_main(void *arg)
{
    emu_thread *t = arg;
    emu_launch_state *L = t->launch;
    emu_self = t;
    emu_block_dim = L->block;
    emu_grid_dim = L->grid;
    emu_thread_idx = (emu_dim3){ t->linear % L->block.x, t->linear / L->block.x % L->block.y,
                                 t->linear / (L->block.x * L->block.y) };
    for (unsigned z = 0; z < L->grid.z; z++)
        for (unsigned y = 0; y < L->grid.y; y++)
            for (unsigned x = 0; x < L->grid.x; x++) {
                emu_block_idx = (emu_dim3){ x, y, z };
                L->kernel(L->args);
                pthread_barrier_wait(&L->block_meet);
            }
    return NULL;
}

static float bf16_to_float(unsigned bits)
{
    const uint32_t u = (uint32_t)(bits & 0xffffu) << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void gather_operands(const emu_mma_exchange *x, float a[16][16], float b[16][8])
{
    for (unsigned lane = 0; lane < EMU_WARP_SIZE; lane++) {
        const unsigned g = lane / 4, t = lane % 4;
        for (unsigned r = 0; r < 4; r++)
            for (unsigned h = 0; h < 2; h++)
                a[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + h] = bf16_to_float(x->a[lane][r] >> (16 * h));
        for (unsigned r = 0; r < 2; r++)
            for (unsigned h = 0; h < 2; h++)
                b[2 * t + 8 * r + h][g] = bf16_to_float(x->b[lane][r] >> (16 * h));
    }
}

void emu_mma_bf16_m16n8k16(float d[4], const unsigned a[4], const unsigned b[2],
                           const float c[4])
{
    emu_thread *t = emu_self;
    float full_a[16][16], full_b[16][8];
    const unsigned g = t->lane / 4, q = t->lane % 4;
    memcpy(t->warp->mma.a[t->lane], a, 4 * sizeof *a);
    memcpy(t->warp->mma.b[t->lane], b, 2 * sizeof *b);
    warp_meet(t->warp);
    gather_operands(&t->warp->mma, full_a, full_b);
    warp_meet(t->warp);
    for (unsigned e = 0; e < 4; e++) {
        const unsigned row = g + 8 * (e / 2), col = 2 * q + e % 2;
        float sum = c[e];
        for (unsigned k = 0; k < 16; k++) sum += full_a[row][k] * full_b[k][col];
        d[e] = sum;
    }
}

static void require_aligned_row(const unsigned short *row)
{
    if ((uintptr_t)row % 16 == 0) return;
    fprintf(stderr, "emulation: ldmatrix row %p is not 16-byte aligned\n", (const void *)row);
    exit(1);
}

void emu_ldmatrix_x4(unsigned r[4], const unsigned short *row, int trans)
{
    emu_thread *t = emu_self;
    const unsigned g = t->lane / 4, q = t->lane % 4;
    require_aligned_row(row);
    t->warp->mma.rows[t->lane] = row;
    warp_meet(t->warp);
    for (unsigned i = 0; i < 4; i++) {
        const unsigned short *const *m = t->warp->mma.rows + 8 * i;   /* matrix i's rows */
        r[i] = trans ? (unsigned)m[2 * q][g] | (unsigned)m[2 * q + 1][g] << 16
                     : (unsigned)m[g][2 * q] | (unsigned)m[g][2 * q + 1] << 16;
    }
    if (t->lane == 0) t->warp->ldmatrix++;
    warp_meet(t->warp);
}

enum { EMU_COPIES_IN_FLIGHT = 64 };
typedef struct { void *dst; const void *src; unsigned bytes; size_t group; } emu_copy;
static _Thread_local emu_copy emu_copies[EMU_COPIES_IN_FLIGHT];
static _Thread_local unsigned emu_copies_pending;
static _Thread_local size_t emu_groups_committed;

void emu_cp_async_16(void *dst, const void *src, unsigned bytes)
{
    if (emu_copies_pending == EMU_COPIES_IN_FLIGHT || bytes > 16) {
        fprintf(stderr, "emulation: cp.async of %u bytes, %u in flight\n", bytes,
                emu_copies_pending);
        exit(1);
    }
    memset(dst, 0xff, 16);                  /* the copy may land from now on */
    emu_copies[emu_copies_pending++] = (emu_copy){ dst, src, bytes, emu_groups_committed };
}

void emu_cp_async_commit(void) { emu_groups_committed++; }

void emu_cp_async_wait(unsigned groups)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < emu_copies_pending; i++) {
        const emu_copy c = emu_copies[i];
        if (c.group + groups < emu_groups_committed) {
            memcpy(c.dst, c.src, c.bytes);
            memset((char *)c.dst + c.bytes, 0, 16 - c.bytes);
        } else emu_copies[kept++] = c;
    }
    emu_copies_pending = kept;
}

static void require_launch_shape(emu_dim3 grid, emu_dim3 block, unsigned threads);
static void run_threads(emu_launch_state *L, unsigned threads);
void emu_launch(emu_dim3 grid, emu_dim3 block, emu_kernel_fn *kernel,
                const void *args, emu_counts *counts)
{
    const unsigned threads = block.x * block.y * block.z, warps = threads / EMU_WARP_SIZE;
    require_launch_shape(grid, block, threads);
    emu_launch_state L = { .grid = grid, .block = block, .kernel = kernel, .args = args,
                           .warps = fa_alloc(warps * sizeof(emu_warp)) };
    pthread_barrier_init(&L.block_meet, NULL, threads);
    for (unsigned w = 0; w < warps; w++) {
        pthread_barrier_init(&L.warps[w].meet, NULL, EMU_WARP_SIZE);
        L.warps[w].meetings = L.warps[w].ldmatrix = 0;
    }
    run_threads(&L, threads);
    if (counts) {
        counts->launches++;
        counts->blocks += (size_t)grid.x * grid.y * grid.z;
        counts->threads += threads;
        counts->block_barriers += L.block_meetings;
        for (unsigned w = 0; w < warps; w++) counts->warp_meetings += L.warps[w].meetings;
        for (unsigned w = 0; w < warps; w++) counts->ldmatrix += L.warps[w].ldmatrix;
        counts->atomics += L.atomics;
    }
    for (unsigned w = 0; w < warps; w++) pthread_barrier_destroy(&L.warps[w].meet);
    pthread_barrier_destroy(&L.block_meet);
    fa_free(L.warps);
}

static void require_launch_shape(emu_dim3 grid, emu_dim3 block, unsigned threads)
{
    if (threads == 0 || threads > EMU_MAX_THREADS || threads % EMU_WARP_SIZE != 0 ||
        block.x == 0 || block.y == 0 || block.z == 0 ||
        grid.x == 0 || grid.y == 0 || grid.z == 0) {
        fprintf(stderr, "emulation: cannot launch %ux%ux%u blocks of %ux%ux%u threads\n",
                grid.x, grid.y, grid.z, block.x, block.y, block.z);
        exit(1);
    }
}

static void run_threads(emu_launch_state *L, unsigned threads)
{
    emu_thread *team = fa_alloc(threads * sizeof *team);
    pthread_t *ids = fa_alloc(threads * sizeof *ids);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);
    for (unsigned t = 0; t < threads; t++) {
        team[t] = (emu_thread){ .launch = L, .linear = t, .lane = t % EMU_WARP_SIZE,
                                .warp = &L->warps[t / EMU_WARP_SIZE], .phase = 0 };
        if (pthread_create(&ids[t], &attr, emu_thread_main, &team[t]) != 0) {
            fprintf(stderr, "emulation: cannot start thread %u of %u\n", t, threads);
            exit(1);
        }
    }
    for (unsigned t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    for (unsigned t = 0; t < threads; t++) L->atomics += team[t].atomics;
    pthread_attr_destroy(&attr);
    fa_free(ids);
    fa_free(team);
}

