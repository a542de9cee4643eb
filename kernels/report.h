/* report.h — number formats, reports and tables. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_REPORT_H
#define FA_REPORT_H
#include <stdbool.h>
#include <stdio.h>
#include "printf_check.h"
const char *fmt_num(char buf[32], double x);
const char *fmt_pct(char buf[32], double fraction);
const char *fmt_int(char buf[32], long long v);
const char *fmt_bytes(char buf[32], double bytes);

/* x to sig significant digits, never in exponent form: 266.2 -> "270" */
const char *fmt_sig(char buf[32], double x, int sig);
/* "median (min–max)" at the precision the range supports; "-" for NaN */
const char *fmt_spread(char buf[64], double median, double min, double max);

typedef struct report report;
typedef struct table table;
report *report_new(const char *program, bool json);
void    report_fact(report *r, const char *key, const char *formatted);
void    report_factf(report *r, const char *key, const char *fmt, ...)
        HARNESS_PRINTF(3, 4);
void    report_fact_labeled(report *r, const char *key, const char *label,
                            const char *formatted);      /* text: "label: value" */
table  *report_table(report *r, const char *name, const char *title,
                     const char *const columns[]);       /* NULL-terminated */
void    table_row(table *t, const char *const cells[]);  /* one per column */
void    table_rowf(table *t, const char *fmt, ...)       /* cells split at '|' */
        HARNESS_PRINTF(2, 3);
void    report_note(report *r, const char *text);
void    report_finish(report *r, FILE *out);             /* prints and frees */

#endif
