/* harness.c — random numbers, memory, tensors, .npy, formats, reports,
   options, timing and data files for every chapter.
   Tangled from chapters/harness.nw; edit that file, not this one. */
#define _GNU_SOURCE
#include "harness.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void mt_seed(mt19937 *g, uint32_t seed)
{
    g->state[0] = seed;
    for (uint32_t i = 1; i < 624; i++) {
        uint32_t prev = g->state[i - 1];
        g->state[i] = 1812433253u * (prev ^ (prev >> 30)) + i;
    }
    g->index = 624;
    g->has_next_normal = false;
    g->next_normal = 0.0;
    g->path = RNG_SCALAR;
}

void mt_seed_path(mt19937 *g, uint32_t seed, rng_path path)
{
    mt_seed(g, seed);
    g->path = path;
}

const char *rng_path_name(rng_path path)
{
    return path == RNG_AVX2 ? "avx2" : "scalar";
}

rng_path rng_path_named(const char *program, const char *name)
{
    if (strcmp(name, "scalar") != 0 && strcmp(name, "avx2") != 0)
        die_usage(program, "--rng must be scalar or avx2 (got '%s')", name);
    return strcmp(name, "avx2") == 0 ? RNG_AVX2 : RNG_SCALAR;
}

static void mt_twist(mt19937 *g)
{
    for (int i = 0; i < 624; i++) {
        uint32_t y = (g->state[i] & 0x80000000u)
                   | (g->state[(i + 1) % 624] & 0x7fffffffu);
        uint32_t mixed = g->state[(i + 397) % 624] ^ (y >> 1);
        g->state[i] = (y & 1u) ? mixed ^ 0x9908b0dfu : mixed;
    }
    g->index = 0;
}

