/* test_ch12_real_model.c — the safetensors reader, the tokenizer against Hugging
   Face's ids, and the encoder against sentence-transformers on every kernel.
   Tangled from chapters/ch12_real_model.nw. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../tangled/ch12_real_model.h"
#define MODEL ".build/model"
#define GOLDENS "tests/goldens"
static bert_model model;
static ch12_goldens goldens;
static ch12_text corpus;
static void load_all(void)
{
    char err[512];
    bert_load(MODEL, &model);
    cr_assert_eq(ch12_read_goldens(GOLDENS, &goldens, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(GOLDENS "/ch12_corpus.txt", "rb");
    static char text[1 << 20];
    const size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    corpus = ch12_tokenize_lines(&model.vocab, "corpus", text, n);
}
static void free_all(void)
{
    ch12_text_free(&corpus);
    ch12_goldens_free(&goldens);
    bert_free(&model);
}
static size_t st_build(unsigned char *buf, const char *header, size_t data)
{
    const size_t n = (strlen(header) + 7) / 8 * 8;     /* padded with spaces, as writers do */
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memset(buf + 8, ' ', n);
    memcpy(buf + 8, header, strlen(header));
    memset(buf + 8 + n, 0, data);
    return 8 + n + data;
}
static const char *st_refusal(const char *header, size_t data)
{
    static unsigned char buf[4096];
    static char err[256];
    st_file f;
    const size_t size = st_build(buf, header, data);
    if (st_parse(buf, size, &f, err, sizeof err) == 0) { st_close(&f); return NULL; }
    return err;
}
Test(ch12_safetensors, good_file, .description = "two tensors, metadata, padding: read in place")
{
    static unsigned char buf[4096];
    char err[256];
    st_file f;
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
                    "\"data_offsets\":[24,32]},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                    "\"data_offsets\":[0,24]}}    ";
    const size_t size = st_build(buf, h, 32);
    cr_assert_eq(st_parse(buf, size, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.count, 2);
    const st_tensor *a = st_find(&f, "a"), *b = st_find(&f, "b");
    cr_assert(a && b && a->ndim == 2 && a->shape[1] == 3 && b->shape[0] == 2);
    cr_assert_eq((const unsigned char *)b->data, buf + size - 8, "mapped, not copied");
    st_close(&f);
}
Test(ch12_safetensors, bad_files, .description = "every lie a header can tell is refused, with why")
{
    static const struct { const char *header; size_t data; const char *why; } cases[] = {
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 12, "past the data" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16, "need 12" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "an overlap" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "a gap" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "after the last" },
        { "{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}", 8, "named twice" },
        { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]}}", 5, "not aligned" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "whole number" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, "overflows" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, "unknown member" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "data_offsets expected" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", 4, "after its object" },
        { "{\"a\\ud800\":{}}", 0, "bad escape" },
        { "[1]", 0, "'{' expected" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = st_refusal(cases[i].header, cases[i].data);
        cr_assert(why && strstr(why, cases[i].why), "case %zu: '%s' should say '%s'", i,
                  why ? why : "(accepted)", cases[i].why);
    }
}
Test(ch12_safetensors, no_tensors, .description = "an empty header: no tensors, and no data after it")
{
    static unsigned char buf[64];
    char err[256];
    st_file f;
    const size_t size = st_build(buf, "{}", 0);
    cr_assert_eq(st_parse(buf, size, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.count, 0);
    st_close(&f);
    const char *why = st_refusal("{}", 4);
    cr_assert(why && strstr(why, "4 bytes after the last tensor"), "%s", why ? why : "(accepted)");
}
Test(ch12_safetensors, bad_lengths, .description = "a file shorter than 8 bytes, a header past the end or over the limit")
{
    unsigned char buf[16] = { 200, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
    char err[256];
    st_file f;
    cr_assert_lt(st_parse(buf, 5, &f, err, sizeof err), 0);
    cr_assert(strstr(err, "shorter"), "%s", err);
    cr_assert_lt(st_parse(buf, 10, &f, err, sizeof err), 0);
    cr_assert(strstr(err, "a header of 200 bytes in a file of 10"), "%s", err);
    buf[4] = 1;
    cr_assert_lt(st_parse(buf, 10, &f, err, sizeof err), 0);
    cr_assert(strstr(err, "over the limit"), "%s", err);
}
Test(ch12_safetensors, the_model, .description = "model.safetensors: 104 tensors, 22.7 million parameters")
{
    bert_model m;
    bert_load(MODEL, &m);
    cr_assert_eq(m.file.count, 104);
    cr_assert_eq(m.parameters, 22565376u, "parameters read: %zu", m.parameters);
    bert_free(&m);
}
Test(ch12_tokenizer, corpus_ids, .description = "token ids equal Hugging Face's on every corpus line",
     .init = load_all, .fini = free_all)
{
    cr_assert_eq(corpus.count, goldens.text.count);
    cr_assert_geq(corpus.count, 200);
    for (size_t i = 0; i < corpus.count; i++) {
        cr_assert_eq(corpus.length[i], goldens.text.length[i], "line %zu: %zu ids, not %zu", i + 1,
                     corpus.length[i], goldens.text.length[i]);
        for (size_t j = 0; j < corpus.length[i]; j++)
            cr_assert_eq(corpus.ids[i][j], goldens.text.ids[i][j], "line %zu, id %zu: %d, not %d",
                         i + 1, j, corpus.ids[i][j], goldens.text.ids[i][j]);
    }
}
Test(ch12_tokenizer, invalid_utf8, .description = "invalid UTF-8 is refused with the byte's offset")
{
    static const struct { const char *text; size_t at; } cases[] = {
        { "ab\xc0\x80", 2 }, { "\xed\xa0\x80", 0 }, { "xyz\xe2\x82", 3 }, { "\xf4\x90\x80\x80", 0 },
        { "ok \x80", 3 }, { "caf\xc3\xa9 \xff", 6 },
    };
    vocab v;
    vocab_load(MODEL "/tokenizer.json", &v);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t ids[BERT_MAX_TOKENS];
        char err[128], want[64];
        cr_assert_lt(tokenize(&v, cases[i].text, strlen(cases[i].text), ids, err, sizeof err), 0);
        snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", cases[i].at);
        cr_assert_str_eq(err, want, "case %zu", i);
    }
    vocab_free(&v);
}
Test(ch12_encoder, gelu, .description = "GELU through the exponential: within its bound, -12..12")
{
    enum { N = 24 * 1024 + 1 };
    static float x[N];
    for (size_t i = 0; i < N; i++) x[i] = -12.0f + (float)i / 1024.0f;
    static float y[N];
    memcpy(y, x, sizeof x);
    ch12_gelu(y, N);
    for (size_t i = 0; i < N; i++) {
        const double exact = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0)));
        cr_assert_leq(fabs(y[i] - exact), ch12_gelu_bound(x[i]), "GELU(%.6f) = %.9g, exact %.9g",
                      (double)x[i], (double)y[i], exact);
    }
}
static void check_kernel(ch12_attention a)
{
    float *e = malloc(corpus.count * BERT_HIDDEN * sizeof(float));
    ch12_embed(&model, &corpus, 32, a, 1, e, NULL);
    const ch12_diff d = ch12_compare(e, goldens.embedding, corpus.count);
    const double tau = ch12_fp32_bound();
    cr_assert_leq(d.max_abs, tau, "%s: max |C - PyTorch| %.3g over the bound %.3g",
                  ch12_attention_name(a), d.max_abs, tau);
    cr_assert_geq(d.min_cos, 1 - BERT_HIDDEN * tau * tau / 2, "%s: cosine %.9f", ch12_attention_name(a), d.min_cos);
    free(e);
}
Test(ch12_encoder, naive, .init = load_all, .fini = free_all, .description = "naive attention: within the bound") { check_kernel(ATTN_NAIVE); }
Test(ch12_encoder, tiled, .init = load_all, .fini = free_all, .description = "tiled attention: within the bound") { check_kernel(ATTN_TILED); }
Test(ch12_encoder, fused, .init = load_all, .fini = free_all, .description = "fused attention: within the bound") { check_kernel(ATTN_FUSED); }
Test(ch12_encoder, bf16, .init = load_all, .fini = free_all,
     .description = "bf16 attention: cosine within its bound; nearest neighbours explained")
{
    const size_t n = corpus.count;
    float *e16 = malloc(n * BERT_HIDDEN * sizeof(float));
    ch12_embed(&model, &corpus, 32, ATTN_BF16, 1, e16, NULL);
    const ch12_diff d = ch12_compare(e16, goldens.embedding, n);
    cr_assert_geq(d.min_cos, ch12_bf16_cosine_bound(), "bf16: cosine %.7f", d.min_cos);
    double shift = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            shift = fmax(shift, fabs(ch12_cosine(e16 + i * BERT_HIDDEN, e16 + j * BERT_HIDDEN)
                         - ch12_cosine(goldens.embedding + i * BERT_HIDDEN, goldens.embedding + j * BERT_HIDDEN)));
    for (size_t i = 0; i < n; i++) {
        const size_t a = ch12_nearest(goldens.embedding, n, i), b = ch12_nearest(e16, n, i);
        const float *g = goldens.embedding;
        cr_assert(a == b || ch12_cosine(g + i * BERT_HIDDEN, g + a * BERT_HIDDEN)
                            - ch12_cosine(g + i * BERT_HIDDEN, g + b * BERT_HIDDEN) <= 2 * shift,
                  "line %zu: neighbour %zu became %zu beyond the shift %.2g", i + 1, a + 1, b + 1, shift);
    }
    free(e16);
}
Test(ch12_encoder, packing, .init = load_all, .fini = free_all,
     .description = "a sentence alone and inside a packed batch: the same embedding")
{
    const size_t n = 40;
    float *alone = malloc(n * BERT_HIDDEN * sizeof(float)), *packed = malloc(n * BERT_HIDDEN * sizeof(float));
    ch12_text first = corpus;
    first.count = n;
    ch12_embed(&model, &first, 1, ATTN_TILED, 1, alone, NULL);
    ch12_embed(&model, &first, n, ATTN_TILED, 1, packed, NULL);
    cr_assert_leq(ch12_compare(alone, packed, n).max_abs, ch12_fp32_bound());
    free(alone);
    free(packed);
}
Test(ch12_encoder, padding_counts, .description = "the padded batch's count, on lengths worked by hand")
{
    int32_t ids[5][BERT_MAX_TOKENS] = { { 0 } };
    size_t length[5] = { 2, 10, 4, 3, 3 };
    const ch12_text t = { 5, ids, length };
    const ch12_padding p = ch12_padding_of(&t, 2);
    cr_assert_eq(p.real_tokens, 22);
    cr_assert_eq(p.padded_tokens, 2 * 10 + 2 * 4 + 3);
    cr_assert_float_eq(p.real_scores, 4 + 100 + 16 + 9 + 9, 0);
    cr_assert_float_eq(p.padded_scores, 2 * 100 + 2 * 16 + 9, 0);
}
static const char *const record =
    "# make bench: date 2026-01-02T03:04Z commit abc1234\n"
    "# ch12_real_model: Some CPU, 2 CPUs; OpenBLAS Haswell kernels; attention fused; 210 corpus lines\n"
    "ch08_fused_timing fused 512 64 0 1 5 0.1 0.1 0.1 1 1 1 1\n"
    "ch12_real_model corpus 3333 1 3 1.0000 0.9 1.1 0.200 0.500 0.300 2.0000 2.00\n"
    "ch12_real_model 128 1024 1 3 0.4000 0.4 0.4 0.100 0.700 0.200 0.2000 0.50\n"
    "ch12_real_model 512 4096 1 3 2.0000 2.0 2.0 0.250 0.600 0.150 2.5000 1.25\n"
    "ch12_real_model 256 2048 2 3 1.0000 1.0 1.0 0.200 0.600 0.200 - -\n";
Test(ch12_recorded, read_and_said, .description = "the recorded benchmark: read, and said in words")
{
    char path[32], speed[512], share[512], behind[512];
    cr_assert(temp_file_with(record, path));
    ch12_recorded rec;
    cr_assert(ch12_read_recorded(path, &rec));
    unlink(path);
    cr_assert_eq(rec.count, 4);
    cr_assert_str_eq(rec.machine, "Some CPU, 2 CPUs");
    cr_assert_str_eq(rec.commit, "abc1234");
    cr_assert(isnan(rec.row[3].torch) && rec.row[1].tokens == 1024 && rec.row[2].linear == 0.6);
    ch12_speed_sentences(&rec, speed, share, behind, sizeof speed);
    cr_assert(strstr(speed, "in 2 of the 3 workloads recorded, from 0.50 to 2.00 times"), "%s", speed);
    cr_assert(strstr(share, "took 25% of the time at 512 tokens, where it does 18%"), "%s", share);
    cr_assert(strstr(behind, "at 128 tokens on 1 thread: C took 0.400 s, of which its linear "
                             "layers (OpenBLAS's sgemm) took 0.280 s"), "%s", behind);
    cr_assert(!ch12_read_recorded("/nonexistent/record", &rec));
}
