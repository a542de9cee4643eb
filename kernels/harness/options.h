/* options.h — command-line options and usage errors. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_OPTIONS_H
#define FA_OPTIONS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "harness/fail.h"
#include "harness/printf_check.h"
typedef enum { OPT_FLAG, OPT_INT, OPT_DOUBLE, OPT_STRING } opt_kind;
typedef struct {
    const char *name;       /* "seq" for --seq */
    opt_kind    kind;
    void       *target;     /* bool*, long*, double*, const char** */
    double      min, max;   /* range for OPT_INT and OPT_DOUBLE if min < max */
    const char *meta;       /* "N", "FILE" ... shown by --help */
    const char *help;
} option;
void options_parse(int argc, char **argv, const char *program, const char *summary,
                   const option opts[], size_t count);
/* flushes standard output; a write error there exits 2 with one line */
void finish_stdout(const char *program);

typedef enum { FA_ISA_SCALAR, FA_ISA_AVX2, FA_ISA_AVX512 } fa_isa;
/* VALUE of FA_ISA as a cap: NULL or "" caps nothing (FA_ISA_AVX512); false if unknown */
bool        fa_isa_parse(const char *value, fa_isa *cap);
/* the environment's cap; an unknown FA_ISA is one line naming PROGRAM (none if
   NULL) and exit status 2 */
fa_isa      fa_isa_cap(const char *program);
bool        fa_isa_on_cpu(fa_isa isa);      /* AVX2 means AVX2 and FMA; AVX-512, AVX512F */
bool        fa_isa_allowed(const char *program, fa_isa isa);   /* on the CPU, under the cap */
fa_isa      fa_isa_widest(const char *program);   /* the widest allowed one */
const char *fa_isa_name(fa_isa isa);        /* "scalar", "avx2", "avx512": FA_ISA's spelling */
#endif
