/* ch01_memory_ladder.h — the shape, the traffic and the GPUs of chapter 1,
   for the program and its tests. Tangled from chapters/ch01_memory_ladder.nw. */
#ifndef CH01_MEMORY_LADDER_H
#define CH01_MEMORY_LADDER_H
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

extern const gpu_spec gpu_specs[];
double score_bytes(attention_shape s);
double operand_bytes(attention_shape s);
double transfer_ms(double bytes, double tbs);
void naive_traffic(attention_shape s, traffic_step out[NAIVE_STEPS]);
double naive_total_bytes(attention_shape s);
double sm_sram_bytes(const gpu_spec *g);
double gpu_sram_bytes(const gpu_spec *g);
int chapter_main(int argc, char **argv);

#endif
