/* test_support.c — running a chapter inside its tests. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/datafile.h"
#include "harness/memory.h"
#include "harness/test_support.h"
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

