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
typedef struct workers_crew workers_crew;
workers_crew *crew_open(int n, const char *who);   /* n threads, the caller's counted */
void crew_close(workers_crew *crew);               /* NULL: nothing to do */
workers_crew *crew_for(workers_crew *crew, int n); /* crew if it runs n threads, else NULL */
void *crew_scratch(workers_crew *crew, int t, size_t bytes);  /* thread t's, kept */
void workers_run(workers_crew *crew, int n, worker_fn *fn, void *args, size_t arg_size,
                 const char *who);
#endif
