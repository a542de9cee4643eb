/* ch13_ring.c — ring attention over MPI. Tangled from chapters/ch13_ring.nw. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "cpu/softmax.h"
#include "cpu/fused.h"
#include "cpu/backward.h"
#include "harness/ladder.h"
#include "ch13_ring.h"
#define PROGRAM "ch13_ring"
enum { TAG_KV = 1, TAG_SUMS = 2, TAG_GATHER = 3 };
static row_span span_of(size_t n, size_t parts, size_t k);
static double span_pairs(row_span a, row_span b, bool causal);
static size_t kv_floats(const ring_problem *pr, const row_set *s);
static int message_count(size_t floats);
static double ring_now(void);
static void keep_messages_moving(ring_local *me);
int ring_source(int rank, int ranks, int step)
{
    return ((rank - step) % ranks + ranks) % ranks;
}
static row_span span_of(size_t n, size_t parts, size_t k)
{
    return (row_span){ n * k / parts, n * (k + 1) / parts };
}
row_set ring_rows(ring_layout layout, size_t n, int ranks, int rank)
{
    row_set s = { .count = 1 };
    if (layout == RING_PLAIN) s.span[0] = span_of(n, (size_t)ranks, (size_t)rank);
    else {
        s.count = 2;
        s.span[0] = span_of(n, 2 * (size_t)ranks, (size_t)rank);
        s.span[1] = span_of(n, 2 * (size_t)ranks, 2 * (size_t)ranks - 1 - (size_t)rank);
    }
    s.rows = 0;
    for (int i = 0; i < s.count; i++) s.rows += s.span[i].hi - s.span[i].lo;
    return s;
}
size_t local_row(const row_set *s, int span, size_t row)
{
    size_t before = 0;
    for (int i = 0; i < span; i++) before += s->span[i].hi - s->span[i].lo;
    return before + (row - s->span[span].lo);
}
int ring_pieces(row_span a, row_span b, bool causal, ring_piece out[3])
{
    if (a.lo >= a.hi || b.lo >= b.hi) return 0;          /* an empty span: nothing */
    if (!causal) { out[0] = (ring_piece){ a.lo, a.hi, b.lo, b.hi, false }; return 1; }
    int n = 0;
    const size_t f0 = a.lo > b.hi - 1 ? a.lo : b.hi - 1;   /* rows that see every key */
    const size_t c0 = a.lo > b.lo ? a.lo : b.lo, c1 = a.hi < f0 ? a.hi : f0;
    if (c0 < c1) {
        if (c0 > b.lo) out[n++] = (ring_piece){ c0, c1, b.lo, c0, false };
        out[n++] = (ring_piece){ c0, c1, c0, b.hi, true };
    }
    if (f0 < a.hi) out[n++] = (ring_piece){ f0, a.hi, b.lo, b.hi, false };
    return n;
}
static double span_pairs(row_span a, row_span b, bool causal)
{
    ring_piece pc[3];
    double pairs = 0;
    const int n = ring_pieces(a, b, causal, pc);
    for (int i = 0; i < n; i++) {
        const double rows = (double)(pc[i].q1 - pc[i].q0), cols = (double)(pc[i].k1 - pc[i].k0);
        pairs += pc[i].causal ? rows * (rows + 1) / 2 : rows * cols;
    }
    return pairs;
}
double ring_rank_pairs(ring_layout layout, size_t nq, size_t nk, bool causal, int ranks,
                       int rank)
{
    const row_set qs = ring_rows(layout, nq, ranks, rank);
    double pairs = 0;
    for (int s = 0; s < ranks; s++) {
        const row_set ks = ring_rows(layout, nk, ranks, s);
        for (int a = 0; a < qs.count; a++)
            for (int b = 0; b < ks.count; b++) pairs += span_pairs(qs.span[a], ks.span[b], causal);
    }
    return pairs;
}
static void merge_rows(size_t rows, size_t d, softmax_partial *run, float *o_run,
                       const float *lse, const float *o_block)
{
    for (size_t r = 0; r < rows; r++) {
        const softmax_partial block = { lse[r], 1.0f };
        if (block.max == -INFINITY) continue;        /* the row saw nothing here */
        const softmax_partial both = softmax_merge(run[r], block);
        const float keep = run[r].sum * expf(run[r].max - both.max) / both.sum;
        const float take = expf(block.max - both.max) / both.sum;
        for (size_t c = 0; c < d; c++)
            o_run[r * d + c] = keep * o_run[r * d + c] + take * o_block[r * d + c];
        run[r] = both;
    }
}
static void finish_rows(size_t rows, const softmax_partial *run, float *lse)
{
    for (size_t r = 0; r < rows; r++)
        lse[r] = run[r].sum > 0.0f ? run[r].max + logf(run[r].sum) : -INFINITY;
}
static void start_rows(const ring_problem *pr, ring_local *me)
{
    const size_t rows = pr->heads * me->qrows.rows;
    for (size_t i = 0; i < rows; i++) me->run[i] = online_start();
    memset(me->o, 0, rows * pr->d * sizeof(float));
}
static void forward_piece(const ring_problem *pr, const ring_piece *pc, const float *q,
                          const float *k, const float *v, softmax_partial *run,
                          float *o_run, ring_scratch *s)
{
    attn_params p = attn_default(1, 1, pc->q1 - pc->q0, pc->k1 - pc->k0, pr->d);
    p.scale = pr->scale;
    p.causal = pc->causal;
    const fused_config cfg = { .threads = 1, .isa = FUSED_ISA_AUTO, .lse = s->lse };
    attention_fused(&p, q, k, v, s->o, &cfg, NULL);
    merge_rows(p.nq, p.d, run, o_run, s->lse, s->o);
}
static void in_flight(ring_local *me, MPI_Request *a, int na, MPI_Request *b, int nb)
{
    me->pending[0] = a; me->npending[0] = na;
    me->pending[1] = b; me->npending[1] = nb;
}
static void keep_messages_moving(ring_local *me)
{
    for (int i = 0; i < 2; i++)
        if (me->npending[i] > 0) {
            int done;
            MPI_Testall(me->npending[i], me->pending[i], &done, MPI_STATUSES_IGNORE);
        }
}
static void forward_step(const ring_problem *pr, ring_local *me, const row_set *ks,
                         const float *kv, ring_scratch *s)
{
    const size_t d = pr->d, qr = me->qrows.rows, kr = ks->rows;
    const float *k = kv, *v = kv + pr->heads * kr * d;
    for (size_t h = 0; h < pr->heads; h++)
        for (int a = 0; a < me->qrows.count; a++)
            for (int b = 0; b < ks->count; b++) {
                ring_piece pc[3];
                const int n = ring_pieces(me->qrows.span[a], ks->span[b], pr->causal, pc);
                for (int i = 0; i < n; i++) {
                    const size_t lq = local_row(&me->qrows, a, pc[i].q0);
                    const size_t lk = local_row(ks, b, pc[i].k0);
                    forward_piece(pr, &pc[i], me->q + (h * qr + lq) * d,
                                  k + (h * kr + lk) * d, v + (h * kr + lk) * d,
                                  me->run + h * qr + lq, me->o + (h * qr + lq) * d, s);
                    keep_messages_moving(me);
                }
            }
}
static size_t kv_floats(const ring_problem *pr, const row_set *s)
{
    return fa_mul(fa_mul(2 * pr->heads, s->rows), pr->d);
}
static int message_count(size_t floats)
{
    if (floats > (size_t)INT_MAX) die_line(PROGRAM ": a message of %zu floats is too long for MPI", floats);
    return (int)floats;
}
static double ring_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int post_next_slice(const ring_comm *c, const ring_problem *pr, int t,
                           const float *held, float *next, MPI_Request req[2])
{
    if (t == c->ranks - 1) return 0;
    const int right = (c->rank + 1) % c->ranks, left = (c->rank + c->ranks - 1) % c->ranks;
    const row_set mine = ring_rows(pr->layout, pr->nk, c->ranks, ring_source(c->rank, c->ranks, t));
    const row_set coming = ring_rows(pr->layout, pr->nk, c->ranks,
                                     ring_source(c->rank, c->ranks, t + 1));
    MPI_Irecv(next, message_count(kv_floats(pr, &coming)), MPI_FLOAT, left, TAG_KV,
              MPI_COMM_WORLD, &req[0]);
    MPI_Isend(held, message_count(kv_floats(pr, &mine)), MPI_FLOAT, right, TAG_KV,
              MPI_COMM_WORLD, &req[1]);
    return 2;
}
static void wait_all(const ring_comm *c, int nreq, MPI_Request *req, ring_timing *tm)
{
    (void)c;
    if (nreq == 0) return;
    const double t0 = ring_now();
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    tm->wait_s += ring_now() - t0;
}
void ring_forward(const ring_comm *c, const ring_problem *pr, ring_local *me,
                  ring_timing *tm)
{
    float *buf[2] = { me->kvbuf[0], me->kvbuf[1] };
    memcpy(buf[0], me->kv, kv_floats(pr, &me->krows) * sizeof(float));
    start_rows(pr, me);
    for (int t = 0; t < c->ranks; t++) {
        const row_set ks = ring_rows(pr->layout, pr->nk, c->ranks, ring_source(c->rank, c->ranks, t));
        MPI_Request req[2];
        int nreq = post_next_slice(c, pr, t, buf[0], buf[1], req);
        if (pr->fault_rank == c->rank && t == (c->ranks > 1 ? 1 : 0)) raise(SIGKILL);
        const double t0 = ring_now();
        in_flight(me, req, nreq, NULL, 0);
        forward_step(pr, me, &ks, buf[0], &me->scratch);
        tm->compute_s += ring_now() - t0;
        in_flight(me, NULL, 0, NULL, 0);
        wait_all(c, nreq, req, tm);
        float *held = buf[0]; buf[0] = buf[1]; buf[1] = held;
    }
    for (size_t h = 0; h < pr->heads; h++)
        finish_rows(me->qrows.rows, me->run + h * me->qrows.rows, me->lse + h * me->qrows.rows);
}
static void add_into(float *to, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) to[i] += x[i];
}
static void backward_piece(const ring_problem *pr, const ring_piece *pc, ring_rows_at q,
                           const float *k, const float *v, float *dk, float *dv,
                           ring_scratch *s)
{
    attn_params p = attn_default(1, 1, pc->q1 - pc->q0, pc->k1 - pc->k0, pr->d);
    p.scale = pr->scale;
    p.causal = pc->causal;
    attention_backward_flash(&p, q.q, k, v, q.o, q.lse, q.dout, s->dq, s->dk, s->dv, 1, NULL);
    add_into(q.dq, s->dq, p.nq * p.d);
    add_into(dk, s->dk, p.nk * p.d);
    add_into(dv, s->dv, p.nk * p.d);
}
static ring_rows_at rows_at(ring_local *me, size_t row, size_t d)
{
    return (ring_rows_at){ .q = me->q + row * d, .o = me->o + row * d,
                           .dout = me->dout + row * d, .lse = me->lse + row,
                           .dq = me->dq + row * d };
}
static void backward_step(const ring_problem *pr, ring_local *me, const row_set *ks,
                          const float *kv, float *dkv, ring_scratch *s)
{
    const size_t d = pr->d, qr = me->qrows.rows, kr = ks->rows, kd = pr->heads * kr * d;
    memset(dkv, 0, 2 * kd * sizeof(float));
    for (size_t h = 0; h < pr->heads; h++)
        for (int a = 0; a < me->qrows.count; a++)
            for (int b = 0; b < ks->count; b++) {
                ring_piece pc[3];
                const int n = ring_pieces(me->qrows.span[a], ks->span[b], pr->causal, pc);
                for (int i = 0; i < n; i++) {
                    const size_t lq = local_row(&me->qrows, a, pc[i].q0);
                    const size_t at = (h * kr + local_row(ks, b, pc[i].k0)) * d;
                    backward_piece(pr, &pc[i], rows_at(me, h * qr + lq, d),
                                   kv + at, kv + kd + at, dkv + at, dkv + kd + at, s);
                    keep_messages_moving(me);
                }
            }
}
static void add_sums(const float *came, float *step, const ring_problem *pr, const row_set *ks)
{
    const size_t n = kv_floats(pr, ks);
    for (size_t i = 0; i < n; i++) step[i] = came[i] + step[i];
}
static void post_sums_in(const ring_comm *c, const ring_problem *pr, const row_set *ks,
                         float *in, MPI_Request *req)
{
    const int left = (c->rank + c->ranks - 1) % c->ranks;
    MPI_Irecv(in, message_count(kv_floats(pr, ks)), MPI_FLOAT, left, TAG_SUMS,
              MPI_COMM_WORLD, req);
}
static void pass_sums_right(const ring_comm *c, const ring_problem *pr, const row_set *ks,
                            const float *sums, ring_local *me, MPI_Request *req)
{
    const size_t n = kv_floats(pr, ks);
    if (c->ranks == 1) { memcpy(me->dkv, sums, n * sizeof(float)); return; }
    MPI_Isend(sums, message_count(n), MPI_FLOAT, (c->rank + 1) % c->ranks, TAG_SUMS,
              MPI_COMM_WORLD, req);
}
static void collect_own_sums(const ring_comm *c, const ring_problem *pr, ring_local *me,
                             MPI_Request *out, ring_timing *tm)
{
    if (c->ranks == 1) return;
    MPI_Request req[2] = { *out };
    MPI_Irecv(me->dkv, message_count(kv_floats(pr, &me->krows)), MPI_FLOAT,
              (c->rank + c->ranks - 1) % c->ranks, TAG_SUMS, MPI_COMM_WORLD, &req[1]);
    wait_all(c, 2, req, tm);
}
void ring_backward(const ring_comm *c, const ring_problem *pr, ring_local *me,
                   ring_timing *tm)
{
    float *buf[2] = { me->kvbuf[0], me->kvbuf[1] };
    memcpy(buf[0], me->kv, kv_floats(pr, &me->krows) * sizeof(float));
    memset(me->dq, 0, pr->heads * me->qrows.rows * pr->d * sizeof(float));
    MPI_Request out = MPI_REQUEST_NULL;
    for (int t = 0; t < c->ranks; t++) {
        const row_set ks = ring_rows(pr->layout, pr->nk, c->ranks, ring_source(c->rank, c->ranks, t));
        float *step = me->dkv_step[t % 2];
        MPI_Request req[2], in;
        const int nreq = post_next_slice(c, pr, t, buf[0], buf[1], req);
        if (t > 0) post_sums_in(c, pr, &ks, me->dkv_in, &in);
        if (pr->fault_rank == c->rank && t == (c->ranks > 1 ? 1 : 0)) raise(SIGKILL);
        const double t0 = ring_now();
        in_flight(me, req, nreq, &in, t > 0);
        backward_step(pr, me, &ks, buf[0], step, &me->scratch);
        tm->compute_s += ring_now() - t0;
        in_flight(me, NULL, 0, NULL, 0);
        if (t > 0) { wait_all(c, 1, &in, tm); add_sums(me->dkv_in, step, pr, &ks); }
        if (t > 0) wait_all(c, 1, &out, tm);          /* the other buffer is free again */
        pass_sums_right(c, pr, &ks, step, me, &out);
        wait_all(c, nreq, req, tm);
        float *held = buf[0]; buf[0] = buf[1]; buf[1] = held;
    }
    collect_own_sums(c, pr, me, &out, tm);
}
typedef struct {
    const char *q_path, *k_path, *v_path, *dout_path, *out_path, *dq_path, *dk_path, *dv_path;
    const char *layout, *data_dir, *mpirun, *python, *recorded;
    bool causal, backward, check, json, bench, quick, measure, compute_only, comm_only;
    long seq, seq_k, dim, heads, seed, fault_rank, repeats;
    double scale;
} ring_options;

