/* random.c — the PyTorch-identical random generator. Tangled from chapters/app_torch.nw; edit that file. */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>
#include "harness/fail.h"
#include "harness/random.h"
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
    g->path = RNG_SCALAR;
}

void mt_seed_path(mt19937 *g, uint32_t seed, rng_path path)
{
    mt_seed(g, seed);
    g->path = path;
}

const char *rng_path_name(rng_path path)
{
    return path == RNG_AVX2 ? "avx2" : "scalar";
}

rng_path rng_path_named(const char *program, const char *name)
{
    if (strcmp(name, "scalar") != 0 && strcmp(name, "avx2") != 0)
        die_usage(program, "--rng must be scalar or avx2 (got '%s')", name);
    return strcmp(name, "avx2") == 0 ? RNG_AVX2 : RNG_SCALAR;
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

static uint32_t float_bits(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

static float float_from_bits(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static float cephes_log_reduce(float u, float *exponent)
{
    uint32_t bits = float_bits(u);
    float m = float_from_bits((bits & ~0x7f800000u) | float_bits(0.5f));
    bool low = m < 0.707106781186547524f;
    *exponent = (float)((int32_t)(bits >> 23) - 0x7f) + 1.0f;
    *exponent -= low ? 1.0f : 0.0f;
    return (m - 1.0f) + (low ? m : 0.0f);
}

static float cephes_logf(float u)
{
    static const float p[9] = { 7.0376836292E-2f, -1.1514610310E-1f,
        1.1676998740E-1f, -1.2420140846E-1f, 1.4249322787E-1f,
        -1.6668057665E-1f, 2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f };
    float k, x = cephes_log_reduce(u, &k), z = x * x, y = p[0];
    for (int i = 1; i < 9; i++)
        y = fmaf(y, x, p[i]);
    y = fmaf(y * x, z, k * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    return fmaf(k, 0.693359375f, x + y);
}

typedef struct { float x; bool sine_is_poly_s; uint32_t sine_sign, cosine_sign; } octant;

static octant cephes_reduce(float angle)
{
    float magnitude = fabsf(angle);
    int32_t j = ((int32_t)(magnitude * 1.27323954473516f) + 1) & ~1;
    float y = (float)j, x = fmaf(y, -0.78515625f, magnitude);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    uint32_t flip = (uint32_t)(j & 4) << 29;
    return (octant){ .x = x, .sine_is_poly_s = (j & 2) == 0,
                     .sine_sign = (float_bits(angle) & 0x80000000u) ^ flip,
                     .cosine_sign = (uint32_t)(~(j - 2) & 4) << 29 };
}

static void cephes_polynomials(float x, float *poly_c, float *poly_s)
{
    float z = x * x;
    float c = fmaf(fmaf(2.443315711809948E-005f, z, -1.388731625493765E-003f),
                   z, 4.166664568298827E-002f);
    *poly_c = fmaf(c * z, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f), z, -1.6666654611E-1f);
    *poly_s = fmaf(s * z, x, x);
}

static void cephes_sincosf(float angle, float *sine, float *cosine)
{
    octant o = cephes_reduce(angle);
    float c, s;
    cephes_polynomials(o.x, &c, &s);
    float s_part = o.sine_is_poly_s ? s : 0.0f, c_part = o.sine_is_poly_s ? 0.0f : c;
    *sine = float_from_bits(float_bits(c_part + s_part) ^ o.sine_sign);
    *cosine = float_from_bits(float_bits((c - c_part) + (s - s_part)) ^ o.cosine_sign);
}

static void box_muller_16_avx2(float *x)
{
    const float two_pi = (float)(2.0 * M_PI);
    for (int j = 0; j < 8; j++) {
        float radius = sqrtf(-2.0f * cephes_logf(1.0f - x[j]));
        float sine, cosine;
        cephes_sincosf(two_pi * x[j + 8], &sine, &cosine);
        x[j] = fmaf(radius * cosine, 1.0f, 0.0f);
        x[j + 8] = fmaf(radius * sine, 1.0f, 0.0f);
    }
}

static void box_muller_16_on(rng_path path, float *x)
{
    if (path == RNG_AVX2)
        box_muller_16_avx2(x);
    else
        box_muller_16(x);
}

void torch_randn(mt19937 *g, float *out, size_t count)
{
    if (count < 16) {
        torch_randn_short(g, out, count);
        return;
    }
    torch_rand(g, out, count);
    for (size_t i = 0; i + 16 <= count; i += 16)
        box_muller_16_on(g->path, out + i);
    if (count % 16 != 0) {
        float *tail = out + count - 16;
        torch_rand(g, tail, 16);
        box_muller_16_on(g->path, tail);
    }
}

void torch_rand(mt19937 *g, float *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = mt_uniform(g);
}

