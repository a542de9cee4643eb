/* format.c — numbers as the book prints them. Tangled from chapters/harness.nw; edit that file. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "harness/format.h"
const char *fmt_num(char buf[32], double x)
{
    if (x == 0.0)
        x = 0.0;                      /* turns -0.0 into 0.0 */
    double magnitude = fabs(x);
    bool scientific = x != 0.0 && (magnitude < 1e-3 || magnitude >= 1e6);
    snprintf(buf, 32, scientific ? "%.3e" : "%.4f", x);
    return buf;
}

const char *fmt_pct(char buf[32], double fraction)
{
    double percent = nearbyint(fraction * 100.0);
    if (percent == 0.0)
        percent = 0.0;                /* no "-0%" */
    snprintf(buf, 32, "%.0f%%", percent);
    return buf;
}

const char *fmt_int(char buf[32], long long v)
{
    unsigned long long magnitude = v < 0 ? 0ull - (unsigned long long)v
                                         : (unsigned long long)v;
    char digits[24], *out = buf + (v < 0);
    int n = snprintf(digits, sizeof digits, "%llu", magnitude);
    buf[0] = '-';                     /* overwritten below when v >= 0 */
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *out++ = ',';
        *out++ = digits[i];
    }
    *out = '\0';
    return buf;
}

const char *fmt_bytes(char buf[32], double bytes)
{
    static const char *const units[] = { "MiB", "GiB", "TiB" };
    double value = bytes / (1024.0 * 1024.0);
    int unit = 0;
    while (unit < 2 && value >= 1024.0) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buf, 32, "%.1f %s", value, units[unit]);
    return buf;
}

static int decimals_for(double x, int sig)
{
    int magnitude = x == 0.0 || !isfinite(x) ? 0 : (int)floor(log10(fabs(x)));
    return sig - 1 - magnitude;
}

static double round_at(double x, int decimals)
{
    double quantum = pow(10.0, -decimals);
    return round(x / quantum) * quantum;
}

const char *fmt_sig(char buf[32], double x, int sig)
{
    int decimals = decimals_for(x, sig);
    snprintf(buf, 32, "%.*f", decimals > 0 ? decimals : 0, round_at(x, decimals));
    return buf;
}

const char *fmt_spread(char buf[64], double median, double min, double max)
{
    if (isnan(median))
        return strcpy(buf, "-");
    int sig = fabs(max - min) < 0.01 * fabs(median) ? 3 : 2;
    int decimals = decimals_for(median, sig), shown = decimals > 0 ? decimals : 0;
    snprintf(buf, 64, "%.*f (%.*f–%.*f)", shown, round_at(median, decimals),
             shown, round_at(min, decimals), shown, round_at(max, decimals));
    return buf;
}

