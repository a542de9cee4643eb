/* ch12_real_model — all-MiniLM-L6-v2 run in C: sentence embeddings through the
   book's attention kernels. Tangled from chapters/ch12_real_model.nw. */
#define _GNU_SOURCE
#include <cblas.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>
#include <unicode/utf16.h>
#include "ch12_real_model.h"
#include "cpu/attention.h"
#include "cpu/fused.h"
#include "cpu/vexp.h"
#include "harness/ladder.h"
static uint64_t piece_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}
int32_t vocab_find(const vocab *v, const char *piece, size_t length)
{
    for (size_t i = piece_hash(piece, length) % v->slots;; i = (i + 1) % v->slots) {
        const uint32_t id = v->slot[i];
        if (id == 0) return -1;
        if (v->length[id - 1] == length && memcmp(v->blob + v->start[id - 1], piece, length) == 0)
            return (int32_t)id - 1;
    }
}
static void vocab_add(vocab *v, const char *piece, size_t length, size_t id, size_t *used)
{
    if (id >= v->count || v->length[id] != SIZE_MAX || vocab_find(v, piece, length) >= 0)
        die_line("tokenizer.json: the vocabulary gives id %zu twice, a piece twice, or an id "
                 "past its %zu entries", id, v->count);
    memcpy(v->blob + *used, piece, length + 1);
    v->start[id] = *used;
    v->length[id] = length;
    *used += length + 1;
    size_t i = piece_hash(piece, length) % v->slots;
    while (v->slot[i]) i = (i + 1) % v->slots;
    v->slot[i] = (uint32_t)id + 1;
}
static void vocab_read_pieces(json_cursor *c, vocab *v, size_t bytes)
{
    static char piece[1024];
    size_t length, used = 0, id;
    bool more = true;
    double x;
    v->blob = bookkeeping_alloc(bytes);
    if (!json_expect(c, '{')) return;
    while (more && json_string(c, piece, sizeof piece, &length) && json_expect(c, ':')
           && json_number(c, &x)) {
        if (!(x >= 0 && x == floor(x)) || used + length + 1 > bytes) {
            json_fail(c, "an id must be a whole number");
            return;
        }
        id = (size_t)x;
        vocab_add(v, piece, length, id, &used);
        if (!json_next(c, '}', &more)) return;
    }
}
static bool json_is(const json_cursor *object, const char *key, const char *literal)
{
    json_cursor value;
    if (!json_member(object, key, &value)) return false;
    return (size_t)(value.end - value.at) >= strlen(literal)
        && memcmp(value.at, literal, strlen(literal)) == 0;
}
static void vocab_check_settings(const json_cursor *top)
{
    json_cursor norm, model;
    if (!json_member(top, "normalizer", &norm) || !json_is(&norm, "type", "\"BertNormalizer\"")
        || !json_is(&norm, "clean_text", "true") || !json_is(&norm, "handle_chinese_chars", "true")
        || !json_is(&norm, "lowercase", "true")
        || !(json_is(&norm, "strip_accents", "null") || json_is(&norm, "strip_accents", "true")))
        die_line("tokenizer.json: not BERT's lower-casing, accent-stripping normalizer");
    if (!json_member(top, "model", &model) || !json_is(&model, "type", "\"WordPiece\"")
        || !json_is(&model, "continuing_subword_prefix", "\"##\"")
        || !json_is(&model, "unk_token", "\"[UNK]\""))
        die_line("tokenizer.json: not a WordPiece model with '##' and [UNK]");
}
static char *read_whole_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) die_line("cannot read %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) die_line("cannot read %s: not a regular file", path);
    const long n = ftell(f);
    rewind(f);
    char *text = bookkeeping_alloc((size_t)(n < 0 ? 0 : n) + 1);
    if (n < 0 || fread(text, 1, (size_t)n, f) != (size_t)n || ferror(f))
        die_line("cannot read %s", path);
    fclose(f);
    text[n] = '\0';
    *size = (size_t)n;
    return text;
}
void vocab_load(const char *path, vocab *v)
{
    size_t size;
    char *text = read_whole_file(path, &size);
    json_cursor top = json_begin(text, size), model, pieces, limit;
    vocab_check_settings(&top);
    double max_chars;
    if (!json_member(&top, "model", &model) || !json_member(&model, "vocab", &pieces)
        || !json_member(&model, "max_input_chars_per_word", &limit) || !json_number(&limit, &max_chars))
        die_line("%s: no WordPiece vocabulary (%s)", path, pieces.err[0] ? pieces.err : "missing");
    *v = (vocab){ .count = BERT_VOCAB, .slots = 4 * BERT_VOCAB, .max_chars = (size_t)max_chars };
    v->start = bookkeeping_alloc(v->count * sizeof *v->start);
    v->length = bookkeeping_alloc(v->count * sizeof *v->length);
    v->slot = bookkeeping_alloc(v->slots * sizeof *v->slot);
    memset(v->length, 0xff, v->count * sizeof *v->length);
    memset(v->slot, 0, v->slots * sizeof *v->slot);
    vocab_read_pieces(&pieces, v, size);
    if (pieces.err[0]) die_line("%s: %s", path, pieces.err);
    for (size_t id = 0; id < v->count; id++)
        if (v->length[id] == SIZE_MAX)
            die_line("%s: no piece has id %zu of the %zu config.json promises", path, id, v->count);
    v->unk = vocab_find(v, "[UNK]", 5);
    v->cls = vocab_find(v, "[CLS]", 5);
    v->sep = vocab_find(v, "[SEP]", 5);
    if (v->unk < 0 || v->cls < 0 || v->sep < 0) die_line("%s: no [UNK], [CLS] or [SEP]", path);
    free(text);
}
void vocab_free(vocab *v)
{
    free(v->blob); free(v->start); free(v->length); free(v->slot);
    *v = (vocab){ 0 };
}
static long utf8_next(const unsigned char *s, size_t n, size_t *i)
{
    const unsigned char b = s[*i];
    const int extra = b < 0x80 ? 0 : b >= 0xc2 && b < 0xe0 ? 1 : b >= 0xe0 && b < 0xf0 ? 2
                    : b >= 0xf0 && b < 0xf5 ? 3 : -1;
    if (extra < 0 || *i + (size_t)extra >= n) return -1;
    long u = extra == 0 ? b : b & (0x3f >> extra);
    for (int k = 1; k <= extra; k++) {
        if ((s[*i + k] & 0xc0) != 0x80) return -1;
        u = u << 6 | (s[*i + k] & 0x3f);
    }
    static const long least[4] = { 0, 0x80, 0x800, 0x10000 };
    if (u < least[extra] || u > 0x10ffff || (u >= 0xd800 && u < 0xe000)) return -1;
    *i += (size_t)extra + 1;
    return u;
}
static bool is_bert_space(UChar32 c)
{
    return c == '\t' || c == '\n' || c == '\r' || u_hasBinaryProperty(c, UCHAR_WHITE_SPACE);
}
static bool is_bert_other(UChar32 c)
{
    const int t = u_charType(c);
    return c != '\t' && c != '\n' && c != '\r'
        && (t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_SURROGATE
            || t == U_PRIVATE_USE_CHAR || t == U_UNASSIGNED);
}
static bool is_cjk(UChar32 c)
{
    return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf)
        || (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f)
        || (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b920 && c <= 0x2ceaf)
        || (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}
