/* workers.c — tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
#define _GNU_SOURCE   /* sched_getaffinity, sched_getcpu, pthread_attr_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include "harness/harness.h"
#include "cpu/workers.h"
void workers_start(pthread_t *ids, int n, worker_fn *fn, void *args, size_t arg_size,
                   const char *who)
{
    cpu_set_t allowed;
    const bool place = n > 1 && sched_getaffinity(0, sizeof allowed, &allowed) == 0
                       && CPU_COUNT(&allowed) >= n;
    const int here = place ? sched_getcpu() : -1;
    int cpu = -1;
    for (int t = 1; t < n; t++) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (place) {
            do cpu++; while (cpu < CPU_SETSIZE && (!CPU_ISSET(cpu, &allowed) || cpu == here));
            if (cpu < CPU_SETSIZE) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpu, &one);
                pthread_attr_setaffinity_np(&attr, sizeof one, &one);
            }
        }
        if (pthread_create(&ids[t], &attr, fn, (char *)args + (size_t)t * arg_size) != 0)
            die_line("%s: cannot start thread %d of %d", who, t + 1, n);
        pthread_attr_destroy(&attr);
    }
}
void workers_join(const pthread_t *ids, int n)
{
    for (int t = 1; t < n; t++) pthread_join(ids[t], NULL);
}
struct workers_crew {
    pthread_mutex_t lock;
    pthread_cond_t posted_cond, finished_cond;
    atomic_ulong posted;          /* rounds posted so far */
    atomic_int finished;          /* members done with the round */
    worker_fn *fn;
    char *args;
    size_t arg_size;
    bool closing;
    int size;
    pthread_t *ids;
    int *cpu;                     /* member t's processor; -1: not bound */
    cpu_set_t allowed;            /* the process's processors at the opening */
    struct crew_member *members;
    void **scratch;
    size_t *scratch_bytes;
};
typedef struct crew_member { workers_crew *crew; int t; } crew_member;
enum { CREW_SPIN_NS = 100000 };

