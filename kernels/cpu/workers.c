/* workers.c — tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
#define _GNU_SOURCE   /* sched_getaffinity, sched_getcpu, pthread_attr_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
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
