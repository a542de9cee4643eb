/* timing.h — the monotonic clock and medians. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_TIMING_H
#define FA_TIMING_H
#include <stddef.h>
double now_seconds(void);                     /* CLOCK_MONOTONIC */
/* runs fn(ctx) warmup times, then repeats times; the median in seconds */
double time_median(void (*fn)(void *ctx), void *ctx, int warmup, int repeats);
/* the median of n numbers, sorting them in place; NaN when n is 0 */
double median_of(double *x, size_t n);

typedef struct { double median, min, max; } spread;
/* the median, least and greatest of n numbers, sorting them in place;
   NaNs when n is 0 */
spread spread_of(double *x, size_t n);
/* like time_median, with the fastest and slowest of the timed repeats */
spread time_spread(void (*fn)(void *ctx), void *ctx, int warmup, int repeats);
/* time_spread on another clock: clock(ctx) in seconds (the tests' clock) */
spread time_spread_on(double (*clock)(void *ctx), void (*fn)(void *ctx), void *ctx,
                      int warmup, int repeats);

#endif
