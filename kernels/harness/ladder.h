/* ladder.h — measuring this machine's memory ladder and arithmetic peak,
   and the data files that carry the results from chapter 1 to chapter 8.
   Tangled from chapters/app_ladder.nw; edit that file, not this one. */
#ifndef LADDER_H
#define LADDER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/harness.h"

enum {
    LADDER_MAX_LEVELS  = 8,     /* caches plus DRAM                   */
    LADDER_MAX_POINTS  = 64,    /* working sets in one sweep          */
    LADDER_MAX_THREADS = 256,
    LADDER_MAX_REPEATS = 64,
    LADDER_FMA_CHAINS  = 12,    /* independent accumulators per core  */
    LADDER_PATH_MAX    = 4096
};
#define LADDER_CURVE_FILE   "ch01_ladder.dat"
#define LADDER_MACHINE_FILE "ch01_machine.txt"

#define LADDER_FMA_MUL 0.999f
#define LADDER_FMA_ADD 0.001f
#define LADDER_FMA_START(chain) (0.01f * (float)(chain))

typedef struct {
    size_t bytes;                 /* working set per thread              */
    double gbs_one, gbs_all;      /* read bandwidth: one core, all cores */
    double latency_ns;            /* dependent load, one core            */
    spread gbs_one_range, gbs_all_range, latency_range;  /* the same
                                     medians, with the least and greatest repeat */
} ladder_point;

typedef struct {
    char   name[8];               /* "L1d", "L2", "L3", "DRAM"           */
    size_t capacity;              /* bytes as the OS reports; 0 for DRAM */
    size_t probe;                 /* working set the values come from    */
    double gbs_one, gbs_all, latency_ns;
    spread gbs_one_range, gbs_all_range, latency_range;
} ladder_level;

typedef struct {
    char   cpu_model[128];
    int    cpus;              /* CPUs this process may run on              */
    int    threads;           /* threads of the all-core measurements      */
    double nominal_mhz;       /* "cpu MHz" of /proc/cpuinfo, 0 if none     */
    double max_mhz;           /* the frequency driver's maximum, 0 if none */
    int    virtual_machine;   /* 1 when the CPU flags name a hypervisor    */
    char   fma_isa[16];       /* "AVX-512", "AVX2+FMA", "scalar"           */
    int    fma_lanes;         /* fp32 lanes per FMA instruction            */
    double fma_gflops_one, fma_gflops_all;
    spread fma_one_range, fma_all_range;
    double load_before, load_after;  /* 1-minute load average, /proc/loadavg */
    double others_cpu;        /* share of all CPUs' time other processes took */
    int    busy;              /* 1 when the quiet check failed                */
    int    attempts;          /* measurements made to find a quiet one        */
    int    nlevels;
    ladder_level level[LADDER_MAX_LEVELS];
    int    npoints;
    ladder_point point[LADDER_MAX_POINTS];
} ladder_profile;

void   ladder_cpu_model(char *buf, size_t size);
double ladder_nominal_mhz(void);             /* 0 when absent              */
double ladder_max_mhz(void);                 /* cpufreq's maximum, 0 if none */
bool   ladder_virtual(void);                 /* "hypervisor" among the flags */
int    ladder_cpus(void);                    /* CPUs in our affinity mask  */
size_t ladder_parse_size(const char *text);  /* "48K" -> 49152, 0 if bad   */
int    ladder_caches(ladder_level out[], int max);  /* small first */
const char *ladder_format_size(char buf[32], size_t bytes);  /* "48 KiB" */

typedef void (*ladder_work)(void *ctx, int thread);
/* runs work(ctx, i) on threads 0..threads-1, one per core, started together;
   returns the seconds from the first start to the last finish */
double ladder_team_run(int threads, ladder_work work, void *ctx);

typedef struct {
    unsigned char *base;
    size_t slice;            /* bytes per thread */
    int    threads;
} ladder_buffer;

ladder_buffer ladder_buffer_new(size_t slice, int threads);
void ladder_buffer_free(ladder_buffer *b);

double ladder_median(const double *x, int n);
/* read bandwidth in GB/s of `threads` cores, each reading its own `bytes`:
   the median of the repeats, and with their range */
double ladder_read_gbs(const ladder_buffer *b, size_t bytes, int threads,
                       int repeats);
spread ladder_read_spread(const ladder_buffer *b, size_t bytes, int threads,
                          int repeats);

/* read bandwidth in GB/s of `threads` cores reading `count` arrays of
   `bytes` each (64-byte aligned), each thread its own part of every one,
   with the same kernel: the median of the repeats, and their range */
