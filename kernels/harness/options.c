/* options.c — command-line options and usage errors. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/fail.h"
#include "harness/format.h"
#include "harness/options.h"
static const char *option_meta(const option *o)
{
    static const char *const fallback[] = { "", "N", "X", "TEXT" };
    return o->kind == OPT_FLAG ? "" : o->meta ? o->meta : fallback[o->kind];
}

static void option_details(char *out, size_t len, const option *o)
{
    bool ranged = o->min < o->max;
    out[0] = '\0';
    if (o->kind == OPT_INT && ranged)
        snprintf(out, len, " [%.0f to %.0f; default %ld]", o->min, o->max,
                 *(long *)o->target);
    else if (o->kind == OPT_INT)
        snprintf(out, len, " [default %ld]", *(long *)o->target);
    else if (o->kind == OPT_DOUBLE && ranged)
        snprintf(out, len, " [%g to %g; default %g]", o->min, o->max, *(double *)o->target);
    else if (o->kind == OPT_DOUBLE)
        snprintf(out, len, " [default %g]", *(double *)o->target);
    else if (o->kind == OPT_STRING && *(const char **)o->target != NULL)
        snprintf(out, len, " [default %s]", *(const char **)o->target);
}

static size_t usage_width(const option opts[], size_t count)
{
    size_t width = strlen("--help");
    for (size_t i = 0; i < count; i++) {
        size_t meta = strlen(option_meta(&opts[i]));
        size_t w = 2 + strlen(opts[i].name) + (meta ? 1 + meta : 0);
        width = w > width ? w : width;
    }
    return width;
}

static void print_option_line(const option *o, int width)
{
    char left[128], details[160];
    const char *meta = option_meta(o);
    snprintf(left, sizeof left, "--%s%s%s", o->name, meta[0] ? " " : "", meta);
    option_details(details, sizeof details, o);
    printf("  %-*s  %s%s\n", width, left, o->help ? o->help : "", details);
}

static void print_usage(const char *program, const char *summary,
                        const option opts[], size_t count)
{
    int width = (int)usage_width(opts, count);
    printf("usage: %s [options]\n", program);
    if (summary != NULL)
        printf("%s\n", summary);
    printf("\noptions:\n");
    for (size_t i = 0; i < count; i++)
        print_option_line(&opts[i], width);
    printf("  %-*s  %s\n", width, "--help", "show this help and exit");
}

void finish_stdout(const char *program)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout))
        die_usage(program, "cannot write the output: %s",
                  strerror(errno ? errno : EIO));
}

static bool starts_with_space(const char *value)
{
    return isspace((unsigned char)value[0]) != 0;
}

static void set_int_option(const char *program, const option *o, const char *value)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || starts_with_space(value))
        die_usage(program, "'%s' is not a number for --%s", value, o->name);
    if (o->min < o->max && (errno == ERANGE || v < o->min || v > o->max))
        die_usage(program, "--%s must be between %.0f and %.0f (got %s)",
                  o->name, o->min, o->max, value);
    if (errno == ERANGE)
        die_usage(program, "--%s is out of range (got %s)", o->name, value);
    *(long *)o->target = v;
}

static void set_double_option(const char *program, const option *o, const char *value)
{
    char *end;
    double v = strtod(value, &end);
    if (end == value || *end != '\0' || starts_with_space(value) || isnan(v))
        die_usage(program, "'%s' is not a number for --%s", value, o->name);
    if (o->min < o->max && !(v >= o->min && v <= o->max))
        die_usage(program, "--%s must be between %g and %g (got %s)",
                  o->name, o->min, o->max, value);
    *(double *)o->target = v;
}

static void require_standard_streams(const char *program)
{
    if (fcntl(2, F_GETFD) < 0)
        exit(2);
    if (fcntl(0, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != 0)
        exit(2);
    if (fcntl(1, F_GETFD) < 0)
        die_usage(program, "standard output is closed");
}

static const option *find_option(const option opts[], size_t count,
                                 const char *name, size_t length)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(opts[i].name) == length && strncmp(opts[i].name, name, length) == 0)
            return &opts[i];
    return NULL;
}

void options_parse(int argc, char **argv, const char *program, const char *summary,
                   const option opts[], size_t count)
{
    require_standard_streams(program);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_usage(program, summary, opts, count);
            finish_stdout(program);
            exit(0);
        }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            die_usage(program, "unexpected argument '%s'", arg);
        const char *equals = strchr(arg, '=');
        size_t length = equals ? (size_t)(equals - arg - 2) : strlen(arg + 2);
        const option *o = find_option(opts, count, arg + 2, length);
        if (o == NULL)
            die_usage(program, "unknown option '%.*s'", (int)length + 2, arg);
        if (o->kind == OPT_FLAG) {
            if (equals != NULL)
                die_usage(program, "option --%s takes no value", o->name);
            *(bool *)o->target = true;
            continue;
        }
        const char *value = equals ? equals + 1 : NULL;
        if (value == NULL && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            value = argv[++i];
        if (value == NULL)
            die_usage(program, "option --%s needs a value", o->name);
        if (value[0] == '\0')
            die_usage(program, "option --%s needs a value, not an empty string", o->name);
        if (o->kind == OPT_INT)
            set_int_option(program, o, value);
        else if (o->kind == OPT_DOUBLE)
            set_double_option(program, o, value);
        else
            *(const char **)o->target = value;
    }
}

static const char *const FA_ISA_NAMES[] = { "scalar", "avx2", "avx512" };

const char *fa_isa_name(fa_isa isa) { return FA_ISA_NAMES[isa]; }

bool fa_isa_parse(const char *value, fa_isa *cap)
{
    if (value == NULL || value[0] == '\0') return *cap = FA_ISA_AVX512, true;
    for (int i = FA_ISA_SCALAR; i <= FA_ISA_AVX512; i++)
        if (strcmp(value, FA_ISA_NAMES[i]) == 0) return *cap = (fa_isa)i, true;
    return false;
}

fa_isa fa_isa_cap(const char *program)
{
    const char *value = getenv("FA_ISA");
    fa_isa cap;
    if (!fa_isa_parse(value, &cap))
        die_usage(program, "FA_ISA must be scalar, avx2 or avx512, not '%s'", value);
    return cap;
}

bool fa_isa_on_cpu(fa_isa isa)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (isa == FA_ISA_AVX512) return __builtin_cpu_supports("avx512f");
    if (isa == FA_ISA_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return isa == FA_ISA_SCALAR;
}

bool fa_isa_allowed(const char *program, fa_isa isa)
{
    return isa <= fa_isa_cap(program) && fa_isa_on_cpu(isa);
}

fa_isa fa_isa_widest(const char *program)
{
    fa_isa isa = FA_ISA_AVX512;
    while (isa > FA_ISA_SCALAR && !fa_isa_allowed(program, isa)) isa--;
    return isa;
}

