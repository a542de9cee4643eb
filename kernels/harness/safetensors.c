/* safetensors.c — safetensors files mapped and checked, and the small JSON
   reader they need. Tangled from chapters/ch12_real_model.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness/fail.h"
#include "harness/safetensors.h"
json_cursor json_begin(const char *text, size_t length)
{
    return (json_cursor){ .at = text, .start = text, .end = text + length, .err = "" };
}
bool json_fail(json_cursor *c, const char *what)
{
    if (!c->err[0])
        snprintf(c->err, sizeof c->err, "byte %td: %s", c->at - c->start, what);
    return false;
}
static void json_space(json_cursor *c)
{
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r'))
        c->at++;
}
bool json_at(json_cursor *c, char ch)
{
    json_space(c);
    return c->at < c->end && *c->at == ch;
}
bool json_expect(json_cursor *c, char ch)
{
    if (!json_at(c, ch)) {
        char what[32];
        snprintf(what, sizeof what, "'%c' expected", ch);
        return json_fail(c, what);
    }
    c->at++;
    return true;
}
bool json_next(json_cursor *c, char close, bool *more)
{
    json_space(c);
    if (c->at < c->end && (*c->at == ',' || *c->at == close)) {
        *more = *c->at++ == ',';
        return true;
    }
    return json_fail(c, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
}
static int json_hex4(json_cursor *c)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++, c->at++) {
        if (c->at >= c->end) return -1;
        const char h = *c->at;
        const int digit = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (digit < 0) return -1;
        v = v * 16 + (unsigned)digit;
    }
    return (int)v;
}
static long json_escape(json_cursor *c)
{
    static const char plain[] = "\"\\/bfnrt", meant[] = "\"\\/\b\f\n\r\t";
    if (c->at >= c->end) return -1;
    const char *p = strchr(plain, *c->at);
    if (*c->at && p) { c->at++; return meant[p - plain]; }
    if (*c->at++ != 'u') return -1;
    long u = json_hex4(c);
    if (u >= 0xdc00 && u < 0xe000) return -1;
    if (u >= 0xd800 && u < 0xdc00) {
        if (c->end - c->at < 2 || c->at[0] != '\\' || c->at[1] != 'u') return -1;
        c->at += 2;
        const long low = json_hex4(c);
        if (low < 0xdc00 || low >= 0xe000) return -1;
        u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
    }
    return u == 0 ? -1 : u;
}
static size_t utf8_put(char out[4], long u)
{
    if (u < 0x80) { out[0] = (char)u; return 1; }
    if (u < 0x800) { out[0] = (char)(0xc0 | u >> 6); out[1] = (char)(0x80 | (u & 63)); return 2; }
    if (u < 0x10000) {
        out[0] = (char)(0xe0 | u >> 12); out[1] = (char)(0x80 | (u >> 6 & 63));
        out[2] = (char)(0x80 | (u & 63)); return 3;
    }
    out[0] = (char)(0xf0 | u >> 18); out[1] = (char)(0x80 | (u >> 12 & 63));
    out[2] = (char)(0x80 | (u >> 6 & 63)); out[3] = (char)(0x80 | (u & 63));
    return 4;
}
bool json_string(json_cursor *c, char *out, size_t cap, size_t *length)
{
    size_t n = 0;
    if (!json_expect(c, '"')) return false;
    while (c->at < c->end && *c->at != '"') {
        char bytes[4];
        size_t k = 1;
        if ((unsigned char)*c->at < 0x20) return json_fail(c, "control character in a string");
        if (*c->at == '\\') {
            c->at++;
            const long u = json_escape(c);
            if (u < 0) return json_fail(c, "bad escape in a string");
            k = utf8_put(bytes, u);
        } else bytes[0] = *c->at++;
        if (n + k >= cap) return json_fail(c, "string too long");
        memcpy(out + n, bytes, k);
        n += k;
    }
    if (c->at >= c->end) return json_fail(c, "unterminated string");
    c->at++;
    out[n] = '\0';
    if (length) *length = n;
    return true;
}
static const char *json_digits(const char *p, const char *end)
{
    while (p < end && *p >= '0' && *p <= '9') p++;
    return p;
}
bool json_number(json_cursor *c, double *value)
{
    json_space(c);
    const char *p = c->at, *end = c->end;
    if (p < end && *p == '-') p++;
    if (p >= end || *p < '0' || *p > '9') return json_fail(c, "number expected");
    p = *p == '0' ? p + 1 : json_digits(p, end);
    if (p < end && *p == '.') {
        const char *q = json_digits(p + 1, end);
        if (q == p + 1) return json_fail(c, "digits expected after '.'");
        p = q;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        const char *q = json_digits(p, end);
        if (q == p) return json_fail(c, "digits expected in an exponent");
        p = q;
    }
    char text[64];
    if (p - c->at >= (long)sizeof text) return json_fail(c, "number too long");
    memcpy(text, c->at, (size_t)(p - c->at));
    text[p - c->at] = '\0';
    *value = strtod(text, NULL);
    c->at = p;
    return true;
}
static bool json_word(json_cursor *c, const char *word)
{
    const size_t n = strlen(word);
    if ((size_t)(c->end - c->at) < n || memcmp(c->at, word, n) != 0)
        return json_fail(c, "value expected");
    c->at += n;
    return true;
}
bool json_skip(json_cursor *c, int depth)
{
    static char scratch[1 << 16];
    double x;
    bool more = true;
    if (depth > 64) return json_fail(c, "nested too deeply");
    if (json_at(c, '"')) return json_string(c, scratch, sizeof scratch, NULL);
    if (json_at(c, '[') || json_at(c, '{')) {
        const char close = *c->at++ == '[' ? ']' : '}';
        if (json_at(c, close)) { c->at++; return true; }
        while (more) {
            if (close == '}' && !(json_string(c, scratch, sizeof scratch, NULL) && json_expect(c, ':')))
                return false;
            if (!json_skip(c, depth + 1) || !json_next(c, close, &more)) return false;
        }
        return true;
    }
    if (c->at < c->end && (*c->at == 't' || *c->at == 'f' || *c->at == 'n'))
        return json_word(c, *c->at == 't' ? "true" : *c->at == 'f' ? "false" : "null");
    return json_number(c, &x);
}
bool json_member(const json_cursor *c, const char *key, json_cursor *value)
{
    static char name[1 << 16];
    json_cursor at = *c;
    bool more = true;
    *value = at;
    if (!json_expect(&at, '{')) { *value = at; return false; }
    if (json_at(&at, '}')) return false;
    while (more) {
        if (!json_string(&at, name, sizeof name, NULL) || !json_expect(&at, ':')) break;
        if (strcmp(name, key) == 0) { json_space(&at); *value = at; return true; }
        if (!json_skip(&at, 0) || !json_next(&at, '}', &more)) break;
    }
    *value = at;
    return false;
}
static const char *const st_names[ST_DTYPES] = { "F64", "F32", "F16", "BF16", "I64", "I32",
                                                 "I16", "I8", "U8", "BOOL" };
static const size_t st_sizes[ST_DTYPES] = { 8, 4, 2, 2, 8, 4, 2, 1, 1, 1 };
const char *st_dtype_name(st_dtype t) { return t < ST_DTYPES ? st_names[t] : "?"; }
static int st_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(err, errlen, fmt, args);
    va_end(args);
    return -1;
}
static bool st_read_dtype(json_cursor *c, st_dtype *t)
{
    char name[16];
    if (!json_string(c, name, sizeof name, NULL)) return false;
    for (int i = 0; i < ST_DTYPES; i++)
        if (strcmp(name, st_names[i]) == 0) { *t = (st_dtype)i; return true; }
    return json_fail(c, "unknown dtype");
}
static bool st_read_size(json_cursor *c, size_t *v)
{
    double x;
    if (!json_number(c, &x)) return false;
    if (!(x >= 0 && x <= 9007199254740992.0) || x != floor(x))
        return json_fail(c, "a size must be a whole number from 0 to 2^53");
    *v = (size_t)x;
    return true;
}
static bool st_read_shape(json_cursor *c, st_tensor *t)
{
    bool more = true;
    t->ndim = 0;
    if (!json_expect(c, '[')) return false;
    if (json_at(c, ']')) { c->at++; return true; }
    while (more) {
        if (t->ndim == ST_MAX_DIMS) return json_fail(c, "more than 8 dimensions");
        if (!st_read_size(c, &t->shape[t->ndim++]) || !json_next(c, ']', &more)) return false;
    }
    return true;
}
static bool st_read_offsets(json_cursor *c, st_tensor *t)
{
    return json_expect(c, '[') && st_read_size(c, &t->begin) && json_expect(c, ',')
        && st_read_size(c, &t->end) && json_expect(c, ']');
}
static bool st_read_entry(json_cursor *c, st_tensor *t)
{
    char key[32];
    bool more = true;
    unsigned seen = 0;
    if (!json_expect(c, '{')) return false;
    while (more) {
        if (!json_string(c, key, sizeof key, NULL) || !json_expect(c, ':')) return false;
        const unsigned bit = strcmp(key, "dtype") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2
                           : strcmp(key, "data_offsets") == 0 ? 4 : 0;
        if (bit == 0 || (seen & bit)) return json_fail(c, bit ? "member given twice" : "unknown member");
        seen |= bit;
        if (!(bit == 1 ? st_read_dtype(c, &t->dtype) : bit == 2 ? st_read_shape(c, t)
                                                              : st_read_offsets(c, t)))
            return false;
        if (!json_next(c, '}', &more)) return false;
    }
    return seen == 7 || json_fail(c, "dtype, shape and data_offsets expected");
}
static bool st_read_header(json_cursor *c, st_file *f)
{
    char name[ST_NAME_MAX];
    bool more = true;
    size_t cap = 0;
    if (!json_expect(c, '{')) return false;
    if (json_at(c, '}')) { c->at++; return true; }
    while (more) {
        if (!json_string(c, name, sizeof name, NULL) || !json_expect(c, ':')) return false;
        if (strcmp(name, "__metadata__") == 0) {
            if (!json_skip(c, 0)) return false;
        } else {
            if (st_find(f, name)) return json_fail(c, "a tensor named twice");
            if (f->count == cap) {
                cap = cap ? 2 * cap : 64;
                st_tensor *grown = realloc(f->tensors, cap * sizeof *grown);
                if (!grown) bookkeeping_out_of_memory();
                f->tensors = grown;
            }
            st_tensor *t = &f->tensors[f->count++];
            memset(t, 0, sizeof *t);
            strcpy(t->name, name);
            if (!st_read_entry(c, t)) return false;
        }
        if (!json_next(c, '}', &more)) return false;
    }
    return true;
}
static int st_by_begin(const void *a, const void *b)
{
    const st_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}
static int st_check_bytes(const st_tensor *t, char *err, size_t errlen)
{
    size_t n = st_sizes[t->dtype];
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] && n > SIZE_MAX / t->shape[i])
            return st_error(err, errlen, "tensor %s: its shape overflows", t->name);
        else n *= t->shape[i];
    if (t->end < t->begin || t->end - t->begin != n)
        return st_error(err, errlen, "tensor %s: data_offsets [%zu, %zu] hold %s bytes, its "
                        "dtype %s and shape need %zu", t->name, t->begin, t->end,
                        t->end < t->begin ? "minus" : "other", st_names[t->dtype], n);
    return 0;
}
static int st_check_layout(st_file *f, size_t data_start, char *err, size_t errlen)
{
    const size_t data = f->size - data_start;
    size_t at = 0;
    if (f->count > 1) qsort(f->tensors, f->count, sizeof *f->tensors, st_by_begin);   /* none: no array */
    for (size_t i = 0; i < f->count; i++) {
        const st_tensor *t = &f->tensors[i];
        if (st_check_bytes(t, err, errlen) < 0) return -1;
        if (t->begin != at)
            return st_error(err, errlen, "tensor %s starts at byte %zu of the data, not %zu (%s)",
                            t->name, t->begin, at, t->begin < at ? "an overlap" : "a gap");
        if (t->end > data)
            return st_error(err, errlen, "tensor %s ends at byte %zu, past the data's %zu bytes "
                            "(a truncated file?)", t->name, t->end, data);
        if ((data_start + t->begin) % st_sizes[t->dtype])
            return st_error(err, errlen, "tensor %s is not aligned for %s", t->name, st_names[t->dtype]);
        at = t->end;
    }
    if (at != data)
        return st_error(err, errlen, "%zu bytes after the last tensor", data - at);
    return 0;
}
static int st_parse_checked(const unsigned char *bytes, size_t size, st_file *f, char *err,
                            size_t errlen);
