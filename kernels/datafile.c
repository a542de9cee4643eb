/* datafile.c — data files for the figures. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "datafile.h"
#include "memory.h"
void data_fail(const char *what, const char *path)
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