uint32_t mt_next(mt19937 *g)
{
    if (g->index >= 624)
        mt_twist(g);
    uint32_t y = g->state[g->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

float mt_uniform(mt19937 *g)
{
    return (float)(mt_next(g) & 0xFFFFFFu) * 0x1p-24f;
}

static double mt_uniform_double(mt19937 *g)
{
    uint64_t high = mt_next(g);
    uint64_t low = mt_next(g);
    uint64_t word = (high << 32) | low;
    return (double)(word & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}

static double torch_normal_double(mt19937 *g)
{
    if (g->has_next_normal) {
        g->has_next_normal = false;
        return g->next_normal;
    }
    double u1 = mt_uniform_double(g);
    double u2 = mt_uniform_double(g);
    double radius = sqrt(-2.0 * log1p(-u2));
    double theta = 2.0 * M_PI * u1;
    g->next_normal = radius * sin(theta);
    g->has_next_normal = true;
    return radius * cos(theta);
}

static void torch_randn_short(mt19937 *g, float *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = (float)(torch_normal_double(g) + 0.0);
}

static void box_muller_16(float *x)
{
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - x[j];
        float u2 = x[j + 8];
        float radius = sqrtf(-2.0f * logf(u1));
        float theta = (float)(2.0 * M_PI * (double)u2);
        x[j] = radius * cosf(theta) + 0.0f;
        x[j + 8] = radius * sinf(theta) + 0.0f;
    }
}

static uint32_t float_bits(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

static float float_from_bits(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static float cephes_log_reduce(float u, float *exponent)
{
    uint32_t bits = float_bits(u);
    float m = float_from_bits((bits & ~0x7f800000u) | float_bits(0.5f));
    bool low = m < 0.707106781186547524f;
    *exponent = (float)((int32_t)(bits >> 23) - 0x7f) + 1.0f;
    *exponent -= low ? 1.0f : 0.0f;
    return (m - 1.0f) + (low ? m : 0.0f);
}

static float cephes_logf(float u)
{
    static const float p[9] = { 7.0376836292E-2f, -1.1514610310E-1f,
        1.1676998740E-1f, -1.2420140846E-1f, 1.4249322787E-1f,
        -1.6668057665E-1f, 2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f };
    float k, x = cephes_log_reduce(u, &k), z = x * x, y = p[0];
    for (int i = 1; i < 9; i++)
        y = fmaf(y, x, p[i]);
    y = fmaf(y * x, z, k * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    return fmaf(k, 0.693359375f, x + y);
}

typedef struct { float x; bool sine_is_poly_s; uint32_t sine_sign, cosine_sign; } octant;

static octant cephes_reduce(float angle)
{
    float magnitude = fabsf(angle);
    int32_t j = ((int32_t)(magnitude * 1.27323954473516f) + 1) & ~1;
    float y = (float)j, x = fmaf(y, -0.78515625f, magnitude);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    uint32_t flip = (uint32_t)(j & 4) << 29;
    return (octant){ .x = x, .sine_is_poly_s = (j & 2) == 0,
                     .sine_sign = (float_bits(angle) & 0x80000000u) ^ flip,
                     .cosine_sign = (uint32_t)(~(j - 2) & 4) << 29 };
}

static void cephes_polynomials(float x, float *poly_c, float *poly_s)
{
    float z = x * x;
    float c = fmaf(fmaf(2.443315711809948E-005f, z, -1.388731625493765E-003f),
                   z, 4.166664568298827E-002f);
    *poly_c = fmaf(c * z, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f), z, -1.6666654611E-1f);
    *poly_s = fmaf(s * z, x, x);
}

static void cephes_sincosf(float angle, float *sine, float *cosine)
{
    octant o = cephes_reduce(angle);
    float c, s;
    cephes_polynomials(o.x, &c, &s);
    float s_part = o.sine_is_poly_s ? s : 0.0f, c_part = o.sine_is_poly_s ? 0.0f : c;
    *sine = float_from_bits(float_bits(c_part + s_part) ^ o.sine_sign);
    *cosine = float_from_bits(float_bits((c - c_part) + (s - s_part)) ^ o.cosine_sign);
}

static void box_muller_16_avx2(float *x)
{
    const float two_pi = (float)(2.0 * M_PI);
    for (int j = 0; j < 8; j++) {
        float radius = sqrtf(-2.0f * cephes_logf(1.0f - x[j]));
        float sine, cosine;
        cephes_sincosf(two_pi * x[j + 8], &sine, &cosine);
        x[j] = fmaf(radius * cosine, 1.0f, 0.0f);
        x[j + 8] = fmaf(radius * sine, 1.0f, 0.0f);
    }
}

static void box_muller_16_on(rng_path path, float *x)
{
    if (path == RNG_AVX2)
        box_muller_16_avx2(x);
    else
        box_muller_16(x);
}

void torch_randn(mt19937 *g, float *out, size_t count)
{
    if (count < 16) {
        torch_randn_short(g, out, count);
        return;
    }
    torch_rand(g, out, count);
    for (size_t i = 0; i + 16 <= count; i += 16)
        box_muller_16_on(g->path, out + i);
    if (count % 16 != 0) {
        float *tail = out + count - 16;
        torch_rand(g, tail, 16);
        box_muller_16_on(g->path, tail);
    }
}

void torch_rand(mt19937 *g, float *out, size_t count)
{
    for (size_t i = 0; i < count; i++)
        out[i] = mt_uniform(g);
}

static void bookkeeping_out_of_memory(void)
{
    fprintf(stderr, "error: out of memory\n");
    exit(2);
}

static void *bookkeeping_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        bookkeeping_out_of_memory();
    return p;
}

enum { FA_ALIGN = 64 };
static const uint64_t FA_MAGIC = UINT64_C(0xfa11ab1e5ca1ab1e);
typedef struct {
    size_t   bytes;    /* what the caller asked for */
    uint64_t magic;    /* FA_MAGIC while the block is live */
} fa_header;
_Static_assert(sizeof(fa_header) <= FA_ALIGN, "the header fits its slot");

static _Atomic size_t fa_live;
static _Atomic size_t fa_peak;

static void fa_count_allocation(size_t bytes)
{
    size_t live = atomic_fetch_add(&fa_live, bytes) + bytes;
    size_t peak = atomic_load(&fa_peak);
    while (live > peak && !atomic_compare_exchange_weak(&fa_peak, &peak, live))
        ;
}

size_t fa_bytes_live(void) { return atomic_load(&fa_live); }
size_t fa_bytes_peak(void) { return atomic_load(&fa_peak); }
void   fa_reset_peak(void) { atomic_store(&fa_peak, atomic_load(&fa_live)); }

size_t fa_physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0)
        return 0;
    return (size_t)pages * (size_t)page_size;
}

static void fa_refuse_if_too_big(size_t bytes)
{
    size_t physical = fa_physical_memory();
    size_t live = fa_bytes_live();
    if (physical == 0 || (bytes <= physical && live <= physical - bytes))
        return;
    char need[32], have[32];
    fprintf(stderr, "error: this needs %s but the machine has %s of memory\n",
            fmt_bytes(need, (double)live + (double)bytes),
            fmt_bytes(have, (double)physical));
    exit(2);
}

static void fa_out_of_memory(size_t bytes)
{
    char need[32];
    fprintf(stderr, "error: out of memory allocating %s\n",
            fmt_bytes(need, (double)bytes));
    exit(2);
}

void *fa_alloc(size_t bytes)
{
    fa_refuse_if_too_big(bytes);
    size_t lines = bytes / FA_ALIGN + (bytes % FA_ALIGN != 0) + (bytes == 0);
    size_t total = fa_mul(lines + 1, FA_ALIGN);
    unsigned char *block = aligned_alloc(FA_ALIGN, total);
    if (block == NULL)
        fa_out_of_memory(bytes);
    memset(block, 0, total);
    *(fa_header *)block = (fa_header){ .bytes = bytes, .magic = FA_MAGIC };
    fa_count_allocation(bytes);
    return block + FA_ALIGN;
}

void fa_free(void *p)
{
    if (p == NULL)
        return;
    fa_header *header = (fa_header *)((unsigned char *)p - FA_ALIGN);
    if (header->magic != FA_MAGIC) {
        fprintf(stderr, "internal error: fa_free of a pointer that fa_alloc "
                        "did not return, or that was already freed\n");
        abort();
    }
    header->magic = 0;
    atomic_fetch_sub(&fa_live, header->bytes);
    free(header);
}

size_t process_peak_rss(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    if (status == NULL)
        return 0;
    char line[256];
    size_t kib = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, status) != NULL)
        found = sscanf(line, "VmHWM: %zu kB", &kib) == 1;
    fclose(status);
    return found ? kib * 1024 : 0;
}

size_t fa_mul(size_t a, size_t b)
{
    size_t product;
    if (__builtin_mul_overflow(a, b, &product)) {
        fprintf(stderr, "error: the size %zu * %zu is too large to represent\n",
                a, b);
        exit(2);
    }
    return product;
}

