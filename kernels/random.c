/* random.c — the PyTorch-identical random generator. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <math.h>
#include "random.h"
void mt_seed(mt19937 *g, uint32_t seed)
{
    g->state[0] = seed;
    for (uint32_t i = 1; i < 624; i++) {
        uint32_t prev = g->state[i - 1];
        g->state[i] = 1812433253u * (prev ^ (prev >> 30)) + i;
    }
    g->index = 624;
    g->has_next_normal = false;
    g->next_normal = 0.0;
}

static void mt_twist(mt19937 *g)
{
    for (int i = 0; i < 624; i++) {
        uint32_t y = (g->state[i] & 0x80000000u)
                   | (g->state[(i + 1) % 624] & 0x7fffffffu);
        uint32_t mixed = g->state[(i + 397) % 624] ^ (y >> 1);
        g->state[i] = (y & 1u) ? mixed ^ 0x9908b0dfu : mixed;
    }
    g->index = 0;
}

uint32_t mt_next(mt19937 *g)
{
    if (g->index >= 624)
        mt_twist(g);
    uint32_t y = g->state[g->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

float mt_uniform(mt19937 *g)
{
    return (float)(mt_next(g) & 0xFFFFFFu) * 0x1p-24f;
}

static double mt_uniform_double(mt19937 *g)
{
    uint64_t high = mt_next(g);
    uint64_t low = mt_next(g);
    uint64_t word = (high << 32) | low;
    return (double)(word & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}

static double torch_normal_double(mt19937 *g)
{
    if (g->has_next_normal) {
        g->has_next_normal = false;
        return g->next_normal;
    }
    double u1 = mt_uniform_double(g);
    double u2 = mt_uniform_double(g);
    double radius = sqrt(-2.0 * log1p(-u2));
    double theta = 2.0 * M_PI * u1;
    g->next_normal = radius * sin(theta);
    g->has_next_normal = true;
    return radius * cos(theta);
}

static void torch_randn_short(mt19937 *g, float *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = (float)(torch_normal_double(g) + 0.0);
}

static void box_muller_16(float *x)
{
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - x[j];
        float u2 = x[j + 8];
        float radius = sqrtf(-2.0f * logf(u1));
        float theta = (float)(2.0 * M_PI * (double)u2);
        x[j] = radius * cosf(theta) + 0.0f;
        x[j + 8] = radius * sinf(theta) + 0.0f;
    }
}

void torch_randn(mt19937 *g, float *out, size_t count)
{
    if (count < 16) {
        torch_randn_short(g, out, count);
        return;
    }
    torch_rand(g, out, count);
    for (size_t i = 0; i + 16 <= count; i += 16)
        box_muller_16(out + i);
    if (count % 16 != 0) {
        float *tail = out + count - 16;
        torch_rand(g, tail, 16);
        box_muller_16(tail);
    }
}

void torch_rand(mt19937 *g, float *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = mt_uniform(g);
}