static bool is_bert_punct(UChar32 c)
{
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96)
        || (c >= 123 && c <= 126) || u_ispunct(c);
}
typedef struct { UChar32 *c; size_t n, cap; } codepoints;
static void push(codepoints *s, UChar32 c)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->c = realloc(s->c, s->cap * sizeof *s->c);
        if (!s->c) bookkeeping_out_of_memory();
    }
    s->c[s->n++] = c;
}
static void push_lowered(codepoints *s, UChar32 c)
{
    UChar one[2], lower[8];
    int32_t n = 0, m;
    UErrorCode e = U_ZERO_ERROR;
    U16_APPEND_UNSAFE(one, n, c);
    m = u_strToLower(lower, 8, one, n, "", &e);
    for (int32_t i = 0; i < m && U_SUCCESS(e);) {
        UChar32 l;
        U16_NEXT(lower, i, m, l);
        push(s, l);
    }
}
static void push_stripped(codepoints *s, UChar32 c)
{
    UChar d[32];
    UErrorCode e = U_ZERO_ERROR;
    const int32_t n = unorm2_getDecomposition(unorm2_getNFDInstance(&e), c, d, 32, &e);
    if (n < 0 || U_FAILURE(e)) { push_lowered(s, c); return; }
    for (int32_t i = 0; i < n;) {
        UChar32 part;
        U16_NEXT(d, i, n, part);
        if (u_charType(part) != U_NON_SPACING_MARK) push_lowered(s, part);
    }
}
static void normalize_char(codepoints *s, UChar32 c)
{
    if (c == 0 || c == 0xfffd || is_bert_other(c)) return;
    if (is_bert_space(c)) { push(s, ' '); return; }
    if (is_cjk(c)) { push(s, ' '); push(s, c); push(s, ' '); return; }
    if (u_charType(c) == U_NON_SPACING_MARK) return;
    push_stripped(s, c);
}
typedef struct { int32_t *ids; size_t n, cap; } id_list;
static void add_id(id_list *out, int32_t id)
{
    if (out->n < out->cap) out->ids[out->n++] = id;
}
static int32_t find_piece(const vocab *v, const char *word, const size_t *at, size_t start,
                          size_t end)
{
    char piece[4 * 128 + 3] = "##";
    memcpy(piece + 2, word + at[start], at[end] - at[start]);
    return start ? vocab_find(v, piece, at[end] - at[start] + 2)
                 : vocab_find(v, piece + 2, at[end] - at[start]);
}
static void wordpiece(const vocab *v, const UChar32 *w, size_t n, id_list *out)
{
    char word[4 * 128];
    size_t at[129] = { 0 }, first = out->n;
    if (n > v->max_chars || n > 128) { add_id(out, v->unk); return; }
    for (size_t i = 0; i < n; i++) {
        int32_t len = 0;
        U8_APPEND_UNSAFE(word + at[i], len, w[i]);
        at[i + 1] = at[i] + (size_t)len;
    }
    for (size_t start = 0, end; start < n; start = end) {
        int32_t id = -1;
        for (end = n; end > start && (id = find_piece(v, word, at, start, end)) < 0;) end--;
        if (id < 0) { out->n = first; add_id(out, v->unk); return; }
        add_id(out, id);
    }
}
static void split_words(const vocab *v, const codepoints *s, id_list *out)
{
    size_t start = 0;
    for (size_t i = 0; i <= s->n && out->n < out->cap; i++) {
        const bool end = i == s->n || s->c[i] == ' ' || is_bert_punct(s->c[i]);
        if (!end) continue;
        if (i > start) wordpiece(v, s->c + start, i - start, out);
        if (i < s->n && s->c[i] != ' ') wordpiece(v, s->c + i, 1, out);
        start = i + 1;
    }
}
int tokenize(const vocab *v, const char *text, size_t length, int32_t ids[BERT_MAX_TOKENS],
             char *err, size_t errlen)
{
    codepoints s = { 0 };
    for (size_t i = 0; i < length;) {
        const size_t at = i;
        const long c = utf8_next((const unsigned char *)text, length, &i);
        if (c < 0) {
            free(s.c);
            snprintf(err, errlen, "invalid UTF-8 at byte %zu", at);
            return -1;
        }
        normalize_char(&s, (UChar32)c);
    }
    id_list out = { ids + 1, 0, BERT_MAX_TOKENS - 2 };
    split_words(v, &s, &out);
    free(s.c);
    ids[0] = v->cls;
    ids[out.n + 1] = v->sep;
    return (int)out.n + 2;
}
void bert_check_config(const char *path)
{
    static const struct { const char *key; double value; } want[] = {
        { "hidden_size", BERT_HIDDEN }, { "num_attention_heads", BERT_HEADS },
        { "num_hidden_layers", BERT_LAYERS }, { "intermediate_size", BERT_FF },
        { "vocab_size", BERT_VOCAB }, { "max_position_embeddings", BERT_POSITIONS },
        { "type_vocab_size", BERT_TYPES }, { "layer_norm_eps", BERT_EPS } };
    size_t size;
    char *text = read_whole_file(path, &size);
    json_cursor top = json_begin(text, size), at;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        double x = NAN;
        if (!json_member(&top, want[i].key, &at) || !json_number(&at, &x) || x != want[i].value)
            die_line("%s: %s is %g, not the %g this program is built for", path, want[i].key,
                     x, want[i].value);
    }
    if (!json_is(&top, "hidden_act", "\"gelu\"")) die_line("%s: hidden_act is not \"gelu\"", path);
    free(text);
}
static const float *weight(bert_model *m, const char *name, size_t rows, size_t cols)
{
    const st_tensor *t = st_find(&m->file, name);
    if (!t) die_line("model.safetensors: no tensor %s", name);
    const bool matrix = cols > 0;
    if (t->dtype != ST_F32 || t->ndim != 1 + matrix || t->shape[0] != rows
        || (matrix && t->shape[1] != cols))
        die_line("model.safetensors: %s is %s with %d dimensions (%zu, %zu), config.json "
                 "says F32 (%zu%s%.0zu)", name, st_dtype_name(t->dtype), t->ndim, t->shape[0],
                 t->ndim > 1 ? t->shape[1] : 0, rows, matrix ? ", " : "", cols);
    m->parameters += matrix ? rows * cols : rows;
    return t->data;
}
static bert_linear linear_of(bert_model *m, int layer, const char *name, size_t out, size_t in)
{
    char w[160], b[160];
    snprintf(w, sizeof w, "encoder.layer.%d.%s.weight", layer, name);
    snprintf(b, sizeof b, "encoder.layer.%d.%s.bias", layer, name);
    return (bert_linear){ weight(m, w, out, in), weight(m, b, out, 0) };
}
static bert_norm norm_of(bert_model *m, const char *prefix)
{
    char g[160], b[160];
    snprintf(g, sizeof g, "%s.weight", prefix);
    snprintf(b, sizeof b, "%s.bias", prefix);
    return (bert_norm){ weight(m, g, BERT_HIDDEN, 0), weight(m, b, BERT_HIDDEN, 0) };
}
static void bind_layer(bert_model *m, int i)
{
    char name[160];
    bert_layer *l = &m->layer[i];
    l->q = linear_of(m, i, "attention.self.query", BERT_HIDDEN, BERT_HIDDEN);
    l->k = linear_of(m, i, "attention.self.key", BERT_HIDDEN, BERT_HIDDEN);
    l->v = linear_of(m, i, "attention.self.value", BERT_HIDDEN, BERT_HIDDEN);
    l->o = linear_of(m, i, "attention.output.dense", BERT_HIDDEN, BERT_HIDDEN);
    l->up = linear_of(m, i, "intermediate.dense", BERT_FF, BERT_HIDDEN);
    l->down = linear_of(m, i, "output.dense", BERT_HIDDEN, BERT_FF);
    snprintf(name, sizeof name, "encoder.layer.%d.attention.output.LayerNorm", i);
    l->norm1 = norm_of(m, name);
    snprintf(name, sizeof name, "encoder.layer.%d.output.LayerNorm", i);
    l->norm2 = norm_of(m, name);
}
void bert_load(const char *dir, bert_model *m)
{
    char path[4096], err[512];
    *m = (bert_model){ 0 };
    snprintf(path, sizeof path, "%s/config.json", dir);
    bert_check_config(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st_open(path, &m->file, err, sizeof err) < 0) die_line("%s: %s", path, err);
    m->word = weight(m, "embeddings.word_embeddings.weight", BERT_VOCAB, BERT_HIDDEN);
    m->position = weight(m, "embeddings.position_embeddings.weight", BERT_POSITIONS, BERT_HIDDEN);
    m->type = weight(m, "embeddings.token_type_embeddings.weight", BERT_TYPES, BERT_HIDDEN);
    m->norm0 = norm_of(m, "embeddings.LayerNorm");
    for (int i = 0; i < BERT_LAYERS; i++) bind_layer(m, i);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    vocab_load(path, &m->vocab);
}
void bert_free(bert_model *m)
{
    st_close(&m->file);
    vocab_free(&m->vocab);
}
static void linear(const bert_linear *l, const float *x, size_t rows, size_t in, size_t out,
                   float *y)
{
    for (size_t r = 0; r < rows; r++) memcpy(y + r * out, l->b, out * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)out, (int)in, 1.0f,
                x, (int)in, l->w, (int)in, 1.0f, y, (int)out);
}
static void add_norm(float *x, const float *r, const bert_norm *n, size_t rows)
{
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * BERT_HIDDEN;
        double mean = 0, var = 0;
        for (size_t j = 0; r && j < BERT_HIDDEN; j++) row[j] += r[i * BERT_HIDDEN + j];
        for (size_t j = 0; j < BERT_HIDDEN; j++) mean += row[j];
        mean /= BERT_HIDDEN;
        for (size_t j = 0; j < BERT_HIDDEN; j++) var += (row[j] - mean) * (row[j] - mean);
        const double inv = 1 / sqrt(var / BERT_HIDDEN + BERT_EPS);
        for (size_t j = 0; j < BERT_HIDDEN; j++)
            row[j] = (float)((row[j] - mean) * inv) * n->gamma[j] + n->beta[j];
    }
}
static void embed(const bert_model *m, const ch12_batch *b, float *x)
{
    for (size_t s = 0; s < b->count; s++)
        for (size_t i = 0; i < b->offset[s + 1] - b->offset[s]; i++) {
            const size_t token = b->offset[s] + i;
            const float *word = m->word + (size_t)b->ids[token] * BERT_HIDDEN,
                        *pos = m->position + i * BERT_HIDDEN;
            for (size_t j = 0; j < BERT_HIDDEN; j++)
                x[token * BERT_HIDDEN + j] = word[j] + m->type[j] + pos[j];
        }
    add_norm(x, NULL, &m->norm0, b->offset[b->count]);
}
static void split_heads(const float *x, size_t len, float *h)
{
    for (size_t head = 0; head < BERT_HEADS; head++)
        for (size_t i = 0; i < len; i++)
            memcpy(h + (head * len + i) * BERT_DIM, x + i * BERT_HIDDEN + head * BERT_DIM,
                   BERT_DIM * sizeof(float));
}
static void merge_heads(const float *h, size_t len, float *x)
{
    for (size_t head = 0; head < BERT_HEADS; head++)
        for (size_t i = 0; i < len; i++)
            memcpy(x + i * BERT_HIDDEN + head * BERT_DIM, h + (head * len + i) * BERT_DIM,
                   BERT_DIM * sizeof(float));
}
static void attend(const float *q, const float *k, const float *v, size_t len,
                   ch12_attention a, int threads, ch12_work *w, float *ctx)
{
    float *heads = w->heads;
    float *qh = heads, *kh = qh + len * BERT_HIDDEN, *vh = kh + len * BERT_HIDDEN,
          *oh = vh + len * BERT_HIDDEN;
    split_heads(q, len, qh); split_heads(k, len, kh); split_heads(v, len, vh);
    attn_params p = attn_default(1, BERT_HEADS, len, len, BERT_DIM);
    const fused_config fused = { .threads = threads, .crew = w->crew };
    if (a == ATTN_NAIVE) attention_naive(&p, qh, kh, vh, oh);
    else if (a == ATTN_TILED) attention_tiled(&p, qh, kh, vh, oh, NULL);
    else if (a == ATTN_FUSED) attention_fused(&p, qh, kh, vh, oh, &fused, NULL);
    else {
        p.block_q = 16, p.block_k = 32;
        attention_bf16(ch12_bf16_engine(), &p, qh, kh, vh, oh, threads, NULL);
    }
    merge_heads(oh, len, ctx);
}
static const float erfc_poly[10] = { -1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f,
                                     -0.18628806f, 0.27886807f, -1.13520398f, 1.48851587f,
                                     -0.82215223f, 0.17087277f };