tensor tensor_new(int ndim, const size_t shape[])
{
    if (ndim < 1 || ndim > 4) {
        fprintf(stderr, "error: a tensor has 1 to 4 dimensions, not %d\n", ndim);
        exit(2);
    }
    tensor t = { .data = NULL, .ndim = ndim, .shape = { 1, 1, 1, 1 } };
    for (int i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    t.data = fa_alloc(fa_mul(tensor_count(&t), sizeof(float)));
    return t;
}

void tensor_free(tensor *t)
{
    fa_free(t->data);
    t->data = NULL;
    t->ndim = 0;
}

size_t tensor_count(const tensor *t)
{
    size_t count = 1;
    for (int i = 0; i < t->ndim; i++)
        count = fa_mul(count, t->shape[i]);
    return count;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "harness.c writes .npy data in host order, which must be little-endian"
#endif

typedef struct { const char *at, *end; } npy_cursor;

static void npy_skip_space(npy_cursor *c)
{
    while (c->at < c->end && isspace((unsigned char)*c->at))
        c->at++;
}

static bool npy_peek(npy_cursor *c, char expected)
{
    npy_skip_space(c);
    return c->at < c->end && *c->at == expected;
}

static bool npy_take(npy_cursor *c, char expected)
{
    npy_skip_space(c);
    if (c->at == c->end || *c->at != expected)
        return false;
    c->at++;
    return true;
}

static bool npy_quoted(npy_cursor *c, char *text, size_t capacity)
{
    npy_skip_space(c);
    if (c->at == c->end || (*c->at != '\'' && *c->at != '"'))
        return false;
    char quote = *c->at++;
    size_t n = 0;
    while (c->at < c->end && *c->at != quote) {
        if (n + 1 < capacity)
            text[n++] = *c->at;
        c->at++;
    }
    text[n] = '\0';
    return npy_take(c, quote);
}

static bool npy_word(npy_cursor *c, const char *word)
{
    npy_skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->at) < n || strncmp(c->at, word, n) != 0)
        return false;
    c->at += n;
    return true;
}

static bool npy_bool(npy_cursor *c, bool *value)
{
    *value = npy_word(c, "True");
    return *value || npy_word(c, "False");
}

static bool npy_dimension(npy_cursor *c, size_t *value)
{
    npy_skip_space(c);
    if (c->at == c->end || !isdigit((unsigned char)*c->at))
        return false;
    for (*value = 0; c->at < c->end && isdigit((unsigned char)*c->at); c->at++) {
        size_t digit = (size_t)(*c->at - '0');
        if (__builtin_mul_overflow(*value, 10, value)
            || __builtin_add_overflow(*value, digit, value))
            return false;
    }
    c->at += c->at < c->end && *c->at == 'L';
    return true;
}

static bool npy_shape(npy_cursor *c, size_t shape[4], int *ndim)
{
    size_t value;
    *ndim = 0;
    if (!npy_take(c, '('))
        return false;
    while (!npy_take(c, ')')) {
        if (!npy_dimension(c, &value) || (!npy_take(c, ',') && !npy_peek(c, ')')))
            return false;
        if (*ndim < 4)
            shape[*ndim] = value;
        (*ndim)++;
    }
    return true;
}

typedef struct {
    char   descr[16];
    bool   fortran_order;
    int    ndim;
    size_t shape[4];
    bool   has_descr, has_order, has_shape;
} npy_header;

static const char *npy_parse_header(const char *text, size_t length, npy_header *h)
{
    npy_cursor c = { text, text + length };
    *h = (npy_header){ .ndim = 0 };
    if (!npy_take(&c, '{'))
        return "the header is not a dictionary";
    while (!npy_take(&c, '}')) {
        char key[32];
        if (!npy_quoted(&c, key, sizeof key) || !npy_take(&c, ':'))
            return "malformed header: expected 'key': value";
        if (strcmp(key, "descr") == 0) {
            h->has_descr = npy_quoted(&c, h->descr, sizeof h->descr);
            if (!h->has_descr) return "malformed header: 'descr' is not a string";
        } else if (strcmp(key, "fortran_order") == 0) {
            h->has_order = npy_bool(&c, &h->fortran_order);
            if (!h->has_order) return "malformed header: 'fortran_order' is not True or False";
        } else if (strcmp(key, "shape") == 0) {
            h->has_shape = npy_shape(&c, h->shape, &h->ndim);
            if (!h->has_shape) return "malformed header: 'shape' is not a tuple of sizes";
        } else {
            return "malformed header: unknown key";
        }
        if (!npy_take(&c, ',') && !npy_peek(&c, '}'))
            return "malformed header: expected ',' or '}'";
    }
    npy_skip_space(&c);
    return c.at == c.end ? NULL : "malformed header: text after the dictionary";
}

static void npy_check_header(const npy_header *h, char *why, size_t len)
{
    why[0] = '\0';
    if (!h->has_descr || !h->has_order || !h->has_shape)
        snprintf(why, len, "the header lacks 'descr', 'fortran_order' or 'shape'");
    else if (strcmp(h->descr, ">f4") == 0)
        snprintf(why, len, "dtype '>f4' is big-endian; need little-endian '<f4'");
    else if (strcmp(h->descr, "<f4") != 0)
        snprintf(why, len, "dtype '%s' is not float32 ('<f4')", h->descr);
    else if (h->fortran_order)
        snprintf(why, len, "fortran_order is True; need C order");
    else if (h->ndim < 1 || h->ndim > 4)
        snprintf(why, len, "the array has %d dimensions; need 1 to 4", h->ndim);
}

