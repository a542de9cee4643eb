/* score_traffic.h — the score matrix of naive attention: its size, its
   traffic and three GPUs' memory. Tangled from chapters/ch01_memory_ladder.nw. */
#ifndef SCORE_TRAFFIC_H
#define SCORE_TRAFFIC_H
#include <stddef.h>
typedef struct {
    size_t seq;      /* n: positions in the sequence  */
    size_t heads;    /* h: independent attention heads */
    size_t dim;      /* d: numbers per position and head */
} attention_shape;

enum { FLOAT_BYTES = 4 };

typedef struct {
    const char *step, *reads, *writes;
    double read_bytes, write_bytes;
} traffic_step;

enum { NAIVE_STEPS = 3 };

typedef struct {
    const char *name;
    double hbm_gb;      /* HBM capacity, GB, as the vendor states it */
    double hbm_tbs;     /* HBM bandwidth, TB/s                       */
    int    sms;         /* streaming multiprocessors                 */
    int    sram_kib;    /* combined L1 / shared memory per SM, KiB   */
} gpu_spec;

enum { GPU_COUNT = 3 };
extern const gpu_spec gpu_specs[GPU_COUNT];
double score_bytes(attention_shape s);
double operand_bytes(attention_shape s);
double transfer_ms(double bytes, double tbs);
void naive_traffic(attention_shape s, traffic_step out[NAIVE_STEPS]);
double naive_total_bytes(attention_shape s);
double sm_sram_bytes(const gpu_spec *g);
double gpu_sram_bytes(const gpu_spec *g);
#endif
