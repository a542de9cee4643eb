/* ch12_real_model.h — what chapter 12's program and its tests share.
   Tangled from chapters/ch12_real_model.nw. */
#ifndef CH12_REAL_MODEL_H
#define CH12_REAL_MODEL_H
#include <stdbool.h>
#include <stdint.h>
#include "harness/harness.h"
#include "harness/safetensors.h"
#include "cpu/amx_attention.h"
#include "cpu/workers.h"
#define CH12_PROGRAM "ch12_real_model"
enum { BERT_HIDDEN = 384, BERT_HEADS = 12, BERT_DIM = 32, BERT_FF = 1536, BERT_LAYERS = 6,
       BERT_VOCAB = 30522, BERT_POSITIONS = 512, BERT_TYPES = 2, BERT_MAX_TOKENS = 256 };
#define BERT_EPS 1e-12
typedef struct {
    char *blob;              /* every piece, NUL-terminated, end to end */
    size_t *start, *length;  /* per id */
    uint32_t *slot;          /* hash table of id + 1; 0 is empty */
    size_t slots, count, max_chars;
    int32_t unk, cls, sep;
} vocab;
void vocab_load(const char *path, vocab *v);      /* tokenizer.json; exits 2 on a problem */
void vocab_free(vocab *v);
int32_t vocab_find(const vocab *v, const char *piece, size_t length);   /* -1 if absent */
/* TEXT's ids, [CLS] ... [SEP], at most BERT_MAX_TOKENS: their count, or -1
   with "invalid UTF-8 at byte N" in err */
int tokenize(const vocab *v, const char *text, size_t length, int32_t ids[BERT_MAX_TOKENS],
             char *err, size_t errlen);
typedef struct { const float *w, *b; } bert_linear;     /* w: out x in, as PyTorch keeps it */
typedef struct { const float *gamma, *beta; } bert_norm;
typedef struct { bert_linear q, k, v, o, up, down; bert_norm norm1, norm2; } bert_layer;
typedef struct {
    st_file file;
    vocab vocab;
    const float *word, *position, *type;
    bert_norm norm0;
    bert_layer layer[BERT_LAYERS];
    size_t parameters;
} bert_model;
void bert_load(const char *dir, bert_model *m);   /* exits 2 with one line on a problem */
void bert_free(bert_model *m);
void bert_check_config(const char *path);
typedef enum { ATTN_NAIVE, ATTN_TILED, ATTN_FUSED, ATTN_BF16, ATTN_KINDS } ch12_attention;
typedef struct { double attention, linear, other; } ch12_times;
typedef struct {
    size_t count;              /* sentences */
    const size_t *offset;      /* count + 1: sentence s is tokens offset[s] .. offset[s+1]-1 */
    const int32_t *ids;        /* offset[count] token ids, end to end */
} ch12_batch;
typedef struct {
    float *x, *q, *k, *v, *ctx, *tmp, *up, *heads;
    size_t tokens;
    workers_crew *crew;        /* the attention's threads, kept from call to call */
} ch12_work;
const char *ch12_attention_name(ch12_attention a);
amx_kernel ch12_bf16_engine(void);
size_t ch12_work_bytes(size_t tokens);
ch12_work ch12_work_new(size_t tokens);
void ch12_work_free(ch12_work *w);
void bert_encode(const bert_model *m, const ch12_batch *b, ch12_attention a, int threads,
                 ch12_work *w, float *out, ch12_times *t);
typedef struct { size_t count; int32_t (*ids)[BERT_MAX_TOKENS]; size_t *length; } ch12_text;
/* every line of TEXT (split at '\n'; a last line without one counts): exits 2
   naming WHAT, the byte and the line on invalid UTF-8 */
ch12_text ch12_tokenize_lines(const vocab *v, const char *what, const char *text, size_t size);
ch12_text ch12_tokenize_args(const vocab *v, int count, char **args);
void ch12_text_free(ch12_text *t);
size_t ch12_pack(const ch12_text *t, size_t first, size_t count, size_t *offset, int32_t *ids);
void ch12_embed(const bert_model *m, const ch12_text *t, size_t batch, ch12_attention a,
                int threads, float *out, ch12_times *times);
double ch12_cosine(const float *a, const float *b);
size_t ch12_nearest(const float *e, size_t count, size_t i);
typedef struct { double max_abs, min_cos; } ch12_diff;
ch12_diff ch12_compare(const float *a, const float *b, size_t count);
typedef struct { size_t real_tokens, padded_tokens; double real_scores, padded_scores; } ch12_padding;
ch12_padding ch12_padding_of(const ch12_text *t, size_t batch);
typedef struct { ch12_text text; float *embedding; char versions[512]; } ch12_goldens;
/* tests/goldens' token ids and embeddings; 0, or -1 with one line in err */
int ch12_read_goldens(const char *dir, ch12_goldens *g, char *err, size_t errlen);
void ch12_goldens_free(ch12_goldens *g);
double ch12_fp32_bound(void);
double ch12_bf16_cosine_bound(void);
double ch12_gelu_bound(float x);      /* |GELU - ch12_gelu| for the input x */
void   ch12_gelu(float *x, size_t n);  /* x[i] = GELU(x[i]), i < n */
double ch12_linear_flops(void);                /* a layer's linear work per token */
double ch12_attention_flop_share(double n);    /* attention's share at n tokens */
enum { CH12_RECORDED_ROWS = 16 };
typedef struct {
    char workload[16];
    long tokens, threads;
    double median, min, max, attention, linear, other, torch;   /* torch: NaN if not run */
} ch12_recorded_row;
typedef struct {
    char when[64], commit[64], machine[160];
    int count;
    ch12_recorded_row row[CH12_RECORDED_ROWS];
} ch12_recorded;
/* this program's lines of one recorded benchmark file: true when there are any */
bool ch12_read_recorded(const char *path, ch12_recorded *rec);
void ch12_speed_sentences(const ch12_recorded *rec, char *speed, char *share, char *behind,
                          size_t size);
int chapter_main(int argc, char **argv);
#endif