static char *npy_read_header(FILE *f, size_t *length, char *why, size_t len)
{
    unsigned char prefix[8], size[4] = { 0, 0, 0, 0 };
    if (fread(prefix, 1, 8, f) != 8 || memcmp(prefix, "\x93NUMPY", 6) != 0) {
        snprintf(why, len, "not a .npy file (bad magic)");
        return NULL;
    }
    if ((prefix[6] != 1 && prefix[6] != 2) || prefix[7] != 0) {
        snprintf(why, len, "unsupported .npy version %d.%d (need 1.0 or 2.0)",
                 prefix[6], prefix[7]);
        return NULL;
    }
    size_t width = prefix[6] == 1 ? 2 : 4;
    if (fread(size, 1, width, f) != width) {
        snprintf(why, len, "truncated header");
        return NULL;
    }
    *length = size[0] | (size_t)size[1] << 8 | (size_t)size[2] << 16 | (size_t)size[3] << 24;
    char *text = *length <= (1u << 20) ? malloc(*length + 1) : NULL;
    if (text == NULL || fread(text, 1, *length, f) != *length) {
        snprintf(why, len, text ? "truncated header" : "header too long");
        free(text);
        return NULL;
    }
    text[*length] = '\0';
    return text;
}

static bool npy_data_bytes(const npy_header *h, size_t *bytes)
{
    *bytes = sizeof(float);
    for (int i = 0; i < h->ndim; i++)
        if (__builtin_mul_overflow(*bytes, h->shape[i], bytes))
            return false;
    return true;
}

static int npy_check_data_size(FILE *f, const npy_header *h, char *why, size_t len)
{
    size_t bytes;
    if (!npy_data_bytes(h, &bytes)) {
        snprintf(why, len, "the shape is too large to represent");
        return -1;
    }
    long here = ftell(f);
    struct stat st;
    if (here < 0 || fstat(fileno(f), &st) != 0) {
        snprintf(why, len, "cannot determine the file size");
        return -1;
    }
    size_t actual = (size_t)st.st_size - (size_t)here;
    if (actual < bytes) {
        snprintf(why, len, "truncated data: the header promises %zu bytes, "
                 "the file holds %zu", bytes, actual);
        return -1;
    }
    if (actual > bytes) {
        snprintf(why, len, "%zu bytes of extra data after the array", actual - bytes);
        return -1;
    }
    return 0;
}

static void npy_load(FILE *f, tensor *t, char *why, size_t len)
{
    size_t length = 0;
    npy_header h;
    char *text = npy_read_header(f, &length, why, len);
    if (text == NULL)
        return;
    const char *syntax = npy_parse_header(text, length, &h);
    if (syntax != NULL)
        snprintf(why, len, "%s", syntax);
    else
        npy_check_header(&h, why, len);
    if (why[0] == '\0' && npy_check_data_size(f, &h, why, len) == 0) {
        *t = tensor_new(h.ndim, h.shape);
        size_t count = tensor_count(t);
        if (fread(t->data, sizeof(float), count, f) != count) {
            snprintf(why, len, "read error: %s", strerror(errno));
            tensor_free(t);
        }
    }
    free(text);
}

int npy_read(const char *path, tensor *out, char *err, size_t errlen)
{
    char why[200] = "";
    tensor t = { 0 };
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
    else {
        npy_load(f, &t, why, sizeof why);
        fclose(f);
    }
    if (why[0] != '\0') {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    *out = t;
    return 0;
}

static size_t npy_format_header(char *out, size_t capacity, const tensor *t)
{
    int n = snprintf(out, capacity,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(out + n, capacity - (size_t)n, i + 1 < t->ndim ? "%zu, " : "%zu",
                      t->shape[i]);
    n += snprintf(out + n, capacity - (size_t)n, t->ndim == 1 ? ",), }" : "), }");
    while ((10 + (size_t)n + 1) % 64 != 0)
        out[n++] = ' ';
    out[n++] = '\n';
    return (size_t)n;
}

static bool npy_write_stream(FILE *f, const tensor *t)
{
    char header[256];
    size_t length = npy_format_header(header, sizeof header, t);
    unsigned char prefix[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                 (unsigned char)(length & 0xff),
                                 (unsigned char)(length >> 8) };
    size_t count = tensor_count(t);
    return fwrite(prefix, 1, 10, f) == 10
        && fwrite(header, 1, length, f) == length
        && fwrite(t->data, sizeof(float), count, f) == count;
}

static int npy_write_fd(int fd, const tensor *t)
{
    fchmod(fd, 0644);   /* mkstemp makes 0600; a data file is for sharing */
    FILE *f = fdopen(fd, "wb");
    if (f == NULL) {
        int failure = errno;
        close(fd);
        return failure;
    }
    int failure = npy_write_stream(f, t) ? 0 : (errno ? errno : EIO);
    if (fclose(f) != 0 && failure == 0)
        failure = errno ? errno : EIO;
    return failure;
}

static int npy_write_temporary(char *tmp, const char *path, const tensor *t,
                               char *err, size_t errlen)
{
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        return -1;
    }
    int failure = npy_write_fd(fd, t);
    if (failure == 0 && rename(tmp, path) != 0)
        failure = errno;
    if (failure == 0)
        return 0;
    unlink(tmp);
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(failure));
    return -1;
}

