/* workers.h — the threads of one call, each on a processor of its own.
   Tangled from chapters/ch08_fused_timing.nw. */
#ifndef WORKERS_H
#define WORKERS_H
#include <pthread.h>
#include <stddef.h>
typedef void *worker_fn(void *arg);
void workers_start(pthread_t *ids, int n, worker_fn *fn, void *args, size_t arg_size,
                   const char *who);
void workers_join(const pthread_t *ids, int n);
#endif
