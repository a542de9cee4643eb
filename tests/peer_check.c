/* peer_check.c — tangled from chapters/app_torch.nw; edit that file instead.
   usage: peer_check DIR, where DIR holds make_goldens.py DIR --full */
#include "cpu/goldens.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static bool print_draw_row(const char *dir, rng_path ours, const char *kernel,
                           golden_tally *t)
{
    char file[4096], err[256], values[32], same[32];
    snprintf(file, sizeof file, "%s/%s.txt", dir, kernel);
    if (!goldens_check(file, ours, true, t, err, sizeof err)) {
        printf("  %-7s %-7s  not compared: %s\n", rng_path_name(ours), kernel, err);
        return false;
    }
    printf("  %-7s %-7s  %12s %12s  %7.3f%%  (%s one by one)\n", rng_path_name(ours), kernel,
           fmt_int(values, (long long)t->values), fmt_int(same, (long long)t->identical),
           100.0 * (double)t->identical / (double)t->values,
           t->one_by_one == t->values ? "all" : "not all");
    return strcmp(rng_path_name(ours), kernel) != 0 || t->identical == t->values;
}

static bool print_attention(const golden_tally *t)
{
    const double tolerance = 1e-5;
    printf("attention: %zu cases, %zu outputs: max |torch - ours| %.2e, "
           "max |torch - float64| %.2e (tolerance %.0e)\n", t->sdpa_cases,
           t->sdpa_values, t->sdpa_vs_ours, t->sdpa_vs_exact, tolerance);
    for (size_t i = 0; i < t->windows; i++)
        printf("chapter 5, window %ld: torch %.6f, ours %.6f\n", t->window_w[i],
               t->window_torch[i], t->window_ours[i]);
    return t->sdpa_cases > 0 && t->sdpa_vs_ours < tolerance
           && t->sdpa_vs_exact < tolerance;
}

int main(int argc, char **argv)
{
    if (argc != 2) die_usage("peer_check", "usage: peer_check DIR");
    static const char *const kernels[] = { "scalar", "avx2" };
    golden_tally t, scalar = { 0 };
    bool ok = true;
    printf("peer-check: our generator and attention against PyTorch, %s\n", argv[1]);
    for (int k = 0; k < 2; k++) {
        char file[4096], line[512] = "";
        snprintf(file, sizeof file, "%s/%s.txt", argv[1], kernels[k]);
        FILE *f = fopen(file, "r");
        if (f && fgets(line, sizeof line, f) && fgets(line, sizeof line, f))
            printf("%s", line);
        if (f) fclose(f);
    }
    printf("  ours    torch          values    identical    share\n");
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 2; p++) {
            ok = print_draw_row(argv[1], p ? RNG_AVX2 : RNG_SCALAR, kernels[k], &t) && ok;
            if (k == 0 && p == 0) scalar = t;
        }
    ok = print_attention(&scalar) && ok;
    printf("backward: %s\n", access("ch09_backward", X_OK) == 0
           ? "./ch09_backward exists, but peer-check does not compare gradients yet"
           : "skipped (./ch09_backward is not built)");
    return ok ? 0 : 1;
}
