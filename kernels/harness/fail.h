/* fail.h — the one way out, and memory that is not counted. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_FAIL_H
#define FA_FAIL_H
#include <stddef.h>
#include <stdio.h>
#include "harness/printf_check.h"
#ifdef __cplusplus
#define FA_NORETURN [[noreturn]]
#else
#define FA_NORETURN _Noreturn
#endif
FA_NORETURN void die_usage(const char *program, const char *fmt, ...) HARNESS_PRINTF(2, 3);
FA_NORETURN void die_line(const char *fmt, ...) HARNESS_PRINTF(1, 2);   /* "PROGRAM: error: ..." */
void fputs_escaped(const char *text, FILE *f);   /* control characters as \n, \x1b */
FA_NORETURN void bookkeeping_out_of_memory(void);   /* prints one line, exits 2 */
void *bookkeeping_alloc(size_t bytes);   /* malloc, uncounted; exits 2 if it fails */
#endif
