/* format.h — numbers as the book prints them. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_FORMAT_H
#define FA_FORMAT_H
const char *fmt_num(char buf[32], double x);
const char *fmt_pct(char buf[32], double fraction);
const char *fmt_int(char buf[32], long long v);
const char *fmt_bytes(char buf[32], double bytes);

/* x to sig significant digits, never in exponent form: 266.2 -> "270" */
const char *fmt_sig(char buf[32], double x, int sig);
/* "median (min–max)" at the precision the range supports; "-" for NaN */
const char *fmt_spread(char buf[64], double median, double min, double max);

#endif
