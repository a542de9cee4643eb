/* harness.h — tangled from chapters/harness.nw; edit that file instead. */
#ifndef HARNESS_H
#define HARNESS_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define HARNESS_PRINTF(fmt_index, first_arg) \
    __attribute__((format(printf, fmt_index, first_arg)))
#else
#define HARNESS_PRINTF(fmt_index, first_arg)
#endif

typedef enum {
    RNG_SCALAR,   /* PyTorch's portable kernel: libm, angle in double */
    RNG_AVX2      /* its x86-64 AVX2/AVX-512 kernel: avx_mathfun polynomials */
} rng_path;
const char *rng_path_name(rng_path path);
rng_path    rng_path_named(const char *program, const char *name);
#define RNG_OPTION(name) { "rng", OPT_STRING, (name), 0, 0, "PATH", \
    "draw normals as PyTorch's scalar or x86 avx2 kernel does" }

typedef struct {
    uint32_t state[624];
    int      index;            /* next word to temper; 624 = twist first */
    bool     has_next_normal;  /* PyTorch's cached second Box–Muller value */
    double   next_normal;
    rng_path path;             /* which of PyTorch's kernels torch_randn follows */
} mt19937;
void     mt_seed(mt19937 *g, uint32_t seed);
void     mt_seed_path(mt19937 *g, uint32_t seed, rng_path path);
uint32_t mt_next(mt19937 *g);
float    mt_uniform(mt19937 *g);
void     torch_randn(mt19937 *g, float *out, size_t count);
void     torch_rand(mt19937 *g, float *out, size_t count);

void  *fa_alloc(size_t bytes);
void   fa_free(void *p);                 /* NULL is fine */
size_t fa_bytes_live(void);
size_t fa_bytes_peak(void);
void   fa_reset_peak(void);              /* peak := live */
size_t fa_physical_memory(void);         /* bytes of RAM; 0 if unknown */
size_t process_peak_rss(void);           /* VmHWM in bytes; 0 if unknown */
size_t fa_mul(size_t a, size_t b);       /* a*b, or exit 2 on overflow */

typedef struct {
    float *data;
    int    ndim;        /* 1 to 4 */
    size_t shape[4];    /* entries past ndim are 1 */
} tensor;
tensor tensor_new(int ndim, const size_t shape[]);
void   tensor_free(tensor *t);
size_t tensor_count(const tensor *t);

int    npy_read(const char *path, tensor *out, char *err, size_t errlen);
int    npy_write(const char *path, const tensor *t, char *err, size_t errlen);
tensor npy_read_or_exit(const char *program, const char *path);
void   npy_write_or_exit(const char *program, const char *path, const tensor *t);

const char *fmt_num(char buf[32], double x);
const char *fmt_pct(char buf[32], double fraction);
const char *fmt_int(char buf[32], long long v);
const char *fmt_bytes(char buf[32], double bytes);

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
void die_usage(const char *program, const char *fmt, ...) HARNESS_PRINTF(2, 3);

double now_seconds(void);                     /* CLOCK_MONOTONIC */
/* runs fn(ctx) warmup times, then repeats times; the median in seconds */
double time_median(void (*fn)(void *ctx), void *ctx, int warmup, int repeats);
/* the median of n numbers, sorting them in place; NaN when n is 0 */
double median_of(double *x, size_t n);

/* opens DIR/NAME for writing, creating DIR and its parents;
   exits 2 with a message on failure */
FILE *data_file(const char *dir, const char *name);

/* runs main_fn(argc, argv) with standard output captured; returns what it
   printed, NUL-terminated (malloc'd: free it) */
char *capture_stdout_of(int (*main_fn)(int, char **), int argc, char **argv);
/* the value of fact KEY in a report's JSON, unescaped (malloc'd: free
   it), or NULL when there is no such fact */
char *json_fact(const char *json, const char *key);
/* does the report's JSON hold fact KEY with exactly this VALUE? */
bool json_fact_is(const char *json, const char *key, const char *value);

#endif