static float erfc_exponent(float z, float t)
{
    float p = erfc_poly[9];
    for (int i = 8; i >= 0; i--) p = p * t + erfc_poly[i];
    return -z * z + p;
}
enum { GELU_BLOCK = 512 };
void ch12_gelu(float *x, size_t n)
{
    float t[GELU_BLOCK], e[GELU_BLOCK];
    const vexp_isa isa = vexp_best_isa();
    for (size_t at = 0; at < n; at += GELU_BLOCK) {
        float *v = x + at;
        const size_t m = n - at < GELU_BLOCK ? n - at : GELU_BLOCK;
        for (size_t i = 0; i < m; i++) {
            const float z = fabsf(v[i]) * (float)M_SQRT1_2;
            t[i] = 1.0f / (1.0f + 0.5f * z);
            e[i] = erfc_exponent(z, t[i]);
        }
        vexp_array(isa, e, e, m);
        for (size_t i = 0; i < m; i++) {
            const float c = t[i] * e[i];
            v[i] = 0.5f * v[i] * (v[i] >= 0.0f ? 2.0f - c : c);
        }
    }
}
static void lap(double *since, double *into)
{
    const double now = now_seconds();
    *into += now - *since;
    *since = now;
}
static void layer_forward(const bert_layer *l, const ch12_batch *b, ch12_attention a,
                          int threads, ch12_work *w, ch12_times *t)
{
    const size_t n = b->offset[b->count];
    double since = now_seconds();
    linear(&l->q, w->x, n, BERT_HIDDEN, BERT_HIDDEN, w->q);
    linear(&l->k, w->x, n, BERT_HIDDEN, BERT_HIDDEN, w->k);
    linear(&l->v, w->x, n, BERT_HIDDEN, BERT_HIDDEN, w->v);
    lap(&since, &t->linear);
    for (size_t s = 0; s < b->count; s++) {
        const size_t at = b->offset[s] * BERT_HIDDEN, len = b->offset[s + 1] - b->offset[s];
        attend(w->q + at, w->k + at, w->v + at, len, a, threads, w, w->ctx + at);
    }
    lap(&since, &t->attention);
    linear(&l->o, w->ctx, n, BERT_HIDDEN, BERT_HIDDEN, w->tmp);
    lap(&since, &t->linear);
    add_norm(w->x, w->tmp, &l->norm1, n);
    lap(&since, &t->other);
    linear(&l->up, w->x, n, BERT_HIDDEN, BERT_FF, w->up);
    lap(&since, &t->linear);
    ch12_gelu(w->up, n * BERT_FF);
    lap(&since, &t->other);
    linear(&l->down, w->up, n, BERT_FF, BERT_HIDDEN, w->tmp);
    lap(&since, &t->linear);
    add_norm(w->x, w->tmp, &l->norm2, n);
    lap(&since, &t->other);
}
static void pool(const float *x, const ch12_batch *b, float *out)
{
    for (size_t s = 0; s < b->count; s++) {
        double mean[BERT_HIDDEN] = { 0 }, norm = 0;
        const size_t len = b->offset[s + 1] - b->offset[s];
        for (size_t i = b->offset[s]; i < b->offset[s + 1]; i++)
            for (size_t j = 0; j < BERT_HIDDEN; j++) mean[j] += x[i * BERT_HIDDEN + j];
        for (size_t j = 0; j < BERT_HIDDEN; j++) norm += (mean[j] / len) * (mean[j] / len);
        const double scale = 1 / fmax(sqrt(norm), 1e-12) / len;
        for (size_t j = 0; j < BERT_HIDDEN; j++) out[s * BERT_HIDDEN + j] = (float)(mean[j] * scale);
    }
}
const char *ch12_attention_name(ch12_attention a)
{
    static const char *const names[ATTN_KINDS] = { "naive", "tiled", "fused", "bf16" };
    return a < ATTN_KINDS ? names[a] : "?";
}
amx_kernel ch12_bf16_engine(void)
{
    char why[160];
    if (amx_available(why)) return AMX_KERNEL_AMX;
    return bf16_cpu_has_avx512bf16() ? AMX_KERNEL_AVX512BF16 : AMX_KERNEL_EMULATED;
}
size_t ch12_work_bytes(size_t tokens)
{
    const size_t per_token = 6 * BERT_HIDDEN + BERT_FF + 4 * BERT_HIDDEN;
    return fa_mul(fa_mul(tokens, per_token), sizeof(float));
}
ch12_work ch12_work_new(size_t tokens)
{
    ch12_work w = { .tokens = tokens };
    float **parts[] = { &w.x, &w.q, &w.k, &w.v, &w.ctx, &w.tmp };
    for (size_t i = 0; i < 6; i++) *parts[i] = fa_alloc(fa_mul(tokens, BERT_HIDDEN * sizeof(float)));
    w.up = fa_alloc(fa_mul(tokens, BERT_FF * sizeof(float)));
    w.heads = fa_alloc(fa_mul(tokens, 4 * BERT_HIDDEN * sizeof(float)));
    return w;
}
void ch12_work_free(ch12_work *w)
{
    float *parts[] = { w->x, w->q, w->k, w->v, w->ctx, w->tmp, w->up, w->heads };
    for (size_t i = 0; i < 8; i++) fa_free(parts[i]);
    crew_close(w->crew);
}
void bert_encode(const bert_model *m, const ch12_batch *b, ch12_attention a, int threads,
                 ch12_work *w, float *out, ch12_times *t)
{
    ch12_times unused = { 0 };
    if (!t) t = &unused;
    openblas_set_num_threads(threads);
    if (a == ATTN_FUSED && threads > 1 && !crew_for(w->crew, threads)) {
        crew_close(w->crew);
        w->crew = crew_open(threads, "bert_encode");
    }
    double since = now_seconds();
    embed(m, b, w->x);
    lap(&since, &t->other);
    for (int i = 0; i < BERT_LAYERS; i++) layer_forward(&m->layer[i], b, a, threads, w, t);
    since = now_seconds();
    pool(w->x, b, out);
    lap(&since, &t->other);
}
size_t ch12_pack(const ch12_text *t, size_t first, size_t count, size_t *offset, int32_t *ids)
{
    offset[0] = 0;
    for (size_t s = 0; s < count; s++) {
        memcpy(ids + offset[s], t->ids[first + s], t->length[first + s] * sizeof *ids);
        offset[s + 1] = offset[s] + t->length[first + s];
    }
    return offset[count];
}
ch12_padding ch12_padding_of(const ch12_text *t, size_t batch)
{
    ch12_padding p = { 0 };
    for (size_t first = 0; first < t->count; first += batch) {
        size_t longest = 0, count = t->count - first < batch ? t->count - first : batch;
        for (size_t s = first; s < first + count; s++) {
            longest = t->length[s] > longest ? t->length[s] : longest;
            p.real_tokens += t->length[s];
            p.real_scores += (double)t->length[s] * t->length[s];
        }
        p.padded_tokens += count * longest;
        p.padded_scores += (double)count * longest * longest;
    }
    return p;
}
static void text_grow(ch12_text *t, size_t *cap)
{
    if (t->count < *cap) return;
    *cap = *cap ? 2 * *cap : 64;
    t->ids = realloc(t->ids, *cap * sizeof *t->ids);
    t->length = realloc(t->length, *cap * sizeof *t->length);
    if (!t->ids || !t->length) bookkeeping_out_of_memory();
}
ch12_text ch12_tokenize_lines(const vocab *v, const char *what, const char *text, size_t size)
{
    ch12_text t = { 0 };
    size_t cap = 0;
    char err[128];
    for (size_t at = 0; at < size; t.count++) {
        const char *nl = memchr(text + at, '\n', size - at);
        const size_t n = nl ? (size_t)(nl - text - at) : size - at;
        text_grow(&t, &cap);
        const int got = tokenize(v, text + at, n, t.ids[t.count], err, sizeof err);
        if (got < 0) die_line("%s: line %zu: %s of the line", what, t.count + 1, err);
        t.length[t.count] = (size_t)got;
        at += n + 1;
    }
    return t;
}
ch12_text ch12_tokenize_args(const vocab *v, int count, char **args)
{
    ch12_text t = { 0 };
    size_t cap = 0;
    char err[128];
    for (; t.count < (size_t)count; t.count++) {
        text_grow(&t, &cap);
        const int got = tokenize(v, args[t.count], strlen(args[t.count]), t.ids[t.count], err,
                                 sizeof err);
        if (got < 0) die_line("sentence %zu: %s", t.count + 1, err);
        t.length[t.count] = (size_t)got;
    }
    return t;
}
void ch12_text_free(ch12_text *t)
{
    free(t->ids);
    free(t->length);
    *t = (ch12_text){ 0 };
}
void ch12_embed(const bert_model *m, const ch12_text *t, size_t batch, ch12_attention a,
                int threads, float *out, ch12_times *times)
{
    size_t *offset = bookkeeping_alloc((batch + 1) * sizeof *offset);
    int32_t *ids = bookkeeping_alloc(batch * BERT_MAX_TOKENS * sizeof *ids);
    ch12_work w = ch12_work_new(batch * BERT_MAX_TOKENS);
    for (size_t first = 0; first < t->count; first += batch) {
        const size_t count = t->count - first < batch ? t->count - first : batch;
        ch12_pack(t, first, count, offset, ids);
        const ch12_batch b = { count, offset, ids };
        bert_encode(m, &b, a, threads, &w, out + first * BERT_HIDDEN, times);
    }
    ch12_work_free(&w);
    free(offset);
    free(ids);
}
double ch12_cosine(const float *a, const float *b)
{
    double ab = 0, aa = 0, bb = 0;
    for (size_t j = 0; j < BERT_HIDDEN; j++)
        ab += (double)a[j] * b[j], aa += (double)a[j] * a[j], bb += (double)b[j] * b[j];
    return ab / sqrt(aa * bb);
}
size_t ch12_nearest(const float *e, size_t count, size_t i)
{
    size_t best = i == 0 && count > 1 ? 1 : 0;
    for (size_t j = 0; j < count; j++)
        if (j != i && ch12_cosine(e + i * BERT_HIDDEN, e + j * BERT_HIDDEN)
                      > ch12_cosine(e + i * BERT_HIDDEN, e + best * BERT_HIDDEN))
            best = j;
    return best;
}
ch12_diff ch12_compare(const float *a, const float *b, size_t count)
{
    ch12_diff d = { 0, 1 };
    for (size_t i = 0; i < count; i++) {
        for (size_t j = 0; j < BERT_HIDDEN; j++)
            d.max_abs = fmax(d.max_abs, fabs((double)a[i * BERT_HIDDEN + j] - b[i * BERT_HIDDEN + j]));
        d.min_cos = fmin(d.min_cos, ch12_cosine(a + i * BERT_HIDDEN, b + i * BERT_HIDDEN));
    }
    return d;
}
static int read_golden_ids(FILE *f, ch12_goldens *g, char *err, size_t errlen)
{
    size_t cap = 0, n;
    int c;
    while ((c = fgetc(f)) == '#') {
        char line[512];
        if (!fgets(line, sizeof line, f)) break;
        if (!g->versions[0]) snprintf(g->versions, sizeof g->versions, "%s", line + 1);
    }
    ungetc(c, f);
    while (fscanf(f, "%zu", &n) == 1) {
        if (n < 2 || n > BERT_MAX_TOKENS) return snprintf(err, errlen, "a count of %zu ids", n), -1;
        text_grow(&g->text, &cap);
        for (size_t i = 0; i < n; i++)
            if (fscanf(f, "%" SCNd32, &g->text.ids[g->text.count][i]) != 1)
                return snprintf(err, errlen, "line %zu: ids missing", g->text.count + 1), -1;
        g->text.length[g->text.count++] = n;
    }
    return feof(f) ? 0 : (snprintf(err, errlen, "not a count at line %zu", g->text.count + 1), -1);
}
static int read_golden_embeddings(FILE *f, ch12_goldens *g, char *err, size_t errlen)
{
    char line[512];
    int c;
    while ((c = fgetc(f)) == '#') if (!fgets(line, sizeof line, f)) break;
    ungetc(c, f);
    const size_t n = g->text.count * BERT_HIDDEN;
    g->embedding = bookkeeping_alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (fscanf(f, "%f", &g->embedding[i]) != 1)
            return snprintf(err, errlen, "%zu of %zu numbers", i, n), -1;
    return fscanf(f, "%s", line) == EOF ? 0 : (snprintf(err, errlen, "numbers past the end"), -1);
}
int ch12_read_goldens(const char *dir, ch12_goldens *g, char *err, size_t errlen)
{
    char path[4096], why[256] = "";
    *g = (ch12_goldens){ 0 };
    int rc = -1;
    snprintf(path, sizeof path, "%s/ch12_token_ids.txt", dir);
    FILE *f = fopen(path, "r");
    if (f) { rc = read_golden_ids(f, g, why, sizeof why); fclose(f); }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/ch12_embeddings.txt", dir);
        f = fopen(path, "r");
        rc = f ? read_golden_embeddings(f, g, why, sizeof why) : -1;
        if (f) fclose(f);
    }
    if (rc < 0) snprintf(err, errlen, "%s: %s", path, why[0] ? why : strerror(errno));
    return rc;
}
void ch12_goldens_free(ch12_goldens *g)
{
    ch12_text_free(&g->text);
    free(g->embedding);
}
double ch12_gelu_bound(float x)
{
    return fabs((double)x) / 2 * (1.2e-7 + 0x1p-23 + 12 * 0x1p-24);
}
double ch12_fp32_bound(void)
{
    const double u = 0x1p-24, lambda = 6;
    const double chain = 3 * sqrt(BERT_HIDDEN) + sqrt(BERT_DIM) + sqrt(BERT_MAX_TOKENS)
                       + sqrt(BERT_FF);
    return 2 * lambda * u * BERT_LAYERS * chain;
}
double ch12_bf16_cosine_bound(void)
{
    const double eps = BERT_LAYERS * 4 * 0x1p-8;
    return 1 - eps * eps / 2;
}
double ch12_linear_flops(void)
{
    return 2.0 * BERT_HIDDEN * (4.0 * BERT_HIDDEN + 2.0 * BERT_FF);
}
double ch12_attention_flop_share(double n)
{
    const double attention = 4.0 * n * BERT_HIDDEN;
    return attention / (attention + ch12_linear_flops());
}
typedef struct {
    const char *model, *file, *out, *attention, *data_dir, *goldens, *python, *recorded;
    long threads, batch;
    bool json, quick, bench;
} ch12_options;
static const char *default_model_dir(void)
{
    static char dir[4096], config[4096 + 16];
    const ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 32);
    if (n <= 0) return ".build/model";
    dir[n] = '\0';
    strcpy(strrchr(dir, '/') + 1, ".build/model");
    snprintf(config, sizeof config, "%s/config.json", dir);
    return access(config, R_OK) == 0 ? dir : ".build/model";
}
static size_t ch12_option_table(ch12_options *o, option *opts)
{
    const option all[] = {
        { "model", OPT_STRING, &o->model, 0, 0, "DIR", "the model's folder (default: .build/model beside the program)" },
        { "file", OPT_STRING, &o->file, 0, 0, "FILE", "sentences, one a line (UTF-8)" },
        { "out", OPT_STRING, &o->out, 0, 0, "FILE", "with --file: write the (n, 384) float32 embeddings (.npy)" },
        { "attention", OPT_STRING, &o->attention, 0, 0, "NAME", "naive, tiled, fused (default) or bf16" },
        { "threads", OPT_INT, &o->threads, 1, 256, "T", "threads of OpenBLAS and the kernels" },
        { "batch", OPT_INT, &o->batch, 1, 4096, "N", "sentences packed into one batch" },
        { "goldens", OPT_STRING, &o->goldens, 0, 0, "DIR", "the corpus and PyTorch's goldens (tests/goldens)" },
        { "quick", OPT_FLAG, &o->quick, 0, 0, NULL, "receipts without the corpus; bench: one repeat" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "time the encoder (and PyTorch, with --python), results on stdout" },
        { "python", OPT_STRING, &o->python, 0, 0, "PATH", "a Python with sentence-transformers: PyTorch as the peer" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR", "write figure data to DIR" },
        { "recorded", OPT_STRING, &o->recorded, 0, 0, "PATH",
          "the recorded benchmark to report: a file, or a folder of bench-*.txt" },
    };
    memcpy(opts, all, sizeof all);
    return sizeof all / sizeof all[0];
}
static int parse_ch12_options(int argc, char **argv, ch12_options *o, char **sentences)
{
    option opts[16];
    const size_t count = ch12_option_table(o, opts);
    char **rest = bookkeeping_alloc((size_t)(argc + 1) * sizeof *rest);
    int kept = 1, n = 0;
    rest[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) { sentences[n++] = argv[i]; continue; }
        rest[kept++] = argv[i];
        const char *name = argv[i] + 2;
        for (size_t k = 0; k < count; k++)
            if (opts[k].kind != OPT_FLAG && strcmp(name, opts[k].name) == 0 && i + 1 < argc
                && strncmp(argv[i + 1], "--", 2) != 0)
                rest[kept++] = argv[++i];
    }
    options_parse(kept, rest, CH12_PROGRAM, "all-MiniLM-L6-v2 sentence embeddings through the "
                  "book's attention kernels", opts, count);
    free(rest);
    return n;
}
static ch12_attention attention_named(const char *name)
{
    for (int a = 0; a < ATTN_KINDS; a++)
        if (strcmp(name, ch12_attention_name((ch12_attention)a)) == 0) {
            if (a == ATTN_FUSED && !fa_isa_allowed(CH12_PROGRAM, FA_ISA_AVX2))
                die_usage(CH12_PROGRAM, "--attention fused needs AVX2 and FMA (FA_ISA=%s, or this "
                          "CPU, has none): use --attention tiled", fa_isa_name(fa_isa_widest(NULL)));
            return (ch12_attention)a;
        }
    die_usage(CH12_PROGRAM, "--attention must be naive, tiled, fused or bf16, not '%s'", name);
}
static void report_model(report *r, const bert_model *m)
{
    char a[32];
    report_fact_labeled(r, "tensors", "tensors in model.safetensors", fmt_int(a, (long long)m->file.count));
    report_fact_labeled(r, "parameters", "parameters read", fmt_int(a, (long long)m->parameters));
    report_fact_labeled(r, "file_bytes", "bytes mapped", fmt_int(a, (long long)m->file.size));
    report_fact_labeled(r, "vocab", "vocabulary", fmt_int(a, (long long)m->vocab.count));
    report_fact_labeled(r, "max_chars", "longest word WordPiece splits", fmt_int(a, (long long)m->vocab.max_chars));
}
static void report_tokens(report *r, const ch12_text *corpus, const ch12_goldens *g)
{
    size_t equal = 0, tokens = 0, truncated = 0;
    char a[32];
    for (size_t i = 0; i < corpus->count && i < g->text.count; i++) {
        equal += corpus->length[i] == g->text.length[i]
              && memcmp(corpus->ids[i], g->text.ids[i], corpus->length[i] * sizeof(int32_t)) == 0;
        tokens += corpus->length[i];
        truncated += corpus->length[i] == BERT_MAX_TOKENS;
    }
    report_fact_labeled(r, "corpus_lines", "corpus lines", fmt_int(a, (long long)corpus->count));
    report_fact_labeled(r, "ids_equal", "lines whose ids equal Hugging Face's", fmt_int(a, (long long)equal));
    report_fact_labeled(r, "corpus_tokens", "tokens in the corpus", fmt_int(a, (long long)tokens));
    report_fact_labeled(r, "truncated", "lines cut at 256 tokens", fmt_int(a, (long long)truncated));
    report_fact(r, "goldens_versions", g->versions);
}
static void report_kernels(report *r, const bert_model *m, const ch12_text *corpus,
                           const ch12_goldens *g, float *fp32, float *bf16)
{
    static const char *const cols[] = { "attention", "max |C - PyTorch|", "1 - min cosine", "bound", NULL };
    table *t = report_table(r, "kernels", "Embeddings of the corpus against sentence-transformers", cols);
    char key[64], x[32], c[32], b[48];
    for (int a = 0; a < ATTN_KINDS; a++) {
        float *out = a == ATTN_FUSED ? fp32 : bf16;
        const char *name = ch12_attention_name((ch12_attention)a);
        ch12_embed(m, corpus, 32, (ch12_attention)a, 1, out, NULL);
        const ch12_diff d = ch12_compare(out, g->embedding, corpus->count);
        snprintf(x, sizeof x, "%.1e", d.max_abs);
        snprintf(c, sizeof c, "%.1e", 1 - d.min_cos);
        if (a == ATTN_BF16) snprintf(b, sizeof b, "1 - cosine <= %.1e", 1 - ch12_bf16_cosine_bound());
        else snprintf(b, sizeof b, "%.1e", ch12_fp32_bound());
        table_rowf(t, "%s|%s|%s|%s", name, x, c, b);
        snprintf(key, sizeof key, "max_diff_%s", name);
        report_fact(r, key, x);
        snprintf(key, sizeof key, "one_minus_cos_%s", name);
        report_fact(r, key, c);
    }
}
static void report_bounds(report *r)
{
    char a[32];
    snprintf(a, sizeof a, "%.1e", ch12_fp32_bound());
    report_fact(r, "bound_fp32", a);
    snprintf(a, sizeof a, "%.4f", ch12_bf16_cosine_bound());
    report_fact(r, "bound_bf16_cos", a);
    static const char *const engines[AMX_ENGINES] = { "AMX", "AVX512-BF16", "emulated AMX",
                                                      "emulated AVX512-BF16" };
    report_fact(r, "bf16_engine", engines[ch12_bf16_engine()]);
    report_fact(r, "blas_kernel", blas_kernels());
    snprintf(a, sizeof a, "%.1e", 1 - ch12_bf16_cosine_bound());
    report_fact(r, "bound_bf16_one_minus_cos", a);
    snprintf(a, sizeof a, "%.1e", 0x1p-24);
    report_fact(r, "unit_roundoff", a);
    snprintf(a, sizeof a, "%.1e", ch12_gelu_bound(1.0f));
    report_fact(r, "gelu_bound", a);
}
static void report_ranking(report *r, const float *fp32, const float *bf16, size_t count)
{
    size_t changed = 0, explained = 0;
    double shift = 0, tightest = 1;
    char a[32];
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < count; j++)
            shift = fmax(shift, fabs(ch12_cosine(fp32 + i * BERT_HIDDEN, fp32 + j * BERT_HIDDEN)
                                     - ch12_cosine(bf16 + i * BERT_HIDDEN, bf16 + j * BERT_HIDDEN)));
    for (size_t i = 0; i < count; i++) {
        const size_t n32 = ch12_nearest(fp32, count, i), n16 = ch12_nearest(bf16, count, i);
        const double gap = ch12_cosine(fp32 + i * BERT_HIDDEN, fp32 + n32 * BERT_HIDDEN)
                         - ch12_cosine(fp32 + i * BERT_HIDDEN, fp32 + n16 * BERT_HIDDEN);
        if (n32 != n16) changed++, explained += gap <= 2 * shift, tightest = fmin(tightest, gap);
    }
    report_fact_labeled(r, "nn_changed", "nearest neighbours bf16 changed", fmt_int(a, (long long)changed));
    report_fact_labeled(r, "nn_explained", "of them within twice the shift", fmt_int(a, (long long)explained));
    char sentence[256];
    if (changed == 0) snprintf(sentence, sizeof sentence, "no line's nearest neighbour changed");
    else snprintf(sentence, sizeof sentence, "%zu line%s changed %s nearest neighbour, %zu of them where "
                  "the two best candidates were within twice that shift", changed, changed > 1 ? "s" : "",
                  changed > 1 ? "their" : "its", explained);
    report_fact(r, "nn_sentence", sentence);
    snprintf(a, sizeof a, "%.1e", shift);
    report_fact_labeled(r, "cos_shift", "largest change of a cosine", a);
}
static void report_padding(report *r, const ch12_text *corpus, size_t batch)
{
    const ch12_padding p = ch12_padding_of(corpus, batch);
    char a[32];
    report_fact_labeled(r, "real_tokens", "tokens, packed", fmt_int(a, (long long)p.real_tokens));
    report_fact_labeled(r, "padded_tokens", "tokens, padded in batches of --batch", fmt_int(a, (long long)p.padded_tokens));
    report_fact(r, "token_waste", fmt_pct(a, 1 - (double)p.real_tokens / (double)p.padded_tokens));
    report_fact(r, "score_waste", fmt_pct(a, 1 - p.real_scores / p.padded_scores));
    report_fact_labeled(r, "padded_ratio", "padded / packed linear work",
                        fmt_sig(a, (double)p.padded_tokens / (double)p.real_tokens, 3));
}
static const char *const example[] = {
    "A man is playing a guitar.", "Someone is strumming a guitar.",
    "The cat sleeps on the warm windowsill.", "A kitten naps in the sun.",
    "Flash Attention computes exact attention in tiles.", "Online softmax keeps a running max.",
};
enum { EXAMPLES = 6 };
static void similarity_table(report *r, const ch12_text *t, float *e, char **sentences)
{
    const char *cols[18] = { "sentence" };
    char names[16][8], cell[16 * 12], *at;
    const size_t n = t->count < 16 ? t->count : 16;
    for (size_t j = 0; j < n; j++) snprintf(names[j], 8, "%zu", j + 1), cols[j + 1] = names[j];
    table *tab = report_table(r, "similarity", "Cosine similarity of the sentences' embeddings", cols);
    for (size_t i = 0; i < n; i++) {
        at = cell + sprintf(cell, "%zu %.24s", i + 1, sentences[i]);
        for (size_t j = 0; j < n; j++)
            at += sprintf(at, "|%.3f", ch12_cosine(e + i * BERT_HIDDEN, e + j * BERT_HIDDEN));
        table_rowf(tab, "%s", cell);
    }
}
static void write_example_data(const char *dir, const ch12_text *t, const float *e)
{
    if (!dir) return;
    FILE *f = data_file(dir, "ch12_packed.dat");
    size_t offset = 0;
    fprintf(f, "# sentence offset length\n");
    for (size_t s = 0; s < t->count; offset += t->length[s++])
        fprintf(f, "%zu %zu %zu\n", s + 1, offset, t->length[s]);
    data_close(f);
    f = data_file(dir, "ch12_similarity.dat");
    for (size_t i = 0; i < t->count; i++, fputc('\n', f))
        for (size_t j = 0; j < t->count; j++)
            fprintf(f, "%zu %zu %.4f\n", i + 1, j + 1, ch12_cosine(e + i * BERT_HIDDEN, e + j * BERT_HIDDEN));
    data_close(f);
}
static void report_example(report *r, const bert_model *m, const ch12_options *o)
{
    ch12_text t = ch12_tokenize_args(&m->vocab, EXAMPLES, (char **)example);
    float e[EXAMPLES * BERT_HIDDEN];
    size_t tokens = 0, longest = 0;
    char a[32];
    ch12_embed(m, &t, EXAMPLES, ATTN_FUSED, 1, e, NULL);
    similarity_table(r, &t, e, (char **)example);
    write_example_data(o->data_dir, &t, e);
    for (size_t s = 0; s < t.count; s++)
        tokens += t.length[s], longest = t.length[s] > longest ? t.length[s] : longest;
    report_fact(r, "example_tokens", fmt_int(a, (long long)tokens));
    report_fact(r, "example_longest", fmt_int(a, (long long)longest));
    report_fact(r, "cos_guitar", fmt_sig(a, ch12_cosine(e, e + BERT_HIDDEN), 3));
    report_fact(r, "cos_guitar_cat", fmt_sig(a, ch12_cosine(e, e + 2 * BERT_HIDDEN), 2));
    ch12_text_free(&t);
}
static bool read_recorded_row(const char *line, ch12_recorded_row *w)
{
    char torch[32];
    *w = (ch12_recorded_row){ 0 };
    if (sscanf(line, CH12_PROGRAM " %15s %ld %ld %*d %lf %lf %lf %lf %lf %lf %31s", w->workload,
               &w->tokens, &w->threads, &w->median, &w->min, &w->max, &w->attention, &w->linear,
               &w->other, torch) != 10)
        return false;
    w->torch = strcmp(torch, "-") == 0 ? NAN : strtod(torch, NULL);
    return w->median > 0 && w->threads > 0;
}
bool ch12_read_recorded(const char *path, ch12_recorded *rec)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    *rec = (ch12_recorded){ .when = "(not recorded)", .commit = "-", .machine = "(none)" };
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "# make bench: date %63s commit %63s", rec->when, rec->commit);
        sscanf(line, "# " CH12_PROGRAM ": %159[^;]", rec->machine);
        if (rec->count < CH12_RECORDED_ROWS && read_recorded_row(line, &rec->row[rec->count]))
            rec->count++;
    }
    fclose(f);
    return rec->count > 0;
}
static void recorded_speed_table(report *r, const ch12_recorded *rec)
{
    static const char *const cols[] = { "workload", "tokens", "threads", "C s", "attention",
                                        "linear", "other", "PyTorch s", "x PyTorch", NULL };
    table *t = report_table(r, "speed", "The encoder against PyTorch, recorded", cols);
    char a[32], l[32], o[32];
    for (int i = 0; i < rec->count; i++) {
        const ch12_recorded_row *w = &rec->row[i];
        table_rowf(t, "%s|%ld|%ld|%.3f (%.3f-%.3f)|%s|%s|%s|%.3f|%.2f", w->workload, w->tokens,
                   w->threads, w->median, w->min, w->max, fmt_pct(a, w->attention),
                   fmt_pct(l, w->linear), fmt_pct(o, w->other), w->torch, w->torch / w->median);
    }
    if (rec->count == 0) table_rowf(t, "(not recorded)|-|-|-|-|-|-|-|-");
}
static const ch12_recorded_row *recorded_row_of(const ch12_recorded *rec, const char *workload,
                                                long threads)
{
    for (int i = 0; i < rec->count; i++)
        if (strcmp(rec->row[i].workload, workload) == 0 && rec->row[i].threads == threads)
            return &rec->row[i];
    return NULL;
}
static void speed_sentence(const ch12_recorded *rec, char *out, size_t size)
{
    int won = 0, timed = 0;
    double best = 0, worst = INFINITY;
    for (int i = 0; i < rec->count; i++) {
        const double x = rec->row[i].torch / rec->row[i].median;
        if (isnan(x)) continue;
        timed++, won += x >= 1.0, best = fmax(best, x), worst = fmin(worst, x);
    }
    if (timed == 0) snprintf(out, size, "PyTorch was not run beside this record.");
    else snprintf(out, size, "The C encoder was at least as fast as PyTorch in %d of the %d "
                  "workloads recorded, from %.2f to %.2f times PyTorch's speed.", won, timed,
                  worst, best);
}
static void share_sentence(const ch12_recorded *rec, char *out, size_t size)
{
    const ch12_recorded_row *lo = recorded_row_of(rec, "128", 1), *hi = recorded_row_of(rec, "512", 1);
    char a[6][32];
    if (!lo || !hi) { snprintf(out, size, "(The fixed lengths were not recorded.)"); return; }
    snprintf(out, size, "On one thread attention took %s of the time at 512 tokens, where it "
             "does %s of the arithmetic, and %s at 128 tokens (%s of the arithmetic); the "
             "linear layers took %s and %s.", fmt_pct(a[0], hi->attention),
             fmt_pct(a[1], ch12_attention_flop_share(512)), fmt_pct(a[2], lo->attention),
             fmt_pct(a[3], ch12_attention_flop_share(128)), fmt_pct(a[4], hi->linear),
             fmt_pct(a[5], lo->linear));
}
static void write_shares_data(const char *dir, const ch12_recorded *rec)
{
    if (!dir) return;
    FILE *f = data_file(dir, "ch12_shares.dat");
    fprintf(f, "# workload attention linear other (shares of the encoder's time)\n");
    for (int i = 0; i < rec->count; i++)
        fprintf(f, "\"%s, %ld thread%s\" %.4f %.4f %.4f\n", rec->row[i].workload, rec->row[i].threads,
                rec->row[i].threads > 1 ? "s" : "", rec->row[i].attention, rec->row[i].linear,
                rec->row[i].other);
    if (rec->count == 0) fprintf(f, "\"(not recorded)\" 0 0 0\n");
    data_close(f);
}
static void behind_sentence(const ch12_recorded *rec, char *out, size_t size)
{
    const ch12_recorded_row *w = NULL;
    for (int i = 0; i < rec->count; i++)
        if (rec->row[i].torch < rec->row[i].median
            && (!w || rec->row[i].torch / rec->row[i].median < w->torch / w->median))
            w = &rec->row[i];
    if (!w) { snprintf(out, size, "PyTorch was the faster at no workload recorded."); return; }
    snprintf(out, size, "Where PyTorch was the faster, the widest gap was at %s%s on %ld "
             "thread%s: C took %.3f s, of which its linear layers (OpenBLAS's sgemm) took "
             "%.3f s, attention %.3f s and the rest %.3f s, against %.3f s for PyTorch's whole "
             "run.", w->workload, strcmp(w->workload, "corpus") ? " tokens" : "", w->threads,
             w->threads > 1 ? "s" : "", w->median, w->median * w->linear,
             w->median * w->attention, w->median * w->other, w->torch);
}
void ch12_speed_sentences(const ch12_recorded *rec, char *speed, char *share, char *behind,
                          size_t size)
{
    speed_sentence(rec, speed, size);
    share_sentence(rec, share, size);
    behind_sentence(rec, behind, size);
}
static void report_recorded(report *r, const char *path, const char *data_dir)
{
    static char names[8][LADDER_PATH_MAX];
    static ch12_recorded rec;
    char speed[512], share[512], behind[512], when[256], a[32];
    const size_t files = ladder_recorded_files(path, names, 8);
    bool found = false;
    for (size_t i = 0; i < files && !found; i++) found = ch12_read_recorded(names[i], &rec);
    if (!found) ch12_read_recorded("", &rec);
    recorded_speed_table(r, &rec);
    write_shares_data(data_dir, &rec);
    ch12_speed_sentences(&rec, speed, share, behind, sizeof speed);
    if (found) snprintf(when, sizeof when, "%s, recorded %.10s (commit %s)", rec.machine, rec.when, rec.commit);
    else snprintf(when, sizeof when, "(no record of this program under %s)", path);
    report_fact(r, "recorded_when", when);
    report_fact(r, "speed_sentence", speed);
    report_fact(r, "share_sentence", share);
    report_fact(r, "behind_sentence", behind);
    report_fact(r, "linear_flops", fmt_int(a, (long long)ch12_linear_flops()));
    for (int n = 128; n <= 512; n *= 2) {
        char key[32];
        snprintf(key, sizeof key, "flop_share_%d", n);
        report_fact(r, key, fmt_pct(a, ch12_attention_flop_share(n)));
    }
}
static void run_receipts(const ch12_options *o, const bert_model *m, report *r)
{
    char path[4096], err[512];
    report_model(r, m);
    report_bounds(r);
    report_example(r, m, o);
    report_recorded(r, o->recorded, o->data_dir);
    snprintf(path, sizeof path, "%s/ch12_corpus.txt", o->goldens);
    if (o->quick && access(path, R_OK) != 0) return;
    ch12_goldens g;
    if (ch12_read_goldens(o->goldens, &g, err, sizeof err) < 0) die_line("%s", err);
    size_t size;
    char *text = read_whole_file(path, &size);
    ch12_text corpus = ch12_tokenize_lines(&m->vocab, path, text, size);
    if (corpus.count != g.text.count) die_line("%s: %zu lines, the goldens %zu", path, corpus.count, g.text.count);
    report_tokens(r, &corpus, &g);
    report_padding(r, &corpus, (size_t)o->batch);
    if (!o->quick) {
        const size_t bytes = fa_mul(corpus.count, 2 * BERT_HIDDEN * sizeof(float));
        fa_require(bytes + ch12_work_bytes(32 * BERT_MAX_TOKENS), "the corpus's embeddings and the work space");
        float *fp32 = fa_alloc(bytes), *bf16 = fp32 + corpus.count * BERT_HIDDEN;
        report_kernels(r, m, &corpus, &g, fp32, bf16);
        report_ranking(r, fp32, bf16, corpus.count);
        fa_free(fp32);
    }
    free(text);
    ch12_text_free(&corpus);
    ch12_goldens_free(&g);
}
static void run_sentences(const ch12_options *o, const bert_model *m, int n, char **sentences,
                          report *r)
{
    ch12_text t = ch12_tokenize_args(&m->vocab, n, sentences);
    const size_t batch = (size_t)o->batch;
    fa_require(fa_mul(t.count, BERT_HIDDEN * sizeof(float)) + ch12_work_bytes(batch * BERT_MAX_TOKENS),
               "the embeddings and the work space");
    float *e = fa_alloc(fa_mul(t.count, BERT_HIDDEN * sizeof(float)));
    ch12_embed(m, &t, batch, attention_named(o->attention), (int)o->threads, e, NULL);
    similarity_table(r, &t, e, sentences);
    fa_free(e);
    ch12_text_free(&t);
}
static void run_file(const ch12_options *o, const bert_model *m, report *r)
{
    size_t size;
    char *text = read_whole_file(o->file, &size);
    ch12_text t = ch12_tokenize_lines(&m->vocab, o->file, text, size);
    if (t.count == 0) die_line("%s: no lines", o->file);
    const size_t batch = (size_t)o->batch;
    fa_require(fa_mul(t.count, BERT_HIDDEN * sizeof(float)) + ch12_work_bytes(batch * BERT_MAX_TOKENS),
               "the embeddings and the work space");
    tensor out = tensor_new(2, (size_t[]){ t.count, BERT_HIDDEN });
    ch12_embed(m, &t, batch, attention_named(o->attention), (int)o->threads, out.data, NULL);
    npy_write_or_exit(CH12_PROGRAM, o->out, &out);
    char a[32];
    report_fact_labeled(r, "lines", "sentences embedded", fmt_int(a, (long long)t.count));
    report_fact_labeled(r, "output", "written to", o->out);
    tensor_free(&out);
    ch12_text_free(&t);
    free(text);
}
typedef struct { const char *name; long length; } ch12_workload;
static const ch12_workload workloads[] = { { "corpus", 0 }, { "128", 128 }, { "256", 256 }, { "512", 512 } };
enum { WORKLOADS = 4, FIXED_SENTENCES = 8 };
static size_t fixed_batch(long length, size_t *offset, int32_t *ids)
{
    for (size_t s = 0; s < FIXED_SENTENCES; s++) {
        offset[s] = s * (size_t)length;
        for (long i = 0; i < length; i++) ids[offset[s] + (size_t)i] = i == 0 ? 101 : i == length - 1 ? 102 : 1996;
    }
    offset[FIXED_SENTENCES] = FIXED_SENTENCES * (size_t)length;
    return offset[FIXED_SENTENCES];
}
static spread time_workload(const bert_model *m, const ch12_text *corpus, long length, int threads,
                            int runs, ch12_times *times)
{
    static size_t offset[FIXED_SENTENCES + 1];
    static int32_t ids[FIXED_SENTENCES * BERT_POSITIONS];
    double seconds[16];
    float *out = bookkeeping_alloc((corpus->count + FIXED_SENTENCES) * BERT_HIDDEN * sizeof(float));
    ch12_work w = ch12_work_new(length ? fixed_batch(length, offset, ids) : 1);
    const ch12_batch b = { FIXED_SENTENCES, offset, ids };
    for (int r = -1; r < runs; r++) {
        ch12_times t = { 0 };
        const double start = now_seconds();
        if (length) bert_encode(m, &b, ATTN_FUSED, threads, &w, out, &t);
        else ch12_embed(m, corpus, 32, ATTN_FUSED, threads, out, &t);
        if (r >= 0) seconds[r] = now_seconds() - start, times->attention += t.attention,
                    times->linear += t.linear, times->other += t.other;
    }
    ch12_work_free(&w);
    free(out);
    return spread_of(seconds, (size_t)runs);
}
static size_t run_torch_peer(const ch12_options *o, const char *corpus_path, int runs, double torch[][2])
{
    char cmd[8192], line[512];
    if (strchr(o->python, '\'') || strchr(o->model, '\'') || strchr(corpus_path, '\''))
        die_usage(CH12_PROGRAM, "--python, --model and --goldens: paths without quotes, please");
    int used = snprintf(cmd, sizeof cmd, "'%s' tangled/ch12_torch_peer.py '%s' '%s'", o->python, o->model, corpus_path);
    for (int t = 1; t <= 2; t++)
        for (int k = 0; k < WORKLOADS; k++)
            used += snprintf(cmd + used, sizeof cmd - (size_t)used, " %s,%d,%d", workloads[k].name, t, runs);
    FILE *p = popen(cmd, "r");
    if (!p) die_usage(CH12_PROGRAM, "cannot run %s", o->python);
    size_t got = 0;
    double median;
    while (fgets(line, sizeof line, p))
        if (line[0] == '#') printf("%s", line);
        else if (sscanf(line, "%*s %*d %*d %lf", &median) == 1 && got < 2 * WORKLOADS)
            torch[got % WORKLOADS][got / WORKLOADS] = median, got++;
    pclose(p);
    return got;
}
static void run_bench(const ch12_options *o, const bert_model *m)
{
    char path[4096], cpu[128];
    static double torch[WORKLOADS][2];
    const int runs = o->quick ? 1 : 3;
    snprintf(path, sizeof path, "%s/ch12_corpus.txt", o->goldens);
    size_t size, tokens = 0;
    char *text = read_whole_file(path, &size);
    ch12_text corpus = ch12_tokenize_lines(&m->vocab, path, text, size);
    for (size_t s = 0; s < corpus.count; s++) tokens += corpus.length[s];
    ladder_cpu_model(cpu, sizeof cpu);
    printf("# ch12_real_model: %s, %d CPUs; OpenBLAS %s kernels; attention fused; %zu corpus lines\n",
           cpu, ladder_cpus(), blas_kernels(), corpus.count);
    const size_t got = o->python ? run_torch_peer(o, path, runs, torch) : 0;
    if (!o->python) printf("# PyTorch: not run (make bench PYTHON=/path/to/python adds it)\n");
    for (int t = 1; t <= 2; t++)
        for (int k = 0; k < WORKLOADS; k++) {
            ch12_times times = { 0 };
            fprintf(stderr, "bench: %s, %d thread%s\n", workloads[k].name, t, t > 1 ? "s" : "");
            const spread s = time_workload(m, &corpus, workloads[k].length, t, runs, &times);
            const double all = times.attention + times.linear + times.other;
            const size_t n = workloads[k].length ? FIXED_SENTENCES * (size_t)workloads[k].length : tokens;
            printf("ch12_real_model %s %zu %d %d %.4f %.4f %.4f %.3f %.3f %.3f", workloads[k].name, n, t,
                   runs, s.median, s.min, s.max, times.attention / all, times.linear / all, times.other / all);
            if (got == 2 * WORKLOADS) printf(" %.4f %.2f\n", torch[k][t - 1], torch[k][t - 1] / s.median);
            else printf(" - -\n");
        }
    ch12_text_free(&corpus);
    free(text);
}
int main(int argc, char **argv)
{
    blas_use_known_kernels(argv);
    ch12_options o = { .model = default_model_dir(), .attention = "fused", .goldens = "tests/goldens",
                       .recorded = "chapters/recorded", .threads = 1, .batch = 32 };
    char **sentences = bookkeeping_alloc((size_t)argc * sizeof *sentences);
    const int n = parse_ch12_options(argc, argv, &o, sentences);
    fa_isa_cap(CH12_PROGRAM);
    attention_named(o.attention);
    if (!o.file != !o.out) die_usage(CH12_PROGRAM, "--file and --out go together");
    if (o.file && n > 0) die_usage(CH12_PROGRAM, "sentences as arguments, or --file, not both");
    if (o.file && o.data_dir) die_usage(CH12_PROGRAM, "--data belongs to the receipts run, not to --file");
    if (o.bench && (o.file || n > 0 || o.json || o.data_dir))
        die_usage(CH12_PROGRAM, "--bench runs alone (with --python, --quick, --model, --goldens)");
    if (o.python && !o.bench) die_usage(CH12_PROGRAM, "--python belongs to --bench");
    if (o.out) npy_reserve_outputs_or_exit(CH12_PROGRAM, &o.out, 1, (const char *const *)&o.file, 1);
    bert_model m;
    bert_load(o.model, &m);
    if (o.bench) {
        run_bench(&o, &m);
        bert_free(&m);
        finish_stdout(CH12_PROGRAM);
        return 0;
    }
    report *r = report_new(CH12_PROGRAM, o.json);
    if (o.file) run_file(&o, &m, r);
    else if (n > 0) run_sentences(&o, &m, n, sentences, r);
    else run_receipts(&o, &m, r);
    report_finish(r, stdout);
    bert_free(&m);
    free(sentences);
    return 0;
}
