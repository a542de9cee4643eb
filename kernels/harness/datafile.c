/* datafile.c — data files for the figures. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness/datafile.h"
#include "harness/memory.h"
#include "harness/fail.h"
void data_fail(const char *what, const char *path)
{
    die_line("cannot %s %s: %s", what, path, strerror(errno));
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

void data_directory(const char *dir)
{
    if (dir[0] == '\0')
        die_line("the data directory is an empty string");
    char *path = bookkeeping_alloc(strlen(dir) + 1);
    strcpy(path, dir);
    make_directories(path);
    free(path);
}

typedef struct {
    int   fd;
    int   failure;        /* errno of the first failed write, or 0 */
    char *temporary;      /* DIR/NAME.tmp.XXXXXX */
    char *path;           /* DIR/NAME */
} data_sink;

static ssize_t data_sink_write(void *cookie, const char *bytes, size_t size)
{
    data_sink *sink = cookie;
    for (size_t done = 0; done < size; ) {
        ssize_t n = write(sink->fd, bytes + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            sink->failure = n < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)size;
}

static int data_sink_close(void *cookie)
{
    data_sink *sink = cookie;
    int failure = sink->failure;
    if (close(sink->fd) != 0 && failure == 0) failure = errno;
    if (failure == 0 && rename(sink->temporary, sink->path) != 0) failure = errno;
    if (failure != 0) {
        unlink(sink->temporary);
        fprintf(stderr, "%s: error: cannot write %s: ", program_invocation_short_name,
                sink->path);
        fputs_escaped(strerror(failure), stderr);
        fputc('\n', stderr);
    }
    free(sink->temporary); free(sink->path); free(sink);
    return failure ? -1 : 0;
}

FILE *data_file(const char *dir, const char *name)
{
    data_directory(dir);
    data_sink *sink = bookkeeping_alloc(sizeof *sink);
    if (asprintf(&sink->path, "%s/%s", dir, name) < 0
        || asprintf(&sink->temporary, "%s.tmp.XXXXXX", sink->path) < 0)
        bookkeeping_out_of_memory();
    sink->failure = 0;
    sink->fd = mkstemp(sink->temporary);
    if (sink->fd < 0)
        data_fail("write", sink->path);
    fchmod(sink->fd, 0644);
    cookie_io_functions_t io = { .write = data_sink_write, .close = data_sink_close };
    FILE *f = fopencookie(sink, "w", io);
    if (f == NULL) {
        unlink(sink->temporary);
        data_fail("write", sink->path);
    }
    return f;
}
void data_close(FILE *f)
{
    if (fclose(f) != 0)
        exit(2);
}

