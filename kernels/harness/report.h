/* report.h — reports and tables. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_REPORT_H
#define FA_REPORT_H
#include <stdbool.h>
#include <stdio.h>
#include "harness/format.h"
#include "harness/printf_check.h"
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