spread ladder_read_arrays_spread(const void *const *arrays, int count, size_t bytes,
                                 int threads, int repeats);

/* nanoseconds per dependent load over a random cycle through `bytes`
   (one core) */
double ladder_chase_ns(ladder_buffer *b, size_t bytes, long steps,
                       int repeats, mt19937 *g);
spread ladder_chase_spread(ladder_buffer *b, size_t bytes, long steps,
                           int repeats, mt19937 *g);

void ladder_fma_chains(long iterations, float out[LADDER_FMA_CHAINS]);
const char *ladder_fma_isa(void);
int    ladder_fma_lanes(void);
/* floating-point operations of `threads` cores running ladder_fma_chains */
double ladder_fma_flops(long iterations, int threads);
/* fp32 GFLOP/s of `threads` cores running ladder_fma_chains */
double ladder_fma_gflops(int threads, long iterations, int repeats);
spread ladder_fma_spread(int threads, long iterations, int repeats);

/* fills the probe and the values of p->level[] from p->point[], which
   must be sorted by size */
void ladder_pick_levels(ladder_profile *p);

/* writes DIR/LADDER_CURVE_FILE and DIR/LADDER_MACHINE_FILE
   (exits 2 on failure) */
void ladder_write(const char *dir, const ladder_profile *p);
/* reads both back; 0, or -1 with a one-line reason in err */
int  ladder_read(const char *dir, ladder_profile *p, char *err, size_t errlen);

typedef struct {
    double wall;   /* seconds on the monotonic clock                    */
    double busy;   /* CPU seconds all CPUs have worked since boot       */
    double self;   /* CPU seconds this process has used, all threads    */
    double load;   /* 1-minute load average                             */
} ladder_sample;

typedef struct {
    double load_before, load_after;
    double others;  /* share of the machine's CPU time others took, 0..1 */
} ladder_noise;

ladder_sample ladder_sample_now(void);
ladder_noise  ladder_noise_between(ladder_sample before, ladder_sample after);
/* busy: others took more than LADDER_BUSY_OTHERS of the machine, or the
   repeats spread (slowest over fastest) by more than spread_limit */
bool ladder_busy(ladder_noise n, double spread_ratio, double spread_limit);
/* one sentence for the prose: how busy the machine was, how widely the
   repeats of one timing spread (max/min; NaN: not said), and what follows */
const char *ladder_noise_note(char *buf, size_t size, const char *what,
                              ladder_noise n, double spread_ratio, bool busy);
/* "ran 1.92 times as fast as", "took 1.31 times as long as", or within
   5% either way "ran about as fast (1.02 times) as" */
const char *ladder_compare_times(char *buf, size_t size, double seconds, double reference);

typedef struct {
    size_t sizes[LADDER_MAX_POINTS];
    int    count;
    int    threads, repeats;
    int    attempts;              /* measurements while the machine is busy */
    long   chase_steps, fma_iterations;
    uint32_t seed;
} ladder_plan;

enum { SWEEP_FIRST = 4 << 10, SWEEP_FIRST_QUICK = 16 << 10,
       SWEEP_DENSE_END = 64 << 20 };

void plan_sizes(ladder_plan *plan, size_t max_bytes, bool quick);
void measure_ladder(const ladder_plan *plan, ladder_profile *p, bool progress);
void report_machine(report *r, const ladder_profile *p, const ladder_plan *plan);
void report_sweep(report *r, const ladder_profile *p);
void report_ladder(report *r, const ladder_profile *p);
void report_ladder_ratios(report *r, const ladder_profile *p);
void measure_ladder_quietly(const ladder_plan *plan, int attempts, ladder_profile *p,
                            bool progress);
/* 0: read from path, or from $FA_MACHINE when path is NULL, or from
   dir/LADDER_MACHINE_FILE when dir has one; 1: none of them, measured now;
   -1: the file named is unreadable (reason in err) */
int    ladder_profile_for(const char *path, const char *dir, int threads, bool levels,
                          ladder_profile *p, char *err, size_t errlen);
/* the peak of `threads` cores: NaN where the profile has no such team */
double ladder_peak_for(const ladder_profile *p, int threads);
/* the same as chapter 1 prints it, median (min–max), or "-" */
const char *ladder_peak_text(char buf[64], const ladder_profile *p, int threads);
/* the recorded benchmarks at path: a folder's bench-*.txt in the order of
   their names, or path itself; at most max names, the count returned */
size_t ladder_recorded_files(const char *path, char (*names)[LADDER_PATH_MAX], size_t max);
#endif