int npy_write(const char *path, const tensor *t, char *err, size_t errlen)
{
    if (t->ndim < 1 || t->ndim > 4) {
        snprintf(err, errlen, "%s: a tensor has 1 to 4 dimensions, not %d", path,
                 t->ndim);
        return -1;
    }
    size_t length = strlen(path) + sizeof ".tmp.XXXXXX";
    char *temporary = bookkeeping_alloc(length);
    snprintf(temporary, length, "%s.tmp.XXXXXX", path);
    int status = npy_write_temporary(temporary, path, t, err, errlen);
    free(temporary);
    return status;
}

tensor npy_read_or_exit(const char *program, const char *path)
{
    char err[512];
    tensor t;
    if (npy_read(path, &t, err, sizeof err) != 0)
        die_usage(program, "%s", err);
    return t;
}

void npy_write_or_exit(const char *program, const char *path, const tensor *t)
{
    char err[512];
    if (npy_write(path, t, err, sizeof err) != 0)
        die_usage(program, "%s", err);
}

const char *fmt_num(char buf[32], double x)
{
    if (x == 0.0)
        x = 0.0;                      /* turns -0.0 into 0.0 */
    double magnitude = fabs(x);
    bool scientific = x != 0.0 && (magnitude < 1e-3 || magnitude >= 1e6);
    snprintf(buf, 32, scientific ? "%.3e" : "%.4f", x);
    return buf;
}

const char *fmt_pct(char buf[32], double fraction)
{
    double percent = nearbyint(fraction * 100.0);
    if (percent == 0.0)
        percent = 0.0;                /* no "-0%" */
    snprintf(buf, 32, "%.0f%%", percent);
    return buf;
}

const char *fmt_int(char buf[32], long long v)
{
    unsigned long long magnitude = v < 0 ? 0ull - (unsigned long long)v
                                         : (unsigned long long)v;
    char digits[24], *out = buf + (v < 0);
    int n = snprintf(digits, sizeof digits, "%llu", magnitude);
    buf[0] = '-';                     /* overwritten below when v >= 0 */
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *out++ = ',';
        *out++ = digits[i];
    }
    *out = '\0';
    return buf;
}

const char *fmt_bytes(char buf[32], double bytes)
{
    static const char *const units[] = { "MiB", "GiB", "TiB" };
    double value = bytes / (1024.0 * 1024.0);
    int unit = 0;
    while (unit < 2 && value >= 1024.0) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buf, 32, "%.1f %s", value, units[unit]);
    return buf;
}

struct table {
    char  *name, *title;
    size_t columns, rows;
    size_t capacity;       /* of cells, in strings */
    char **headings;       /* columns strings */
    char **cells;          /* rows * columns strings, row by row */
};

typedef enum { ITEM_FACT, ITEM_NOTE, ITEM_TABLE } item_kind;
typedef struct {
    item_kind kind;
    char     *key, *label, *text;  /* label: NULL, or words to show instead of key */
    table    *table;
} report_item;
struct report {
    char        *program;
    bool         json;
    size_t       count, capacity;
    report_item *items;
};

static void *grow_array(void *array, size_t *capacity, size_t needed, size_t size)
{
    if (needed <= *capacity)
        return array;
    size_t grown = *capacity ? 2 * *capacity : 8;
    while (grown < needed)
        grown *= 2;
    array = realloc(array, fa_mul(grown, size));
    if (array == NULL)
        bookkeeping_out_of_memory();
    *capacity = grown;
    return array;
}

static char *report_copy(const char *text)
{
    size_t length = strlen(text);
    char *copy = bookkeeping_alloc(length + 1);
    memcpy(copy, text, length + 1);
    return copy;
}

static char *report_vformat(const char *fmt, va_list args)
{
    char *text = NULL;
    if (vasprintf(&text, fmt, args) < 0)
        bookkeeping_out_of_memory();
    return text;
}

static void report_bug(const char *what, const char *name)
{
    fprintf(stderr, "internal error: %s '%s'\n", what, name);
    abort();
}

report *report_new(const char *program, bool json)
{
    report *r = bookkeeping_alloc(sizeof *r);
    *r = (report){ .program = report_copy(program), .json = json };
    return r;
}

static report_item *report_add(report *r, item_kind kind)
{
    r->items = grow_array(r->items, &r->capacity, r->count + 1, sizeof *r->items);
    r->items[r->count] = (report_item){ .kind = kind };
    return &r->items[r->count++];
}

static report_item *report_find_fact(report *r, const char *key)
{
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].kind == ITEM_FACT && strcmp(r->items[i].key, key) == 0)
            return &r->items[i];
    return NULL;
}

void report_fact_labeled(report *r, const char *key, const char *label,
                         const char *formatted)
{
    report_item *item = report_find_fact(r, key);
    if (item == NULL) {
        item = report_add(r, ITEM_FACT);
        item->key = report_copy(key);
    }
    free(item->text);
    item->text = report_copy(formatted);
    if (label != NULL) {
        free(item->label);
        item->label = report_copy(label);
    }
}