static long long monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
static bool counter_ready(const workers_crew *c, bool of_posts, unsigned long value)
{
    return of_posts ? atomic_load_explicit(&c->posted, memory_order_acquire) != value
                    : (unsigned long)atomic_load_explicit(&c->finished,
                                                          memory_order_acquire) == value;
}
static void crew_wait(workers_crew *c, bool of_posts, unsigned long value)
{
    const long long until = monotonic_ns() + CREW_SPIN_NS;
    while (!counter_ready(c, of_posts, value)) {
        if (monotonic_ns() > until) break;
        sched_yield();
    }
    pthread_mutex_lock(&c->lock);
    while (!counter_ready(c, of_posts, value))
        pthread_cond_wait(of_posts ? &c->posted_cond : &c->finished_cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}
static void *crew_member_main(void *arg)
{
    const crew_member *m = arg;
    workers_crew *c = m->crew;
    for (unsigned long seen = 0;; seen++) {
        crew_wait(c, true, seen);
        if (c->closing) return NULL;
        c->fn(c->args + (size_t)m->t * c->arg_size);
        pthread_mutex_lock(&c->lock);
        if (atomic_fetch_add_explicit(&c->finished, 1, memory_order_acq_rel) + 1
            == c->size - 1)
            pthread_cond_signal(&c->finished_cond);
        pthread_mutex_unlock(&c->lock);
    }
}
static void crew_post(workers_crew *c, worker_fn *fn, void *args, size_t arg_size)
{
    c->fn = fn;
    c->args = args;
    c->arg_size = arg_size;
    atomic_store_explicit(&c->finished, 0, memory_order_relaxed);
    pthread_mutex_lock(&c->lock);
    atomic_fetch_add_explicit(&c->posted, 1, memory_order_release);
    pthread_cond_broadcast(&c->posted_cond);
    pthread_mutex_unlock(&c->lock);
}
static void crew_step_aside(workers_crew *c)
{
    const int here = sched_getcpu();
    for (int t = 1; t < c->size; t++) {
        if (c->cpu[t] < 0 || c->cpu[t] != here) continue;
        cpu_set_t free_cpus = c->allowed, one;
        for (int u = 1; u < c->size; u++)
            if (c->cpu[u] >= 0) CPU_CLR(c->cpu[u], &free_cpus);
        CPU_CLR(here, &free_cpus);
        for (int p = 0; p < CPU_SETSIZE; p++) {
            if (!CPU_ISSET(p, &free_cpus)) continue;
            CPU_ZERO(&one);
            CPU_SET(p, &one);
            if (pthread_setaffinity_np(c->ids[t], sizeof one, &one) == 0) c->cpu[t] = p;
            break;
        }
    }
}
void workers_run(workers_crew *crew, int n, worker_fn *fn, void *args, size_t arg_size,
                 const char *who)
{
    if (n <= 1) { fn(args); return; }
    if (crew_for(crew, n)) {
        crew_step_aside(crew);
        crew_post(crew, fn, args, arg_size);
        fn(args);
        crew_wait(crew, false, (unsigned long)(n - 1));
        return;
    }
    pthread_t *ids = fa_alloc(fa_mul((size_t)n, sizeof *ids));
    workers_start(ids, n, fn, args, arg_size, who);
    fn(args);
    workers_join(ids, n);
    fa_free(ids);
}
workers_crew *crew_for(workers_crew *crew, int n)
{
    return crew && (n <= 1 || crew->size == n) ? crew : NULL;
}
workers_crew *crew_open(int n, const char *who)
{
    if (n < 1) n = 1;
    workers_crew *c = fa_alloc(sizeof *c);
    c->size = n;
    c->ids = fa_alloc(fa_mul((size_t)n, sizeof *c->ids));
    c->scratch = fa_alloc(fa_mul((size_t)n, sizeof *c->scratch));
    c->scratch_bytes = fa_alloc(fa_mul((size_t)n, sizeof *c->scratch_bytes));
    crew_member *members = fa_alloc(fa_mul((size_t)n, sizeof *members));
    for (int t = 0; t < n; t++) members[t] = (crew_member){ c, t };
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->posted_cond, NULL);
    pthread_cond_init(&c->finished_cond, NULL);
    atomic_init(&c->posted, 0);
    atomic_init(&c->finished, 0);
    c->members = members;
    workers_start(c->ids, n, crew_member_main, members, sizeof *members, who);
    c->cpu = fa_alloc(fa_mul((size_t)n, sizeof *c->cpu));
    if (sched_getaffinity(0, sizeof c->allowed, &c->allowed) != 0) CPU_ZERO(&c->allowed);
    for (int t = 0; t < n; t++) {
        cpu_set_t mine;
        c->cpu[t] = -1;
        if (t > 0 && pthread_getaffinity_np(c->ids[t], sizeof mine, &mine) == 0
            && CPU_COUNT(&mine) == 1)
            for (int p = 0; p < CPU_SETSIZE; p++)
                if (CPU_ISSET(p, &mine)) c->cpu[t] = p;
    }
    return c;
}
void crew_close(workers_crew *crew)
{
    if (!crew) return;
    crew->closing = true;
    crew_post(crew, NULL, NULL, 0);
    workers_join(crew->ids, crew->size);
    for (int t = 0; t < crew->size; t++) fa_free(crew->scratch[t]);
    pthread_cond_destroy(&crew->posted_cond);
    pthread_cond_destroy(&crew->finished_cond);
    pthread_mutex_destroy(&crew->lock);
    fa_free(crew->members); fa_free(crew->ids); fa_free(crew->cpu); fa_free(crew->scratch);
    fa_free(crew->scratch_bytes); fa_free(crew);
}
void *crew_scratch(workers_crew *crew, int t, size_t bytes)
{
    if (crew->scratch_bytes[t] < bytes) {
        if (crew->scratch[t]) fa_free(crew->scratch[t]);
        crew->scratch[t] = fa_alloc(bytes);
        crew->scratch_bytes[t] = bytes;
    }
    return crew->scratch[t];
}