static void parse_ring_options(int argc, char **argv, ring_options *o)
{
    const option opts[] = {
        { "q", OPT_STRING, &o->q_path, 0, 0, "FILE", "queries: .npy float32 (n,d), (h,n,d) or (b,h,n,d)" },
        { "k", OPT_STRING, &o->k_path, 0, 0, "FILE", "keys: same leading shape and d as --q" },
        { "v", OPT_STRING, &o->v_path, 0, 0, "FILE", "values: the shape of --k" },
        { "dout", OPT_STRING, &o->dout_path, 0, 0, "FILE", "with --backward: dL/dO, the shape of --q" },
        { "out", OPT_STRING, &o->out_path, 0, 0, "FILE", "write the output O (rank 0)" },
        { "dq", OPT_STRING, &o->dq_path, 0, 0, "FILE", "with --backward: write dL/dQ" },
        { "dk", OPT_STRING, &o->dk_path, 0, 0, "FILE", "with --backward: write dL/dK" },
        { "dv", OPT_STRING, &o->dv_path, 0, 0, "FILE", "with --backward: write dL/dV" },
        { "seq", OPT_INT, &o->seq, 1, 1e9, "N", "query length of the seeded problem" },
        { "seq-k", OPT_INT, &o->seq_k, 0, 1e9, "N", "key length (0: as --seq)" },
        { "dim", OPT_INT, &o->dim, 1, 1024, "D", "head dimension" },
        { "heads", OPT_INT, &o->heads, 1, 1024, "H", "heads" },
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "S", "seed of the drawn rows" },
        { "scale", OPT_DOUBLE, &o->scale, 0, 1e12, "S", "score scale (0: 1/sqrt(d))" },
        { "causal", OPT_FLAG, &o->causal, 0, 0, NULL, "causal mask, top-left aligned" },
        { "backward", OPT_FLAG, &o->backward, 0, 0, NULL, "the backward pass too (dQ, dK, dV)" },
        { "layout", OPT_STRING, &o->layout, 0, 0, "L", "ring (plain spans) or zigzag (balanced)" },
        { "check", OPT_FLAG, &o->check, 0, 0, NULL,
          "gather on rank 0 and compare with chapters 8 and 9 on one process" },
        { "fault-rank", OPT_INT, &o->fault_rank, -1, 1e6, "R",
          "for the tests: rank R kills itself with SIGKILL at step 1" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR", "write the figure data into DIR" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "measure (starts mpirun itself)" },
        { "quick", OPT_FLAG, &o->quick, 0, 0, NULL, "with --bench: small sizes" },
        { "mpirun", OPT_STRING, &o->mpirun, 0, 0, "PATH", "with --bench: the mpirun to start" },
        { "measure", OPT_FLAG, &o->measure, 0, 0, NULL, "under mpirun: time the ring (the bench's runs)" },
        { "repeats", OPT_INT, &o->repeats, 1, 1000, "R", "with --measure: repetitions" },
        { "python", OPT_STRING, &o->python, 0, 0, "PY", "with --bench: accepted, unused (no peer here)" },
        { "recorded", OPT_STRING, &o->recorded, 0, 0, "PATH",
          "the recorded bench to report: a file, or a folder of bench-*.txt" },
    };
    options_parse(argc, argv, PROGRAM, "ring attention over MPI: run it with mpirun -np P",
                  opts, sizeof opts / sizeof opts[0]);
}
typedef struct { double o_ch08, o_exact, dq, dk, dv; uint64_t bits; } ring_agreement;
static ring_problem decide_problem(const ring_comm *c, const ring_options *o);
static void report_agreement(report *rep, const ring_problem *pr, ring_agreement a);
static ring_agreement run_small_check(const ring_comm *c, const ring_problem *pr);
static void report_recorded(report *rep, const char *path);
static ring_comm ring_start(int *argc, char ***argv)
{
    ring_comm c = { .rank = 0, .ranks = 1, .mpi = getenv("OMPI_COMM_WORLD_SIZE") != NULL };
    if (!c.mpi) return c;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.ranks);
    return c;
}
static void ring_stop(const ring_comm *c)
{
    if (c->mpi) MPI_Finalize();
}
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static float draw_at(uint64_t seed, int tensor, size_t index)
{
    const uint64_t a = mix64(seed * 8 + (uint64_t)tensor + mix64(index));
    const uint64_t b = mix64(a);
    const double u1 = ((double)(a >> 11) + 0.5) * 0x1p-53, u2 = (double)(b >> 11) * 0x1p-53;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
void draw_rows(uint64_t seed, int tensor, const row_set *s, size_t heads, size_t n,
               size_t d, float *out)
{
    size_t at = 0;
    for (size_t h = 0; h < heads; h++)
        for (int i = 0; i < s->count; i++)
            for (size_t row = s->span[i].lo; row < s->span[i].hi; row++)
                for (size_t c = 0; c < d; c++) out[at++] = draw_at(seed, tensor, (h * n + row) * d + c);
}
typedef struct { size_t q, most_q, most_k, span, big; } ring_sizes;
static ring_sizes sizes_of(const ring_problem *pr, int ranks, int rank);
static size_t rank_bytes(const ring_problem *pr, int ranks, int rank)
{
    const ring_sizes z = sizes_of(pr, ranks, rank);
    const size_t h = pr->heads, d = pr->d;
    size_t floats = fa_mul(4, fa_mul(fa_mul(h, z.q), d)) + fa_mul(3, fa_mul(h, z.q));
    floats += fa_mul(7, fa_mul(fa_mul(2 * h, z.most_k), d));  /* kv dkv, buffers, sums */
    floats += fa_mul(fa_mul(h, z.big), d) + fa_mul(4 * z.span + 1, d) + z.span;
    floats += fa_mul(fa_mul(5, z.span), z.span < 64 ? z.span : 64);   /* chapter 9's tiles */
    const attn_params piece = { .batch = 1, .heads = 1, .nq = z.span, .nk = z.span, .d = d,
                                .block_q = 64, .block_k = 64 };
    return fa_mul(floats, sizeof(float)) +
           attention_fused_bytes(&piece, &(fused_config){ .threads = 1 });
}
static size_t whole_bytes(const ring_problem *pr)
{
    const size_t q = fa_mul(fa_mul(pr->heads, pr->nq), pr->d);
    const size_t k = fa_mul(fa_mul(pr->heads, pr->nk), pr->d);
    return fa_mul(fa_mul(4, q) + fa_mul(4, k) + fa_mul(pr->heads, pr->nq), sizeof(float));
}
static ring_sizes sizes_of(const ring_problem *pr, int ranks, int rank)
{
    ring_sizes z = { .q = ring_rows(pr->layout, pr->nq, ranks, rank).rows };
    for (int s = 0; s < ranks; s++) {
        const size_t k = ring_rows(pr->layout, pr->nk, ranks, s).rows;
        const size_t q = ring_rows(pr->layout, pr->nq, ranks, s).rows;
        if (k > z.most_k) z.most_k = k;
        if (q > z.most_q) z.most_q = q;
    }
    z.span = z.q > z.most_k ? z.q : z.most_k;
    z.big = z.most_q > z.most_k ? z.most_q : z.most_k;
    return z;
}
static ring_local local_new(const ring_problem *pr, int ranks, int rank)
{
    ring_local me = { .qrows = ring_rows(pr->layout, pr->nq, ranks, rank),
                      .krows = ring_rows(pr->layout, pr->nk, ranks, rank) };
    const ring_sizes z = sizes_of(pr, ranks, rank);
    const size_t h = pr->heads, d = pr->d, qf = h * z.q * d, kf = 2 * h * z.most_k * d;
    me.q = fa_alloc(qf * 4); me.o = fa_alloc(qf * 4); me.dout = fa_alloc(qf * 4);
    me.dq = fa_alloc(qf * 4); me.lse = fa_alloc(h * z.q * 4);
    me.run = fa_alloc(h * z.q * sizeof *me.run);
    me.kv = fa_alloc(kf * 4); me.dkv = fa_alloc(kf * 4);
    me.kvbuf[0] = fa_alloc(kf * 4); me.kvbuf[1] = fa_alloc(kf * 4);
    me.dkv_step[0] = fa_alloc(kf * 4); me.dkv_step[1] = fa_alloc(kf * 4);
    me.dkv_in = fa_alloc(kf * 4);
    me.scratch_big = fa_alloc(h * z.big * d * 4);
    me.scratch = (ring_scratch){ .o = fa_alloc(z.span * d * 4), .lse = fa_alloc(z.span * 4),
                                 .dq = fa_alloc(z.span * d * 4), .dk = fa_alloc(z.span * d * 4),
                                 .dv = fa_alloc(z.span * d * 4) };
    return me;
}
static void local_free(ring_local *me)
{
    float *f[] = { me->q, me->o, me->dout, me->dq, me->lse, me->kv, me->dkv, me->kvbuf[0],
                   me->kvbuf[1], me->dkv_step[0], me->dkv_step[1], me->dkv_in, me->scratch_big,
                   me->scratch.o, me->scratch.lse, me->scratch.dq, me->scratch.dk,
                   me->scratch.dv };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) fa_free(f[i]);
    fa_free(me->run);
}
static void copy_rows(const row_set *s, size_t heads, size_t n, size_t d, float *whole,
                      float *rows, bool to_rows)
{
    size_t at = 0;
    for (size_t h = 0; h < heads; h++)
        for (int i = 0; i < s->count; i++) {
            const size_t len = (s->span[i].hi - s->span[i].lo) * d;
            float *w = whole + (h * n + s->span[i].lo) * d;
            if (to_rows) memcpy(rows + at, w, len * sizeof(float));
            else memcpy(w, rows + at, len * sizeof(float));
            at += len;
        }
}
static void scatter_rows(const ring_comm *c, const ring_problem *pr, size_t n, bool keys,
                         float *whole, float *mine, float *tmp)
{
    for (int r = 0; r < c->ranks; r++) {
        const row_set s = ring_rows(pr->layout, n, c->ranks, r);
        const int count = message_count(pr->heads * s.rows * pr->d);
        if (c->rank == 0) {
            copy_rows(&s, pr->heads, n, pr->d, whole, r == 0 ? mine : tmp, true);
            if (r > 0) MPI_Send(tmp, count, MPI_FLOAT, r, TAG_GATHER, MPI_COMM_WORLD);
        } else if (c->rank == r)
            MPI_Recv(mine, count, MPI_FLOAT, 0, TAG_GATHER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    (void)keys;
}
static void gather_rows(const ring_comm *c, const ring_problem *pr, size_t n, float *whole,
                        float *mine, float *tmp)
{
    for (int r = 0; r < c->ranks; r++) {
        const row_set s = ring_rows(pr->layout, n, c->ranks, r);
        const int count = message_count(pr->heads * s.rows * pr->d);
        if (c->rank == 0) {
            if (r > 0) MPI_Recv(tmp, count, MPI_FLOAT, r, TAG_GATHER, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE);
            copy_rows(&s, pr->heads, n, pr->d, whole, r == 0 ? mine : tmp, false);
        } else if (c->rank == r)
            MPI_Send(mine, count, MPI_FLOAT, 0, TAG_GATHER, MPI_COMM_WORLD);
    }
}
static bool file_mode(const ring_options *o)
{
    return o->q_path || o->k_path || o->v_path || o->dout_path || o->out_path ||
           o->dq_path || o->dk_path || o->dv_path;
}
static attn_params check_files(const ring_options *o)
{
    const char *in[4] = { o->q_path, o->k_path, o->v_path, o->dout_path };
    const char *out[4] = { o->out_path, o->dq_path, o->dk_path, o->dv_path };
    const int n = o->backward ? 4 : 1;
    for (int i = 0; i < 3; i++)
        if (!in[i] || !out[0]) die_usage(PROGRAM, "--q --k --v --out go together");
    for (int i = 1; i < 4; i++)
        if ((i < n) != (out[i] != NULL) || (o->backward != (in[3] != NULL)))
            die_usage(PROGRAM, "--dout --dq --dk --dv go with --backward, all four");
    npy_reserve_outputs_or_exit(PROGRAM, out, (size_t)n, in, o->backward ? 4 : 3);
    npy_release_reserved();              /* checked; none held while the ring runs */
    attn_params p = attn_params_from_headers(PROGRAM, in);
    if (o->backward) {
        const tensor qs = npy_shape_or_exit(PROGRAM, in[0]), ds = npy_shape_or_exit(PROGRAM, in[3]);
        bool same = qs.ndim == ds.ndim;
        for (int i = 0; i < qs.ndim && same; i++) same = qs.shape[i] == ds.shape[i];
        if (!same) die_usage(PROGRAM, "--dout must have the shape of --q");
    }
    return p;
}
typedef struct { tensor q, k, v, dout; } ring_whole;
static ring_whole read_whole(const ring_options *o)
{
    ring_whole w = { npy_read_or_exit(PROGRAM, o->q_path), npy_read_or_exit(PROGRAM, o->k_path),
                     npy_read_or_exit(PROGRAM, o->v_path), { 0 } };
    if (o->backward) w.dout = npy_read_or_exit(PROGRAM, o->dout_path);
    return w;
}
static void scatter_inputs(const ring_comm *c, const ring_problem *pr, ring_whole *w,
                           ring_local *me)
{
    const size_t kf = pr->heads * me->krows.rows * pr->d;
    scatter_rows(c, pr, pr->nq, false, w->q.data, me->q, me->scratch_big);
    scatter_rows(c, pr, pr->nk, true, w->k.data, me->kv, me->scratch_big);
    scatter_rows(c, pr, pr->nk, true, w->v.data, me->kv + kf, me->scratch_big);
    if (pr->backward) scatter_rows(c, pr, pr->nq, false, w->dout.data, me->dout, me->scratch_big);
}
typedef struct { tensor o, dq, dk, dv; } ring_results;
static void gather_outputs(const ring_comm *c, const ring_problem *pr, ring_local *me,
                           ring_results *out)
{
    const size_t kf = pr->heads * me->krows.rows * pr->d;
    gather_rows(c, pr, pr->nq, out->o.data, me->o, me->scratch_big);
    if (!pr->backward) return;
    gather_rows(c, pr, pr->nq, out->dq.data, me->dq, me->scratch_big);
    gather_rows(c, pr, pr->nk, out->dk.data, me->dkv, me->scratch_big);
    gather_rows(c, pr, pr->nk, out->dv.data, me->dkv + kf, me->scratch_big);
}
static void write_outputs(const ring_options *o, const ring_whole *w, const ring_results *r)
{
    const char *paths[4] = { o->out_path, o->dq_path, o->dk_path, o->dv_path };
    tensor t[4] = { r->o, r->dq, r->dk, r->dv };
    for (int i = 0; i < 4; i++) {
        const tensor *like = i == 0 || i == 1 ? &w->q : &w->k;
        t[i].ndim = like->ndim;
        memcpy(t[i].shape, like->shape, sizeof t[i].shape);
    }
    npy_write_all_or_exit(PROGRAM, o->backward ? 4 : 1, paths,
                          (const tensor *const[]){ &t[0], &t[1], &t[2], &t[3] });
}
static double max_diff(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= worst)) worst = e;            /* NaN wins */
    }
    return worst;
}
static uint64_t digest(uint64_t h, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        for (int b = 0; b < 4; b++) h = (h ^ ((bits >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    }
    return h;
}
static ring_agreement compare_one_process(const ring_problem *pr, const ring_whole *w,
                                          const ring_results *r)
{
    attn_params p = attn_default(1, pr->heads, pr->nq, pr->nk, pr->d);
    p.scale = pr->scale; p.causal = pr->causal;
    const size_t qf = pr->heads * pr->nq * pr->d, kf = pr->heads * pr->nk * pr->d;
    float *o = fa_alloc(qf * 4), *lse = fa_alloc(pr->heads * pr->nq * 4);
    double *exact = fa_alloc(qf * 8);
    ring_agreement a = { 0 };
    attention_fused(&p, w->q.data, w->k.data, w->v.data, o, &(fused_config){ .threads = 1 }, NULL);
    a.o_ch08 = max_diff(r->o.data, o, qf);
    attention_reference(&p, w->q.data, w->k.data, w->v.data, exact);
    a.o_exact = max_abs_diff_fd(r->o.data, exact, qf);
    a.bits = digest(0xcbf29ce484222325ull, r->o.data, qf);
    if (pr->backward) {
        float *dq = fa_alloc(qf * 4), *dk = fa_alloc(kf * 4), *dv = fa_alloc(kf * 4);
        attention_forward_lse(&p, w->q.data, w->k.data, w->v.data, o, lse, 1, NULL);
        attention_backward_flash(&p, w->q.data, w->k.data, w->v.data, o, lse, w->dout.data,
                                 dq, dk, dv, 1, NULL);
        a.dq = max_diff(r->dq.data, dq, qf);
        a.dk = max_diff(r->dk.data, dk, kf);
        a.dv = max_diff(r->dv.data, dv, kf);
        a.bits = digest(digest(digest(a.bits, r->dq.data, qf), r->dk.data, kf), r->dv.data, kf);
        fa_free(dq); fa_free(dk); fa_free(dv);
    }
    fa_free(o); fa_free(lse); fa_free(exact);
    return a;
}
static void report_schedule(report *rep, const char *data_dir)
{
    enum { P = 4 };
    table *t = report_table(rep, "schedule", "the slice rank r holds at step t (P = 4)",
                            (const char *const[]){ "rank", "t = 0", "t = 1", "t = 2", "t = 3", NULL });
    FILE *f = data_dir ? data_file(data_dir, "ch13_ring.dat") : NULL;
    for (int r = 0; r < P; r++) {
        table_rowf(t, "%d|%d|%d|%d|%d", r, ring_source(r, P, 0), ring_source(r, P, 1),
                   ring_source(r, P, 2), ring_source(r, P, 3));
        for (int s = 0; f && s < P; s++) fprintf(f, "%d %d %d\n", s, r, ring_source(r, P, s));
    }
    if (f) data_close(f);
}
static void write_zigzag_data(const char *data_dir)
{
    enum { P = 4, C = 2 * P };
    FILE *f = data_file(data_dir, "ch13_zigzag.dat");
    for (int qc = 0; qc < C; qc++) {
        for (int kc = 0; kc < C; kc++) {
            const int owner = qc < P ? qc : C - 1 - qc;
            fprintf(f, "%d %d %d\n", kc, qc, kc <= qc ? owner : -1);
        }
        fprintf(f, "\n");
    }
    data_close(f);
}
static void report_imbalance(report *rep)
{
    enum { P = 4 };
    const size_t n = 4096;
    table *t = report_table(rep, "imbalance", "visible pairs per rank / mean, causal, P = 4",
                            (const char *const[]){ "rank", "ring", "zigzag", NULL });
    double w[2][P], mean[2] = { 0, 0 }, most[2] = { 0, 0 };
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < P; r++) {
            w[l][r] = ring_rank_pairs((ring_layout)l, n, n, true, P, r);
            mean[l] += w[l][r] / P;
        }
    for (int r = 0; r < P; r++) {
        table_rowf(t, "%d|%.3f|%.3f", r, w[0][r] / mean[0], w[1][r] / mean[1]);
        for (int l = 0; l < 2; l++) if (w[l][r] / mean[l] > most[l]) most[l] = w[l][r] / mean[l];
    }
    report_factf(rep, "imbalance_n", "%zu", n);
    report_factf(rep, "plain_imbalance", "%.3f", most[0]);
    report_factf(rep, "zigzag_imbalance", "%.3f", most[1]);
}
static void report_check(report *rep)
{
    table *t = report_table(rep, "check", "the ring of one rank against chapters 8 and 9",
                            (const char *const[]){ "problem", "O vs ch. 8", "O vs exact",
                                                   "dQ vs ch. 9", "dK vs ch. 9", "dV vs ch. 9", NULL });
    for (int causal = 0; causal <= 1; causal++) {
        ring_problem pr = { .heads = 2, .nq = 100, .nk = 131, .d = 64, .causal = causal,
                            .backward = true, .layout = RING_ZIGZAG, .fault_rank = -1,
                            .scale = 0.125f };
        const ring_comm c = { 0, 1, false };
        ring_agreement a = run_small_check(&c, &pr);
        table_rowf(t, "nq 100, nk 131, d 64%s|%.1e|%.1e|%.1e|%.1e|%.1e", causal ? ", causal" : "",
                   a.o_ch08, a.o_exact, a.dq, a.dk, a.dv);
    }
}
static ring_agreement run_small_check(const ring_comm *c, const ring_problem *pr)
{
    const size_t shq[3] = { pr->heads, pr->nq, pr->d }, shk[3] = { pr->heads, pr->nk, pr->d };
    ring_whole w = { tensor_new(3, shq), tensor_new(3, shk), tensor_new(3, shk), tensor_new(3, shq) };
    ring_results res = { tensor_new(3, shq), tensor_new(3, shq), tensor_new(3, shk), tensor_new(3, shk) };
    ring_local me = local_new(pr, 1, 0);
    const size_t kf = pr->heads * me.krows.rows * pr->d;
    draw_rows(1, 0, &me.qrows, pr->heads, pr->nq, pr->d, me.q);
    draw_rows(1, 1, &me.krows, pr->heads, pr->nk, pr->d, me.kv);
    draw_rows(1, 2, &me.krows, pr->heads, pr->nk, pr->d, me.kv + kf);
    draw_rows(1, 3, &me.qrows, pr->heads, pr->nq, pr->d, me.dout);
    ring_timing tm = { 0 };
    ring_forward(c, pr, &me, &tm);
    ring_backward(c, pr, &me, &tm);
    copy_rows(&me.qrows, pr->heads, pr->nq, pr->d, w.q.data, me.q, false);
    copy_rows(&me.krows, pr->heads, pr->nk, pr->d, w.k.data, me.kv, false);
    copy_rows(&me.krows, pr->heads, pr->nk, pr->d, w.v.data, me.kv + kf, false);
    copy_rows(&me.qrows, pr->heads, pr->nq, pr->d, w.dout.data, me.dout, false);
    gather_outputs(c, pr, &me, &res);
    const ring_agreement a = compare_one_process(pr, &w, &res);
    local_free(&me);
    tensor *t[8] = { &w.q, &w.k, &w.v, &w.dout, &res.o, &res.dq, &res.dk, &res.dv };
    for (int i = 0; i < 8; i++) tensor_free(t[i]);
    return a;
}
static const double H100_FLOPS = 0.6 * 989e12, NVLINK_BW = 450e9, IB_BW = 50e9;
static void report_crossover(report *rep)
{
    table *t = report_table(rep, "crossover", "smallest rows per device c* that hide a step's traffic",
                            (const char *const[]){ "link", "bandwidth", "compute", "forward c*",
                                                   "backward c*", NULL });
    const struct { const char *name; double bw; } links[] = {
        { "H100 NVLink", NVLINK_BW }, { "400 Gb/s InfiniBand", IB_BW } };
    for (int i = 0; i < 2; i++) {
        const double c = 2.0 * H100_FLOPS / (2.0 * links[i].bw);
        table_rowf(t, "%s|%.0f GB/s|%.0f TFLOP/s (bf16)|%.0f|%.0f", links[i].name,
                   links[i].bw / 1e9, H100_FLOPS / 1e12, c, 0.8 * c);
    }
}
static void report_model(report *rep)
{
    const double H = 32, d = 128, e = 2;
    table *t = report_table(rep, "model", "model: one causal attention layer (forward), "
                            "32 heads of d = 128, bf16, H100s",
                            (const char *const[]){ "tokens", "devices", "rows per device",
                                                   "ring time", "hidden", "memory per device",
                                                   "Ulysses time", NULL });
    const double ns[2] = { 1e6, 1e7 };
    for (int a = 0; a < 2; a++)
        for (int P = 8; P <= 1024; P *= 2) {
            const double c = ns[a] / P, bw = P <= 8 ? NVLINK_BW : IB_BW;
            const double step_compute = 0.5 * 4.0 * c * c * d * H / H100_FLOPS;
            const double step_comm = 2.0 * c * d * H * e / bw;
            const double ring = P * (step_compute > step_comm ? step_compute : step_comm);
            const double mem = (4.0 + 4.0) * c * d * H * e;
            char uly[32] = "n/a (P > H)";
            if (P <= H)
                snprintf(uly, sizeof uly, "%.3g s", P * step_compute + 4.0 * ns[a] * d * H * e / P / bw);
            table_rowf(t, "%.0e|%d|%.0f|%.3g s|%s|%.3g GiB|%s", ns[a], P, c, ring,
                       step_compute >= step_comm ? "yes" : "no", mem / 1073741824.0, uly);
        }
}
static void run_receipts(const ring_options *o, report *rep)
{
    report_schedule(rep, o->data_dir);
    if (o->data_dir) write_zigzag_data(o->data_dir);
    report_imbalance(rep);
    report_check(rep);
    report_crossover(rep);
    report_model(rep);
    report_recorded(rep, o->recorded);
}
static bool read_recorded_line(const char *line, ring_recorded_row *w)
{
    *w = (ring_recorded_row){ 0 };
    return sscanf(line, "ch13_ring overlap %7s %d %ld %ld %ld %7s %d %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
                  w->transport, &w->ranks, &w->n, &w->d, &w->heads, w->layout, &w->causal,
                  &w->ring_s, &w->compute_s, &w->comm_s, &w->hidden_pct, &w->imbalance,
                  &w->rss_mib, &w->counted_mib, &w->gflops, &w->gbs, &w->cstar) == 17
        && w->ranks > 0;
}
bool ring_read_recorded(const char *path, ring_recorded *rec)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int ranks, code;
    *rec = (ring_recorded){ .when = "(not recorded)", .commit = "-", .machine = "(none)",
                            .capped_exit = { -1, -1 } };
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "# make bench: date %63s commit %63s", rec->when, rec->commit);
        sscanf(line, "# machine: cpu_model = %159[^\n]", rec->machine);
        sscanf(line, "# machine: cpus = %d", &rec->cpus);
        if (sscanf(line, "# cap %*d KiB, P = %d: exit %d", &ranks, &code) == 2)
            rec->capped_exit[ranks > 1] = code;
        else if (sscanf(line, "# cap %*d KiB, P = 1: ch13_ring: error: %511[^\n]", rec->refusal) == 1) {}
        if (rec->count < RING_RECORDED_ROWS && read_recorded_line(line, &rec->row[rec->count]))
            rec->count++;
    }
    fclose(f);
    return rec->count > 0;
}
static void recorded_overlap_table(report *rep, const ring_recorded *rec)
{
    table *t = report_table(rep, "recorded", "the ring, its compute alone and its transfers "
                            "alone, recorded (4 heads, d = 64, forward)",
                            (const char *const[]){ "transport", "P", "rows per rank", "ring ms",
                                                   "compute ms", "transfers ms", "hidden", NULL });
    int rows = 0;
    for (int i = 0; i < rec->count; i++) {
        const ring_recorded_row *w = &rec->row[i];
        if (w->heads != 4 || w->causal) continue;
        table_rowf(t, "%s|%d|%ld|%.2f|%.2f|%.2f|%.0f%%", strcmp(w->transport, "tcp") ? "shared memory"
                   : "TCP", w->ranks, w->n / w->ranks, 1e3 * w->ring_s, 1e3 * w->compute_s,
                   1e3 * w->comm_s, w->hidden_pct);
        rows++;
    }
    if (rows == 0) table_rowf(t, "(not recorded)|-|-|-|-|-|-");
}
static const ring_recorded_row *largest_slice(const ring_recorded *rec, const char *transport,
                                              int ranks)
{
    const ring_recorded_row *best = NULL;
    for (int i = 0; i < rec->count; i++) {
        const ring_recorded_row *w = &rec->row[i];
        if (w->heads == 4 && !w->causal && w->ranks == ranks && strcmp(w->transport, transport) == 0
            && (!best || w->n > best->n))
            best = w;
    }
    return best;
}
static void overlap_sentence(const ring_recorded *rec, char *out, size_t size)
{
    const ring_recorded_row *sm = largest_slice(rec, "sm", 2), *tcp = largest_slice(rec, "tcp", 2);
    if (!sm || !tcp) { snprintf(out, size, "(The overlap was not recorded.)"); return; }
    snprintf(out, size, "With $P = 2$, one rank a core, at %ld rows per rank, the ring hid %.0f%% "
             "of its transfers on shared memory and %.0f%% over TCP; the crossover the same runs "
             "measured is %.0f rows (shared memory, %.1f GB/s against %.0f GFLOP/s) and %.0f (TCP, "
             "%.1f GB/s), so these slices are %.0f and %.0f times past it. The goal of 90%% hidden "
             "past the crossover is %s. %s", sm->n / 2, sm->hidden_pct, tcp->hidden_pct, sm->cstar,
             sm->gbs, sm->gflops, tcp->cstar, tcp->gbs, (double)(sm->n / 2) / sm->cstar,
             (double)(tcp->n / 2) / tcp->cstar,
             sm->hidden_pct >= 90 && tcp->hidden_pct >= 90 ? "met on both transports"
             : sm->hidden_pct >= 90 || tcp->hidden_pct >= 90 ? "met on one transport only"
             : "missed on both",
             rec->cpus > 0 && rec->cpus < 4 ? "The runs of $P = 4$ put four ranks on fewer cores; "
             "there the compute alone keeps every core busy and no transfer can hide." : "");
}
static void imbalance_and_memory(const ring_recorded *rec, char *imb, char *mem, size_t size)
{
    double plain = NAN, zigzag = NAN, rss[5] = { NAN, NAN, NAN, NAN, NAN };
    for (int i = 0; i < rec->count; i++) {
        const ring_recorded_row *w = &rec->row[i];
        if (w->causal) *(strcmp(w->layout, "zigzag") ? &plain : &zigzag) = w->imbalance;
        if (w->heads == 64 && w->ranks <= 4) rss[w->ranks] = w->rss_mib;
    }
    snprintf(imb, size, "the slowest rank's compute time over the mean was, measured, %.2f with "
             "the plain ring and %.2f with the zigzag.", plain, zigzag);
    snprintf(mem, size, "The peak resident memory per rank was %.0f MiB with one rank, %.0f MiB "
             "with two (%.2f of one) and %.0f MiB with four (%.2f). Under a cap of 600000 KiB "
             "of address space, one process %s; four ranks %s.", rss[1], rss[2], rss[2] / rss[1],
             rss[4], rss[4] / rss[1], rec->capped_exit[0] == 2 ? "refused the problem before "
             "allocating, in one line" : "did not refuse it", rec->capped_exit[1] == 0
             ? "ran it" : "failed too");
}
void ring_recorded_sentences(const ring_recorded *rec, char *overlap, char *imbalance,
                             char *memory, size_t size)
{
    overlap_sentence(rec, overlap, size);
    imbalance_and_memory(rec, imbalance, memory, size);
}
static void report_recorded(report *rep, const char *path)
{
    static char names[8][LADDER_PATH_MAX];
    static ring_recorded rec;
    char overlap[1024], imb[1024], mem[1024], when[400];
    const size_t files = ladder_recorded_files(path, names, 8);
    bool found = false;
    for (size_t i = 0; i < files && !found; i++) found = ring_read_recorded(names[i], &rec);
    if (!found) ring_read_recorded("", &rec);
    recorded_overlap_table(rep, &rec);
    ring_recorded_sentences(&rec, overlap, imb, mem, sizeof imb);
    if (found) snprintf(when, sizeof when, "%s, %d CPUs, recorded %.10s (commit %s)", rec.machine,
                        rec.cpus, rec.when, rec.commit);
    else snprintf(when, sizeof when, "(no record of this program under %.300s)", path);
    report_fact(rep, "recorded_when", when);
    report_fact(rep, "overlap_sentence", overlap);
    report_fact(rep, "imbalance_sentence", imb);
    report_fact(rep, "memory_sentence", mem);
    report_fact(rep, "refusal", rec.refusal[0] ? rec.refusal : "(not recorded)");
}
static double timed_ring(const ring_comm *c, const ring_problem *pr, ring_local *me,
                         int mode, double *compute)
{
    ring_timing tm = { 0 };
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = ring_now();
    if (mode == 0) ring_forward(c, pr, me, &tm);
    else if (mode == 1) {
        start_rows(pr, me);
        for (int t = 0; t < c->ranks; t++) {
            const double s = ring_now();
            forward_step(pr, me, &me->krows, me->kv, &me->scratch);
            tm.compute_s += ring_now() - s;
        }
    } else
        for (int t = 0; t < c->ranks; t++) {
            MPI_Request req[2];
            const int n = post_next_slice(c, pr, t, me->kvbuf[0], me->kvbuf[1], req);
            wait_all(c, n, req, &tm);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    *compute = tm.compute_s;
    return ring_now() - t0;
}
static int slowest_rank(const double *t, int ranks)
{
    int s = 0;
    for (int r = 1; r < ranks; r++) if (t[r] > t[s]) s = r;
    return s;
}
static void run_measure(const ring_comm *c, const ring_options *o, report *rep)
{
    if (!c->mpi) die_usage(PROGRAM, "--measure runs under mpirun");
    if (c->ranks > 1024) die_usage(PROGRAM, "--measure: at most 1024 ranks");
    const ring_problem pr = decide_problem(c, o);
    ring_local me = local_new(&pr, c->ranks, c->rank);
    const size_t kf = pr.heads * me.krows.rows * pr.d;
    draw_rows((uint64_t)o->seed, 0, &me.qrows, pr.heads, pr.nq, pr.d, me.q);
    draw_rows((uint64_t)o->seed, 1, &me.krows, pr.heads, pr.nk, pr.d, me.kv);
    draw_rows((uint64_t)o->seed, 2, &me.krows, pr.heads, pr.nk, pr.d, me.kv + kf);
    enum { MAXR = 1000 };
    double ring[MAXR], comp[MAXR], comm[MAXR], mine[MAXR], unused;
    const int reps = (int)o->repeats;
    for (int i = 0; i < reps; i++) {
        ring[i] = timed_ring(c, &pr, &me, 0, &mine[i]);
        comp[i] = timed_ring(c, &pr, &me, 1, &unused);
        comm[i] = timed_ring(c, &pr, &me, 2, &unused);
    }
    const double my_compute = median_of(mine, (size_t)reps);
    double per_rank[1024] = { 0 }, rss = (double)process_peak_rss(), most_rss = 0;
    double counted = (double)fa_bytes_peak(), most_counted = 0;
    MPI_Gather(&my_compute, 1, MPI_DOUBLE, per_rank, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &most_rss, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&counted, &most_counted, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        double mean = 0, most = 0;
        for (int r = 0; r < c->ranks; r++) { mean += per_rank[r] / c->ranks; if (per_rank[r] > most) most = per_rank[r]; }
        const double tr = median_of(ring, (size_t)reps), tc = median_of(comp, (size_t)reps), tm = median_of(comm, (size_t)reps);
        double hidden = tm > 0 ? 100.0 * (1.0 - (tr - tc) / tm) : 100.0;
        hidden = hidden < 0 ? 0 : hidden > 100 ? 100 : hidden;
        const int slowest = slowest_rank(per_rank, c->ranks);
        const double flops = 4.0 * ring_rank_pairs(pr.layout, pr.nq, pr.nk, pr.causal, c->ranks, slowest)
                           * (double)pr.d * (double)pr.heads;
        const double gflops = flops / per_rank[slowest] / 1e9;
        const double gbs = c->ranks > 1 ? 4.0 * (double)kv_floats(&pr, &me.krows) * (c->ranks - 1) / tm / 1e9 : 0;
        printf("ch13_ring overlap %s %d %zu %zu %zu %s %d %.4g %.4g %.4g %.0f %.3f %.1f %.1f %.2f %.2f %.0f\n",
               getenv("CH13_TRANSPORT") ? getenv("CH13_TRANSPORT") : "sm", c->ranks, pr.nq, pr.d,
               pr.heads, pr.layout == RING_PLAIN ? "ring" : "zigzag", pr.causal, tr, tc, tm, hidden,
               mean > 0 ? most / mean : 1.0, most_rss / 1048576.0, most_counted / 1048576.0,
               gflops, gbs, gbs > 0 ? 4.0 * gflops / (2.0 * gbs) : 0.0);
    }
    local_free(&me);
    (void)rep;
}
static int bench_job(const ring_options *o, const char *transport, int ranks, const char *args)
{
    char cmd[2048];
    const char *self = "./ch13_ring";
    snprintf(cmd, sizeof cmd,
             "CH13_TRANSPORT=%s OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "timeout 600 %s -q --oversubscribe -np %d %s %s --measure %s",
             transport, o->mpirun ? o->mpirun : "mpirun", ranks,
             strcmp(transport, "tcp") == 0 ? "--mca btl tcp,self" : "--mca btl self,vader",
             self, args);
    fprintf(stderr, PROGRAM ": bench: %s\n", cmd);
    fflush(stdout);
    const int rc = system(cmd);
    if (rc != 0) printf("# ch13_ring: failed (status %d): %s\n", rc, args);
    return rc;
}
static void run_bench(const ring_options *o, report *rep)
{
    (void)rep;
    const char *transports[2] = { "sm", "tcp" };
    char args[256];
    printf("# ch13_ring: columns: program kind transport P n d heads layout causal ring_s compute_s "
           "comm_s hidden_pct compute_max/mean peak_rss_MiB counted_MiB gflops gbs cstar\n");
    const long rows[3] = { 64, 256, 1024 };
    for (int t = 0; t < 2; t++)
        for (int P = 2; P <= 4; P += 2)
            for (int i = 0; i < (o->quick ? 2 : 3); i++) {
                snprintf(args, sizeof args, "--seq %ld --dim 64 --heads 4 --repeats 5", rows[i] * P);
                bench_job(o, transports[t], P, args);
            }
    for (int l = 0; l < 2; l++) {
        snprintf(args, sizeof args, "--seq 4096 --dim 64 --heads 4 --causal --layout %s --repeats 3",
                 l ? "zigzag" : "ring");
        bench_job(o, "sm", 4, args);
    }
    for (int P = 1; P <= 4; P *= 2) bench_job(o, "sm", P, "--seq 1024 --dim 128 --heads 64 --repeats 1");
    fflush(stdout);
    for (int P = 1; P <= 4; P += 3) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "sh -c 'ulimit -v 600000; CH13_TRANSPORT=sm OMPI_ALLOW_RUN_AS_ROOT=1 "
                 "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 600 %s -q --oversubscribe -np %d ./ch13_ring "
                 "--measure --seq 1024 --dim 128 --heads 64 --repeats 1 2>&1; echo \"exit $?\"' "
                 "| sed 's/^/# cap 600000 KiB, P = %d: /'", o->mpirun ? o->mpirun : "mpirun", P, P);
        if (system(cmd) != 0) fprintf(stderr, PROGRAM ": bench: the capped run of P = %d failed\n", P);
    }
}
static ring_problem problem_of(const ring_options *o, const attn_params *files)
{
    ring_problem pr = { .heads = (size_t)o->heads, .nq = (size_t)o->seq,
                        .nk = (size_t)(o->seq_k ? o->seq_k : o->seq), .d = (size_t)o->dim,
                        .causal = o->causal, .backward = o->backward,
                        .fault_rank = (int)o->fault_rank };
    if (files) { pr.heads = files->batch * files->heads; pr.nq = files->nq; pr.nk = files->nk;
                 pr.d = files->d; }
    pr.scale = o->scale > 0 ? (float)o->scale : (float)(1.0 / sqrt((double)pr.d));
    if (!o->layout || strcmp(o->layout, "ring") == 0) pr.layout = RING_PLAIN;
    else if (strcmp(o->layout, "zigzag") == 0) pr.layout = RING_ZIGZAG;
    else die_usage(PROGRAM, "--layout must be ring or zigzag, not %s", o->layout);
    return pr;
}
static ring_problem decide_problem(const ring_comm *c, const ring_options *o)
{
    ring_problem pr = { 0 };
    if (c->rank == 0) {
        attn_params files = { 0 };
        const bool from_files = file_mode(o);
        if (from_files) files = check_files(o);
        pr = problem_of(o, from_files ? &files : NULL);
        if (pr.fault_rank >= c->ranks) die_usage(PROGRAM, "--fault-rank %d: there are %d ranks",
                                                 pr.fault_rank, c->ranks);
        size_t most = 0;
        for (int r = 0; r < c->ranks; r++)
            if (rank_bytes(&pr, c->ranks, r) > most) most = rank_bytes(&pr, c->ranks, r);
        const bool whole = from_files || o->check;
        fa_require(most + (whole ? 2 * whole_bytes(&pr) : 0), whole
                   ? "a rank's rows, its slices in flight and, on rank 0, the whole problem"
                   : "a rank's rows and its slices in flight");
    }
    if (c->mpi) MPI_Bcast(&pr, (int)sizeof pr, MPI_BYTE, 0, MPI_COMM_WORLD);
    return pr;
}
static void run_job(const ring_comm *c, const ring_options *o, report *rep)
{
    const ring_problem pr = decide_problem(c, o);
    if (!c->mpi) fprintf(stderr, PROGRAM ": one process, not under mpirun: the ring of P = 1\n");
    const bool whole = c->rank == 0 && (file_mode(o) || o->check);
    ring_whole w = { 0 };
    ring_results res = { 0 };
    if (whole) {
                   if (file_mode(o)) w = read_whole(o);
                   else {
                       const size_t shq[3] = { pr.heads, pr.nq, pr.d }, shk[3] = { pr.heads, pr.nk, pr.d };
                       w = (ring_whole){ tensor_new(3, shq), tensor_new(3, shk), tensor_new(3, shk),
                                         tensor_new(3, shq) };
                       const row_set allq = ring_rows(RING_PLAIN, pr.nq, 1, 0), allk = ring_rows(RING_PLAIN, pr.nk, 1, 0);
                       draw_rows((uint64_t)o->seed, 0, &allq, pr.heads, pr.nq, pr.d, w.q.data);
                       draw_rows((uint64_t)o->seed, 1, &allk, pr.heads, pr.nk, pr.d, w.k.data);
                       draw_rows((uint64_t)o->seed, 2, &allk, pr.heads, pr.nk, pr.d, w.v.data);
                       draw_rows((uint64_t)o->seed, 3, &allq, pr.heads, pr.nq, pr.d, w.dout.data);
                   }
                   const size_t shq[3] = { pr.heads, pr.nq, pr.d }, shk[3] = { pr.heads, pr.nk, pr.d };
                   res = (ring_results){ tensor_new(3, shq), tensor_new(3, shq), tensor_new(3, shk),
                                         tensor_new(3, shk) };
               }
    ring_local me = local_new(&pr, c->ranks, c->rank);
    if (file_mode(o)) scatter_inputs(c, &pr, &w, &me);
    else {
        const size_t kf = pr.heads * me.krows.rows * pr.d;
        draw_rows((uint64_t)o->seed, 0, &me.qrows, pr.heads, pr.nq, pr.d, me.q);
        draw_rows((uint64_t)o->seed, 1, &me.krows, pr.heads, pr.nk, pr.d, me.kv);
        draw_rows((uint64_t)o->seed, 2, &me.krows, pr.heads, pr.nk, pr.d, me.kv + kf);
        draw_rows((uint64_t)o->seed, 3, &me.qrows, pr.heads, pr.nq, pr.d, me.dout);
    }
    ring_timing tm = { 0 };
    ring_forward(c, &pr, &me, &tm);
    if (pr.backward) ring_backward(c, &pr, &me, &tm);
    if (file_mode(o) || o->check) gather_outputs(c, &pr, &me, &res);
    if (c->rank == 0) {
                          report_factf(rep, "ranks", "%d", c->ranks);
                          report_factf(rep, "layout", "%s", pr.layout == RING_PLAIN ? "ring" : "zigzag");
                          report_factf(rep, "shape", "%zu heads, nq %zu, nk %zu, d %zu%s", pr.heads, pr.nq, pr.nk,
                                       pr.d, pr.causal ? ", causal" : "");
                          if (file_mode(o)) write_outputs(o, &w, &res);
                          if (o->check) report_agreement(rep, &pr, compare_one_process(&pr, &w, &res));
                      }
    local_free(&me);
    if (whole) {
        tensor *t[8] = { &w.q, &w.k, &w.v, &w.dout, &res.o, &res.dq, &res.dk, &res.dv };
        for (int i = 0; i < 8; i++) if (t[i]->data) tensor_free(t[i]);
    }
}
static void report_agreement(report *rep, const ring_problem *pr, ring_agreement a)
{
    const double tol = 1e-5;
    report_factf(rep, "err_o_ch08", "%.2e", a.o_ch08);
    report_factf(rep, "err_o_exact", "%.2e", a.o_exact);
    bool ok = a.o_ch08 <= tol && a.o_exact <= tol;
    if (pr->backward) {
        report_factf(rep, "err_dq_ch09", "%.2e", a.dq);
        report_factf(rep, "err_dk_ch09", "%.2e", a.dk);
        report_factf(rep, "err_dv_ch09", "%.2e", a.dv);
        ok = ok && a.dq <= tol && a.dk <= tol && a.dv <= tol;
    }
    report_factf(rep, "digest", "%016llx", (unsigned long long)a.bits);
    report_fact(rep, "agree", ok ? "yes" : "no");
}
int main(int argc, char **argv)
{
    ring_comm c = ring_start(&argc, &argv);
    ring_options o = { .seq = 256, .dim = 64, .heads = 2, .seed = 1, .fault_rank = -1,
                       .repeats = 3, .recorded = "chapters/recorded" };
    int saved = -1;
    if (c.rank != 0) { fflush(stderr); saved = dup(2); if (!freopen("/dev/null", "w", stderr)) saved = -1; }
    parse_ring_options(argc, argv, &o);
    if (saved >= 0) { fflush(stderr); dup2(saved, 2); close(saved); }
    fa_isa_cap(PROGRAM);
    report *r = report_new(PROGRAM, o.json);
    if (o.bench) run_bench(&o, r);
    else if (o.measure) run_measure(&c, &o, r);
    else if (c.mpi || file_mode(&o) || o.check) run_job(&c, &o, r);
    else run_receipts(&o, r);
    if (c.rank == 0) report_finish(r, stdout);
    ring_stop(&c);
    return 0;
}