void report_fact(report *r, const char *key, const char *formatted)
{
    report_fact_labeled(r, key, NULL, formatted);
}

void report_factf(report *r, const char *key, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    char *text = report_vformat(fmt, args);
    va_end(args);
    report_fact(r, key, text);
    free(text);
}

void report_note(report *r, const char *text)
{
    report_add(r, ITEM_NOTE)->text = report_copy(text);
}

static size_t report_check_table(const report *r, const char *name,
                                 const char *const columns[])
{
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].kind == ITEM_TABLE && strcmp(r->items[i].table->name, name) == 0)
            report_bug("two tables named", name);
    size_t n = 0;
    while (columns[n] != NULL)
        n++;
    if (n == 0)
        report_bug("no columns in table", name);
    return n;
}

table *report_table(report *r, const char *name, const char *title,
                    const char *const columns[])
{
    size_t n = report_check_table(r, name, columns);
    table *t = bookkeeping_alloc(sizeof *t);
    *t = (table){ .name = report_copy(name), .title = report_copy(title), .columns = n };
    t->headings = bookkeeping_alloc(n * sizeof(char *));
    for (size_t j = 0; j < n; j++)
        t->headings[j] = report_copy(columns[j]);
    report_add(r, ITEM_TABLE)->table = t;
    return t;
}

static char **table_new_row(table *t)
{
    size_t needed = fa_mul(t->rows + 1, t->columns);
    t->cells = grow_array(t->cells, &t->capacity, needed, sizeof(char *));
    return &t->cells[t->rows++ * t->columns];
}

void table_row(table *t, const char *const cells[])
{
    char **row = table_new_row(t);
    for (size_t j = 0; j < t->columns; j++)
        row[j] = report_copy(cells[j]);
}

void table_rowf(table *t, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    char *text = report_vformat(fmt, args);
    va_end(args);
    size_t bars = 0;
    for (const char *p = text; *p; p++)
        bars += *p == '|';
    if (bars + 1 != t->columns)
        report_bug("table_rowf: wrong number of cells for table", t->name);
    char **row = table_new_row(t);
    char *cell = text;
    for (size_t j = 0; j < t->columns; j++) {
        char *bar = strchr(cell, '|');
        if (bar != NULL)
            *bar = '\0';
        row[j] = report_copy(cell);
        cell = bar != NULL ? bar + 1 : cell;
    }
    free(text);
}

static size_t text_width(const char *s)
{
    size_t width = 0;
    for (; *s; s++)
        width += ((unsigned char)*s & 0xC0) != 0x80;
    return width;
}

static void print_padded(FILE *out, const char *s, size_t width)
{
    for (size_t w = text_width(s); w < width; w++)
        fputc(' ', out);
    fputs(s, out);
}

static size_t *table_widths(const table *t)
{
    size_t *widths = bookkeeping_alloc(t->columns * sizeof *widths);
    for (size_t j = 0; j < t->columns; j++) {
        widths[j] = text_width(t->headings[j]);
        for (size_t i = 0; i < t->rows; i++) {
            size_t w = text_width(t->cells[i * t->columns + j]);
            widths[j] = w > widths[j] ? w : widths[j];
        }
    }
    return widths;
}

static void print_table_line(FILE *out, char *const cells[], const size_t widths[],
                             size_t columns)
{
    for (size_t j = 0; j < columns; j++) {
        fputs(j > 0 ? "  " : "", out);
        print_padded(out, cells[j], widths[j]);
    }
    fputc('\n', out);
}

static void print_table(FILE *out, const table *t)
{
    size_t *widths = table_widths(t);
    fprintf(out, "%s\n", t->title);
    print_table_line(out, t->headings, widths, t->columns);
    for (size_t j = 0; j < t->columns; j++) {
        fputs(j > 0 ? "  " : "", out);
        for (size_t w = 0; w < widths[j]; w++)
            fputc('-', out);
    }
    fputc('\n', out);
    for (size_t i = 0; i < t->rows; i++)
        print_table_line(out, &t->cells[i * t->columns], widths, t->columns);
    free(widths);
}

static size_t block_end(const report *r, size_t first)
{
    item_kind kind = r->items[first].kind;
    size_t end = first + 1;
    while (kind != ITEM_TABLE && end < r->count && r->items[end].kind == kind)
        end++;
    return end;
}

static const char *fact_display_name(const report_item *item)
{
    return item->label != NULL ? item->label : item->key;
}

static void print_fact_name(FILE *out, const report_item *item, size_t width)
{
    size_t w = text_width(fact_display_name(item));
    fputs(fact_display_name(item), out);
    if (item->label != NULL) {
        fputc(':', out);
        w++;
    }
    for (; w < width + 2; w++)
        fputc(' ', out);
}

static void print_facts(FILE *out, const report_item *items, size_t n)
{
    size_t width = 0;
    for (size_t i = 0; i < n; i++) {
        size_t w = text_width(fact_display_name(&items[i]));
        width = w > width ? w : width;
    }
    for (size_t i = 0; i < n; i++) {
        print_fact_name(out, &items[i], width);
        fprintf(out, "%s\n", items[i].text);
    }
}

