/* npy.c — NumPy .npy files read and written. Tangled from chapters/app_torch.nw; edit that file. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness/memory.h"
#include "harness/npy.h"
#include "harness/fail.h"
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c writes .npy data in host order, which must be little-endian"
#endif

typedef struct {
    const char *at, *end;
    bool python2_longs;    /* versions 1 and 2 may write 3L for 3 */
} npy_cursor;

static void npy_skip_space(npy_cursor *c)
{
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n'))
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
        if (*c->at == '\\' || (unsigned char)*c->at < 0x20 || (unsigned char)*c->at >= 0x7f)
            return false;
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
    if (*c->at == '0' && c->at + 1 < c->end && isdigit((unsigned char)c->at[1]))
        return false;
    for (*value = 0; c->at < c->end && isdigit((unsigned char)*c->at); c->at++) {
        size_t digit = (size_t)(*c->at - '0');
        if (__builtin_mul_overflow(*value, 10, value)
            || __builtin_add_overflow(*value, digit, value))
            return false;
    }
    c->at += c->python2_longs && c->at < c->end && *c->at == 'L';
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

static const char *npy_parse_header(const char *text, size_t length, int major,
                                    npy_header *h)
{
    npy_cursor c = { text, text + length, major < 3 };
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

static char *npy_read_header(FILE *f, int *major, size_t *length, char *why, size_t len)
{
    unsigned char prefix[8], size[4] = { 0, 0, 0, 0 };
    if (fread(prefix, 1, 8, f) != 8 || memcmp(prefix, "\x93NUMPY", 6) != 0) {
        snprintf(why, len, "not a .npy file (bad magic)");
        return NULL;
    }
    if (prefix[6] < 1 || prefix[6] > 3 || prefix[7] != 0) {
        snprintf(why, len, "unsupported .npy version %d.%d (need 1.0, 2.0 or 3.0)",
                 prefix[6], prefix[7]);
        return NULL;
    }
    *major = prefix[6];
    enum { NPY_MAX_HEADER = 65536 };
    size_t width = prefix[6] == 1 ? 2 : 4;
    if (fread(size, 1, width, f) != width) {
        snprintf(why, len, "truncated header");
        return NULL;
    }
    *length = size[0] | (size_t)size[1] << 8 | (size_t)size[2] << 16 | (size_t)size[3] << 24;
    if (*length > NPY_MAX_HEADER) {
        snprintf(why, len, "the header length %zu is over the 64 KiB limit", *length);
        return NULL;
    }
    char *text = bookkeeping_alloc(*length + 1);
    if (fread(text, 1, *length, f) != *length)
        snprintf(why, len, "truncated header");
    else if (*length == 0 || text[*length - 1] != '\n')
        snprintf(why, len, "the header does not end in a newline "
                 "(is its length field right?)");
    else if (memchr(text, '\0', *length) != NULL)
        snprintf(why, len, "malformed header: it contains a NUL byte");
    if (why[0] != '\0') {
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

static void npy_load(FILE *f, tensor *t, bool with_data, char *why, size_t len)
{
    size_t length = 0;
    int major = 0;
    npy_header h;
    char *text = npy_read_header(f, &major, &length, why, len);
    if (text == NULL)
        return;
    const char *syntax = npy_parse_header(text, length, major, &h);
    if (syntax != NULL)
        snprintf(why, len, "%s", syntax);
    else
        npy_check_header(&h, why, len);
    if (why[0] == '\0' && npy_check_data_size(f, &h, why, len) == 0 && !with_data) {
        *t = (tensor){ .data = NULL, .ndim = h.ndim, .shape = { 1, 1, 1, 1 } };
        memcpy(t->shape, h.shape, (size_t)h.ndim * sizeof h.shape[0]);
    } else if (why[0] == '\0') {
        *t = tensor_new(h.ndim, h.shape);
        size_t count = tensor_count(t);
        if (fread(t->data, sizeof(float), count, f) != count) {
            snprintf(why, len, "read error: %s", strerror(errno));
            tensor_free(t);
        }
    }
    free(text);
}

static FILE *npy_open_regular(const char *path, char *why, size_t len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, len, "cannot open: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "not a regular file");
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        snprintf(why, len, "cannot open: %s", strerror(errno));
        close(fd);
    }
    return f;
}

static int npy_read_part(const char *path, tensor *out, bool with_data, char *err,
                         size_t errlen)
{
    char why[200] = "";
    tensor t = { 0 };
    FILE *f = npy_open_regular(path, why, sizeof why);
    if (f != NULL) {
        npy_load(f, &t, with_data, why, sizeof why);
        fclose(f);
    }
    if (why[0] != '\0') {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    *out = t;
    return 0;
}

int npy_read(const char *path, tensor *out, char *err, size_t errlen)
{
    return npy_read_part(path, out, true, err, errlen);
}

int npy_read_shape(const char *path, tensor *out, char *err, size_t errlen)
{
    return npy_read_part(path, out, false, err, errlen);
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

static bool npy_same_directory(const char *a, size_t a_len, const char *b, size_t b_len)
{
    char *da = a_len ? strndup(a, a_len) : strdup(".");
    char *db = b_len ? strndup(b, b_len) : strdup(".");
    if (da == NULL || db == NULL) bookkeeping_out_of_memory();
    struct stat sa, sb;
    bool same = stat(da, &sa) == 0 && stat(db, &sb) == 0
             && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(da);
    free(db);
    return same;
}

static bool npy_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    const bool a_exists = stat(a, &sa) == 0, b_exists = stat(b, &sb) == 0;
    if (a_exists || b_exists)
        return a_exists && b_exists && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    const char *slash_a = strrchr(a, '/'), *slash_b = strrchr(b, '/');
    const char *name_a = slash_a ? slash_a + 1 : a, *name_b = slash_b ? slash_b + 1 : b;
    return strcmp(name_a, name_b) == 0
        && npy_same_directory(a, (size_t)(name_a - a), b, (size_t)(name_b - b));
}

typedef struct {
    char *path;        /* the name the program was given */
    char *target;      /* that name with its symbolic links followed */
    char *temporary;   /* TARGET.tmp.XXXXXX, beside the file it will replace */
    int   fd;          /* open until the data is written, then -1 */
    pid_t owner;       /* the process that made it */
} npy_reservation;

#define NPY_MAX_RESERVED 64
static struct {
    npy_reservation r[NPY_MAX_RESERVED];
    size_t n;
    bool handlers;           /* the exit and signal handlers are installed */
} npy_reserved;

static void npy_remove_reserved(void)
{
    for (size_t i = 0; i < npy_reserved.n; i++)
        if (npy_reserved.r[i].owner == getpid()) unlink(npy_reserved.r[i].temporary);
}

static void npy_remove_reserved_on_signal(int sig)
{
    npy_remove_reserved();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void npy_install_handlers(void)
{
    if (npy_reserved.handlers) return;
    npy_reserved.handlers = true;
    atexit(npy_remove_reserved);
    static const int signals[] = { SIGINT, SIGTERM, SIGHUP };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction old;
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            signal(signals[i], npy_remove_reserved_on_signal);
    }
}

static npy_reservation *npy_reservation_of(const char *path)
{
    for (size_t i = 0; i < npy_reserved.n; i++)
        if (strcmp(npy_reserved.r[i].path, path) == 0) return &npy_reserved.r[i];
    return NULL;
}

static void npy_forget(npy_reservation *r, bool remove_temporary)
{
    if (r->fd >= 0) close(r->fd);
    if (remove_temporary) unlink(r->temporary);
    free(r->path); free(r->target); free(r->temporary);
    *r = npy_reserved.r[--npy_reserved.n];
}

static char *npy_link_target(const char *link, const char *contents)
{
    const char *slash = strrchr(link, '/');
    char *next = NULL;
    if (contents[0] == '/' || slash == NULL) next = strdup(contents);
    else if (asprintf(&next, "%.*s/%s", (int)(slash - link), link, contents) < 0) next = NULL;
    if (next == NULL) bookkeeping_out_of_memory();
    return next;
}

static int npy_follow_links(const char *path, char **target, char *err, size_t errlen)
{
    char *p = strdup(path), contents[4096];
    if (p == NULL) bookkeeping_out_of_memory();
    for (int depth = 0; depth < 40; depth++) {
        const ssize_t len = readlink(p, contents, sizeof contents - 1);
        if (len < 0) { *target = p; return 0; }
        contents[len] = '\0';
        char *next = npy_link_target(p, contents);
        free(p); p = next;
    }
    free(p);
    snprintf(err, errlen, "%s: %s", path, strerror(ELOOP));
    return -1;
}

static int npy_check_target(const char *target, const char *path, mode_t *mode,
                            char *err, size_t errlen)
{
    struct stat st;
    *mode = 0644;
    if (stat(target, &st) != 0) return 0;                 /* not there yet */
    if (!S_ISREG(st.st_mode))
        snprintf(err, errlen, "%s: not a regular file; refusing to replace it", path);
    else if (access(target, W_OK) != 0 || (st.st_mode & 0222) == 0)
        snprintf(err, errlen, "%s: not writable (mode %04o); refusing to replace it", path,
                 (unsigned)(st.st_mode & 07777));
    else { *mode = st.st_mode & 07777; return 0; }
    return -1;
}

static int npy_create_temporary(npy_reservation *r, const char *path, mode_t mode,
                                char *err, size_t errlen)
{
    if (asprintf(&r->temporary, "%s.tmp.XXXXXX", r->target) < 0) bookkeeping_out_of_memory();
    r->fd = mkstemp(r->temporary);
    if (r->fd < 0) {
        snprintf(err, errlen, "%s: cannot create %s: %s", path, r->temporary, strerror(errno));
        free(r->temporary);
        return -1;
    }
    fchmod(r->fd, mode);
    return 0;
}

int npy_reserve(const char *path, char *err, size_t errlen)
{
    if (npy_reservation_of(path) != NULL) return 0;
    if (npy_reserved.n == NPY_MAX_RESERVED) {
        snprintf(err, errlen, "%s: more than %d outputs at once", path, NPY_MAX_RESERVED);
        return -1;
    }
    npy_reservation r = { .fd = -1 };
    mode_t mode;
    if (npy_follow_links(path, &r.target, err, errlen) != 0) return -1;
    npy_install_handlers();
    if (npy_check_target(r.target, path, &mode, err, errlen) != 0
        || npy_create_temporary(&r, path, mode, err, errlen) != 0) {
        free(r.target);
        return -1;
    }
    r.path = strdup(path);
    if (r.path == NULL) bookkeeping_out_of_memory();
    r.owner = getpid();
    npy_reserved.r[npy_reserved.n++] = r;
    return 0;
}

void npy_reserve_outputs_or_exit(const char *program, const char *const outputs[], size_t n,
                                 const char *const inputs[], size_t m)
{
    npy_refuse_overlap(program, outputs, n, inputs, m);
    char err[512];
    for (size_t i = 0; i < n; i++)
        if (outputs[i] != NULL && npy_reserve(outputs[i], err, sizeof err) != 0)
            die_usage(program, "%s", err);
}

void npy_release_reserved(void)
{
    while (npy_reserved.n > 0) {
        npy_reservation *r = &npy_reserved.r[npy_reserved.n - 1];
        npy_forget(r, r->owner == getpid());     /* a parent's temporary is its own */
    }
}
static int npy_distinct(size_t n, const char *const paths[], char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (npy_same_file(paths[i], paths[j])) {
                snprintf(err, errlen, "%s and %s are one file; each output needs "
                         "its own", paths[i], paths[j]);
                return -1;
            }
    return 0;
}

static int npy_fill(const char *path, const tensor *t, char *err, size_t errlen)
{
    if (t->ndim < 1 || t->ndim > 4) {
        snprintf(err, errlen, "%s: a tensor has 1 to 4 dimensions, not %d", path, t->ndim);
        return -1;
    }
    if (npy_reserve(path, err, errlen) != 0) return -1;
    npy_reservation *r = npy_reservation_of(path);
    const int failure = npy_write_fd(r->fd, t);
    r->fd = -1;                                   /* closed by the write */
    if (failure == 0) return 0;
    npy_forget(r, true);
    snprintf(err, errlen, "%s: cannot write: %s", path, strerror(failure));
    return -1;
}

int npy_write_all(size_t n, const char *const paths[], const tensor *const ts[],
                  char *err, size_t errlen)
{
    if (npy_distinct(n, paths, err, errlen) != 0) return -1;
    size_t filled = 0;
    int status = 0;
    while (filled < n && (status = npy_fill(paths[filled], ts[filled], err, errlen)) == 0)
        filled++;
    for (size_t i = 0; i < filled; i++) {
        npy_reservation *r = npy_reservation_of(paths[i]);
        const bool renamed = status == 0 && rename(r->temporary, r->target) == 0;
        if (status == 0 && !renamed) {
            snprintf(err, errlen, "%s: cannot write: %s", paths[i], strerror(errno));
            status = -1;
        }
        npy_forget(r, !renamed);
    }
    return status;
}

int npy_write(const char *path, const tensor *t, char *err, size_t errlen)
{
    return npy_write_all(1, &path, &t, err, errlen);
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
    npy_write_all_or_exit(program, 1, &path, &t);
}

void npy_write_all_or_exit(const char *program, size_t n, const char *const paths[],
                           const tensor *const ts[])
{
    char err[512];
    if (npy_write_all(n, paths, ts, err, sizeof err) != 0)
        die_usage(program, "%s", err);
}

void npy_refuse_overlap(const char *program, const char *const outputs[], size_t n,
                        const char *const inputs[], size_t m)
{
    for (size_t i = 0; i < n; i++) {
        if (outputs[i] == NULL) continue;
        for (size_t j = 0; j < m; j++)
            if (inputs[j] != NULL && npy_same_file(outputs[i], inputs[j]))
                die_usage(program, "the output %s is the input %s; refusing to "
                          "overwrite it", outputs[i], inputs[j]);
        for (size_t j = i + 1; j < n; j++)
            if (outputs[j] != NULL && npy_same_file(outputs[i], outputs[j]))
                die_usage(program, "the outputs %s and %s are one file; each "
                          "output needs its own", outputs[i], outputs[j]);
    }
}

void npy_refuse_same_file(const char *program, const char *out,
                          const char *const inputs[], size_t n)
{
    npy_refuse_overlap(program, &out, 1, inputs, n);
}

tensor npy_shape_or_exit(const char *program, const char *path)
{
    char err[512];
    tensor t;
    if (npy_read_shape(path, &t, err, sizeof err) != 0)
        die_usage(program, "%s", err);
    return t;
}

