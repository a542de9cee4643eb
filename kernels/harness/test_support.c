/* test_support.c — running a chapter inside its tests. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/datafile.h"
#include "harness/memory.h"
#include "harness/test_support.h"
static char *read_and_close(FILE *file);
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
    return read_and_close(capture);
}

static char *read_and_close(FILE *file)
{
    fseek(file, 0, SEEK_END);
    size_t size = (size_t)ftell(file);
    char *text = bookkeeping_alloc(size + 1);
    rewind(file);
    text[fread(text, 1, size, file)] = '\0';
    fclose(file);
    return text;
}

static void shared_capture_path(char *path, size_t size, const char *name, long runner)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/fa-capture-%s-%ld.txt", dir && *dir ? dir : "/tmp", name, runner);
}

char *capture_stdout_shared(const char *name, int (*main_fn)(int, char **), int argc,
                            char **argv)
{
    char path[4096], mine[4200];
    shared_capture_path(path, sizeof path, name, (long)getppid());
    FILE *kept = fopen(path, "rb");
    if (kept != NULL)
        return read_and_close(kept);
    char *text = capture_stdout_of(main_fn, argc, argv);
    snprintf(mine, sizeof mine, "%s.%ld", path, (long)getpid());
    FILE *out = fopen(mine, "wb");
    if (out != NULL) {
        bool written = fputs(text, out) >= 0;
        if (fclose(out) == 0 && written)
            rename(mine, path);
        remove(mine);
    }
    return text;
}

void capture_shared_forget(const char *name)
{
    char path[4096];
    shared_capture_path(path, sizeof path, name, (long)getpid());
    remove(path);
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

bool temp_file_with(const char *text, char path[32])
{
    snprintf(path, 32, "/tmp/fa_testXXXXXX");
    const int fd = mkstemp(path);
    const size_t n = strlen(text);
    const bool written = fd >= 0 && write(fd, text, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return written;
}