static void print_text(FILE *out, const report *r)
{
    for (size_t i = 0, end; i < r->count; i = end) {
        end = block_end(r, i);
        fputs(i > 0 ? "\n" : "", out);
        if (r->items[i].kind == ITEM_TABLE)
            print_table(out, r->items[i].table);
        else if (r->items[i].kind == ITEM_FACT)
            print_facts(out, &r->items[i], end - i);
        else
            for (size_t k = i; k < end; k++)
                fprintf(out, "%s\n", r->items[k].text);
    }
}

static void print_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    fputc('"', out);
}

static void print_json_list(FILE *out, char *const strings[], size_t n)
{
    fputc('[', out);
    for (size_t j = 0; j < n; j++) {
        fputs(j > 0 ? ", " : "", out);
        print_json_string(out, strings[j]);
    }
    fputc(']', out);
}

static void print_json_fact(FILE *out, const report_item *fact)
{
    print_json_string(out, fact->key);
    fputs(": ", out);
    print_json_string(out, fact->text);
}

static void print_json_table(FILE *out, const table *t)
{
    print_json_string(out, t->name);
    fputs(": {\"title\": ", out);
    print_json_string(out, t->title);
    fputs(",\n      \"columns\": ", out);
    print_json_list(out, t->headings, t->columns);
    fputs(",\n      \"rows\": [", out);
    for (size_t i = 0; i < t->rows; i++) {
        fputs(i > 0 ? ",\n        " : "\n        ", out);
        print_json_list(out, &t->cells[i * t->columns], t->columns);
    }
    fputs(t->rows > 0 ? "\n      ]}" : "]}", out);
}

static void print_json_members(FILE *out, const report *r, const char *name,
                               item_kind kind)
{
    const char *separator = "\n    ";
    fprintf(out, "  \"%s\": {", name);
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].kind == kind) {
            fputs(separator, out);
            if (kind == ITEM_FACT)
                print_json_fact(out, &r->items[i]);
            else
                print_json_table(out, r->items[i].table);
            separator = ",\n    ";
        }
    fputs(separator[0] == ',' ? "\n  },\n" : "},\n", out);
}

static char *report_text(const report *r)
{
    char *text = NULL;
    size_t length = 0;
    FILE *memory = open_memstream(&text, &length);
    if (memory == NULL)
        bookkeeping_out_of_memory();
    print_text(memory, r);
    fclose(memory);
    return text;
}

static void print_json(FILE *out, const report *r)
{
    char *text = report_text(r);
    fputs("{\n  \"program\": ", out);
    print_json_string(out, r->program);
    fputs(",\n", out);
    print_json_members(out, r, "facts", ITEM_FACT);
    print_json_members(out, r, "tables", ITEM_TABLE);
    fputs("  \"text\": ", out);
    print_json_string(out, text);
    fputs("\n}\n", out);
    free(text);
}

static void table_free(table *t)
{
    for (size_t j = 0; j < t->columns; j++)
        free(t->headings[j]);
    for (size_t k = 0; k < t->rows * t->columns; k++)
        free(t->cells[k]);
    free(t->headings);
    free(t->cells);
    free(t->name);
    free(t->title);
    free(t);
}

static void report_free(report *r)
{
    for (size_t i = 0; i < r->count; i++) {
        free(r->items[i].key);
        free(r->items[i].label);
        free(r->items[i].text);
        if (r->items[i].kind == ITEM_TABLE)
            table_free(r->items[i].table);
    }
    free(r->items);
    free(r->program);
    free(r);
}

void report_finish(report *r, FILE *out)
{
    if (r->json)
        print_json(out, r);
    else
        print_text(out, r);
    fflush(out);
    report_free(r);
}

void die_usage(const char *program, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "%s: error: ", program);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
    exit(2);
}

static const char *option_meta(const option *o)
{
    static const char *const fallback[] = { "", "N", "X", "TEXT" };
    return o->kind == OPT_FLAG ? "" : o->meta ? o->meta : fallback[o->kind];
}

static void option_details(char *out, size_t len, const option *o)
{
    bool ranged = o->min < o->max;
    out[0] = '\0';
    if (o->kind == OPT_INT && ranged)
        snprintf(out, len, " [%.0f to %.0f; default %ld]", o->min, o->max,
                 *(long *)o->target);
    else if (o->kind == OPT_INT)
        snprintf(out, len, " [default %ld]", *(long *)o->target);
    else if (o->kind == OPT_DOUBLE && ranged)
        snprintf(out, len, " [%g to %g; default %g]", o->min, o->max, *(double *)o->target);
    else if (o->kind == OPT_DOUBLE)
        snprintf(out, len, " [default %g]", *(double *)o->target);
    else if (o->kind == OPT_STRING && *(const char **)o->target != NULL)
        snprintf(out, len, " [default %s]", *(const char **)o->target);
}

static size_t usage_width(const option opts[], size_t count)
{
    size_t width = strlen("--help");
    for (size_t i = 0; i < count; i++) {
        size_t meta = strlen(option_meta(&opts[i]));
        size_t w = 2 + strlen(opts[i].name) + (meta ? 1 + meta : 0);
        width = w > width ? w : width;
    }
    return width;
}

static void print_option_line(const option *o, int width)
{
    char left[128], details[160];
    const char *meta = option_meta(o);
    snprintf(left, sizeof left, "--%s%s%s", o->name, meta[0] ? " " : "", meta);
    option_details(details, sizeof details, o);
    printf("  %-*s  %s%s\n", width, left, o->help ? o->help : "", details);
}