int st_parse(const unsigned char *bytes, size_t size, st_file *f, char *err, size_t errlen)
{
    *f = (st_file){ .map = (void *)bytes, .size = size };
    const int rc = st_parse_checked(bytes, size, f, err, errlen);
    if (rc < 0) {
        free(f->tensors);
        f->tensors = NULL;
        f->count = 0;
    }
    return rc;
}
static int st_parse_checked(const unsigned char *bytes, size_t size, st_file *f, char *err,
                            size_t errlen)
{
    if (size < 8) return st_error(err, errlen, "%zu bytes: shorter than the 8-byte header length", size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
    if (n > ST_HEADER_MAX)
        return st_error(err, errlen, "a header of %llu bytes, over the limit of %d",
                        (unsigned long long)n, ST_HEADER_MAX);
    if (n > size - 8)
        return st_error(err, errlen, "a header of %llu bytes in a file of %zu",
                        (unsigned long long)n, size);
    json_cursor c = json_begin((const char *)bytes + 8, (size_t)n);
    if (!st_read_header(&c, f)) return st_error(err, errlen, "header: %s", c.err);
    while (c.at < c.end && *c.at == ' ') c.at++;
    if (c.at != c.end) return st_error(err, errlen, "header: bytes after its object");
    if (st_check_layout(f, 8 + (size_t)n, err, errlen) < 0) return -1;
    for (size_t i = 0; i < f->count; i++)
        f->tensors[i].data = bytes + 8 + n + f->tensors[i].begin;
    return 0;
}
int st_open(const char *path, st_file *f, char *err, size_t errlen)
{
    *f = (st_file){ 0 };
    struct stat s;
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return st_error(err, errlen, "%s", strerror(errno));
    const int e = fstat(fd, &s) < 0 ? errno : !S_ISREG(s.st_mode) ? EINVAL : 0;
    if (e) {
        close(fd);
        return st_error(err, errlen, "%s", e == EINVAL ? "not a regular file" : strerror(e));
    }
    void *map = s.st_size ? mmap(NULL, (size_t)s.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (map == MAP_FAILED) return st_error(err, errlen, "%s", strerror(errno));
    const int rc = st_parse(map, (size_t)s.st_size, f, err, errlen);
    f->mapped = map != NULL;
    if (rc < 0) st_close(f);
    return rc;
}
void st_close(st_file *f)
{
    if (f->mapped) munmap(f->map, f->size);
    free(f->tensors);
    *f = (st_file){ 0 };
}
const st_tensor *st_find(const st_file *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}
