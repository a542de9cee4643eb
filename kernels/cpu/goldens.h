/* goldens.h — tangled from chapters/app_torch.nw; edit that file instead. */
#ifndef GOLDENS_H
#define GOLDENS_H
#include "harness/harness.h"
enum { GOLDEN_MAX_WINDOWS = 4 };
typedef struct {
    size_t draws, values, identical, one_by_one;
    size_t sdpa_cases, sdpa_values;
    double sdpa_vs_ours;     /* max |O_torch - O_tiled| */
    double sdpa_vs_exact;    /* max |O_torch - O_float64| */
    size_t windows;
    long   window_w[GOLDEN_MAX_WINDOWS];
    double window_torch[GOLDEN_MAX_WINDOWS], window_ours[GOLDEN_MAX_WINDOWS];
} golden_tally;

bool goldens_check(const char *file, rng_path path, bool full,
                   golden_tally *t, char *err, size_t errlen);
#endif