static void print_usage(const char *program, const char *summary,
                        const option opts[], size_t count)
{
    int width = (int)usage_width(opts, count);
    printf("usage: %s [options]\n", program);
    if (summary != NULL)
        printf("%s\n", summary);
    printf("\noptions:\n");
    for (size_t i = 0; i < count; i++)
        print_option_line(&opts[i], width);
    printf("  %-*s  %s\n", width, "--help", "show this help and exit");
}

static void set_int_option(const char *program, const option *o, const char *value)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0')
        die_usage(program, "'%s' is not a number for --%s", value, o->name);
    if (o->min < o->max && (errno == ERANGE || v < o->min || v > o->max))
        die_usage(program, "--%s must be between %.0f and %.0f (got %s)",
                  o->name, o->min, o->max, value);
    if (errno == ERANGE)
        die_usage(program, "--%s is out of range (got %s)", o->name, value);
    *(long *)o->target = v;
}

static void set_double_option(const char *program, const option *o, const char *value)
{
    char *end;
    double v = strtod(value, &end);
    if (end == value || *end != '\0' || isnan(v))
        die_usage(program, "'%s' is not a number for --%s", value, o->name);
    if (o->min < o->max && !(v >= o->min && v <= o->max))
        die_usage(program, "--%s must be between %g and %g (got %s)",
                  o->name, o->min, o->max, value);
    *(double *)o->target = v;
}

static const option *find_option(const option opts[], size_t count,
                                 const char *name, size_t length)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(opts[i].name) == length && strncmp(opts[i].name, name, length) == 0)
            return &opts[i];
    return NULL;
}

void options_parse(int argc, char **argv, const char *program, const char *summary,
                   const option opts[], size_t count)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_usage(program, summary, opts, count);
            exit(0);
        }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            die_usage(program, "unexpected argument '%s'", arg);
        const char *equals = strchr(arg, '=');
        size_t length = equals ? (size_t)(equals - arg - 2) : strlen(arg + 2);
        const option *o = find_option(opts, count, arg + 2, length);
        if (o == NULL)
            die_usage(program, "unknown option '%.*s'", (int)length + 2, arg);
        if (o->kind == OPT_FLAG) {
            if (equals != NULL)
                die_usage(program, "option --%s takes no value", o->name);
            *(bool *)o->target = true;
            continue;
        }
        const char *value = equals ? equals + 1 : NULL;
        if (value == NULL && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            value = argv[++i];
        if (value == NULL)
            die_usage(program, "option --%s needs a value", o->name);
        if (o->kind == OPT_INT)
            set_int_option(program, o, value);
        else if (o->kind == OPT_DOUBLE)
            set_double_option(program, o, value);
        else
            *(const char **)o->target = value;
    }
}

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median_of(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, compare_doubles);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double time_median(void (*fn)(void *ctx), void *ctx, int warmup, int repeats)
{
    size_t n = repeats < 1 ? 1 : (size_t)repeats;
    double *times = bookkeeping_alloc(n * sizeof *times);
    for (int i = 0; i < warmup; i++)
        fn(ctx);
    for (size_t i = 0; i < n; i++) {
        double start = now_seconds();
        fn(ctx);
        times[i] = now_seconds() - start;
    }
    double median = median_of(times, n);
    free(times);
    return median;
}

static void data_fail(const char *what, const char *path)
{
    fprintf(stderr, "error: cannot %s %s: %s\n", what, path, strerror(errno));
    exit(2);
}

static void make_directories(char *path)
{
    for (char *p = path + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            data_fail("create the directory", path);
        *p = saved;
        if (saved == '\0')
            return;
    }
}

FILE *data_file(const char *dir, const char *name)
{
    size_t length = strlen(dir) + 1 + strlen(name) + 1;
    char *path = bookkeeping_alloc(length);
    snprintf(path, length, "%s", dir);
    if (path[0] != '\0')
        make_directories(path);
    snprintf(path, length, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        data_fail("write", path);
    free(path);
    return f;
}
char *capture_stdout_of(int (*main_fn)(int, char **), int argc, char **argv)
{
    FILE *capture = tmpfile();
    if (capture == NULL)
        data_fail("create", "a temporary file");
    int saved = dup(1);
    fflush(stdout);
    dup2(fileno(capture), 1);
    main_fn(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    fseek(capture, 0, SEEK_END);
    size_t size = (size_t)ftell(capture);
    char *text = bookkeeping_alloc(size + 1);
    rewind(capture);
    text[fread(text, 1, size, capture)] = '\0';
    fclose(capture);
    return text;
}

char *json_fact(const char *json, const char *key)
{
    size_t length = strlen(key) + 5;
    char *pattern = bookkeeping_alloc(length);
    snprintf(pattern, length, "\"%s\": ", key);
    const char *at = strstr(json, pattern);
    free(pattern);
    if (at == NULL || at[length - 1] != '"')
        return NULL;
    const char *from = at + length;
    char *value = bookkeeping_alloc(strlen(from) + 1), *to = value;
    while (*from != '\0' && *from != '"') {
        if (*from == '\\' && from[1] != '\0')
            from++;
        *to++ = *from++;
    }
    *to = '\0';
    return value;
}

bool json_fact_is(const char *json, const char *key, const char *value)
{
    char *found = json_fact(json, key);
    bool same = found != NULL && strcmp(found, value) == 0;
    free(found);
    return same;
}

