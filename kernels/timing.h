/* timing.h — the monotonic clock and medians. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_TIMING_H
#define FA_TIMING_H
#include <stddef.h>
double now_seconds(void);                     /* CLOCK_MONOTONIC */
/* runs fn(ctx) warmup times, then repeats times; the median in seconds */
double time_median(void (*fn)(void *ctx), void *ctx, int warmup, int repeats);
/* the median of n numbers, sorting them in place; NaN when n is 0 */
double median_of(double *x, size_t n);

#endif
