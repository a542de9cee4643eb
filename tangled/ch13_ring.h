/* ch13_ring.h — types and functions of chapter 13's ring.
   Tangled from chapters/ch13_ring.nw. */
#ifndef CH13_RING_H
#define CH13_RING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "cpu/softmax.h"
typedef enum { RING_PLAIN, RING_ZIGZAG } ring_layout;
typedef struct { size_t lo, hi; } row_span;              /* rows lo .. hi-1 */
typedef struct { row_span span[2]; int count; size_t rows; } row_set;
typedef struct { size_t q0, q1, k0, k1; bool causal; } ring_piece;
typedef struct {
    size_t heads, nq, nk, d;     /* heads: batch times heads */
    float scale;
    bool causal, backward;
    ring_layout layout;
    int fault_rank;              /* -1: none */
} ring_problem;
typedef struct { int rank, ranks; bool mpi; } ring_comm;
typedef struct { double compute_s, wait_s; } ring_timing;
typedef struct { float *o, *lse, *dq, *dk, *dv; } ring_scratch;
typedef struct { const float *q, *o, *dout, *lse; float *dq; } ring_rows_at;
typedef struct {
    row_set qrows, krows;
    float *q, *o, *lse, *dout, *dq;        /* heads x qrows.rows (x d) */
    softmax_partial *run;                  /* heads x qrows.rows      */
    float *kv, *dkv;                       /* own K then V; own dK then dV */
    float *kvbuf[2], *dkv_step[2], *dkv_in; /* slices and sums in flight */
    float *scratch_big;                    /* rank 0: one rank's rows of a tensor */
    MPI_Request *pending[2];               /* transfers in flight during a step */
    int npending[2];
    ring_scratch scratch;
} ring_local;
enum { RING_RECORDED_ROWS = 32 };
typedef struct {
    char transport[8], layout[8];
    int ranks, causal;
    long n, d, heads;
    double ring_s, compute_s, comm_s, hidden_pct, imbalance, rss_mib, counted_mib, gflops, gbs, cstar;
} ring_recorded_row;
typedef struct {
    char when[64], commit[64], machine[160], refusal[512];
    int cpus, count, capped_exit[2];        /* the capped runs' exit codes: P = 1, P = 4 */
    ring_recorded_row row[RING_RECORDED_ROWS];
} ring_recorded;
int    ring_source(int rank, int ranks, int step);
row_set ring_rows(ring_layout layout, size_t n, int ranks, int rank);
size_t local_row(const row_set *s, int span, size_t row);
int    ring_pieces(row_span a, row_span b, bool causal, ring_piece out[3]);
double ring_rank_pairs(ring_layout layout, size_t nq, size_t nk, bool causal, int ranks,
                       int rank);
void draw_rows(uint64_t seed, int tensor, const row_set *s, size_t heads, size_t n,
               size_t d, float *out);
/* this program's lines of one recorded bench file: true when there are any */
bool ring_read_recorded(const char *path, ring_recorded *rec);
/* the overlap, the imbalance and the memory of a record, in words */
void ring_recorded_sentences(const ring_recorded *rec, char *overlap, char *imbalance,
                             char *memory, size_t size);
#endif
