/* timing.c — the monotonic clock and medians. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include "harness/memory.h"
#include "harness/timing.h"
double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median_of(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, compare_doubles);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

spread spread_of(double *x, size_t n)
{
    double median = median_of(x, n);   /* sorts x */
    if (n == 0)
        return (spread){ NAN, NAN, NAN };
    return (spread){ median, x[0], x[n - 1] };
}

double time_median(void (*fn)(void *ctx), void *ctx, int warmup, int repeats)
{
    return time_spread(fn, ctx, warmup, repeats).median;
}

static double monotonic_clock(void *ctx)
{
    (void)ctx;
    return now_seconds();
}

spread time_spread(void (*fn)(void *ctx), void *ctx, int warmup, int repeats)
{
    return time_spread_on(monotonic_clock, fn, ctx, warmup, repeats);
}

spread time_spread_on(double (*clock)(void *ctx), void (*fn)(void *ctx), void *ctx,
                      int warmup, int repeats)
{
    size_t n = repeats < 1 ? 1 : (size_t)repeats;
    double *times = bookkeeping_alloc(n * sizeof *times);
    for (int i = 0; i < warmup; i++)
        fn(ctx);
    for (size_t i = 0; i < n; i++) {
        double start = clock(ctx);
        fn(ctx);
        times[i] = clock(ctx) - start;
    }
    spread s = spread_of(times, n);
    free(times);
    return s;
}

