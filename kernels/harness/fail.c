/* fail.c — the one way out, and memory that is not counted. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>   /* program_invocation_short_name */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "harness/fail.h"
_Noreturn void bookkeeping_out_of_memory(void)
{
    fprintf(stderr, "%s: error: out of memory\n", program_invocation_short_name);
    exit(2);
}

void *bookkeeping_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        bookkeeping_out_of_memory();
    return p;
}

void fputs_escaped(const char *text, FILE *f)
{
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        if (*c == '\n') fputs("\\n", f);
        else if (*c == '\t') fputs("\\t", f);
        else if (*c < 0x20 || *c == 0x7f) fprintf(f, "\\x%02x", *c);
        else fputc(*c, f);
    }
}

_Noreturn static void die_line_v(const char *program, const char *fmt, va_list args)
{
    char *message;
    if (vasprintf(&message, fmt, args) < 0)
        bookkeeping_out_of_memory();
    if (program != NULL)
        fprintf(stderr, "%s: ", program);
    fputs("error: ", stderr);
    fputs_escaped(message, stderr);
    fputc('\n', stderr);
    free(message);
    exit(2);
}

_Noreturn void die_usage(const char *program, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    die_line_v(program, fmt, args);
}

_Noreturn void die_line(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    die_line_v(program_invocation_short_name, fmt, args);
}

