/* harness_tests.h — what the harness's test files share: a function run in
   a child with its output captured, and a scratch directory.
   Tangled from chapters/harness.nw; edit that file, not this one. */
#ifndef HARNESS_TESTS_H
#define HARNESS_TESTS_H
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
typedef struct { int status; char out[8192]; char err[8192]; } captured;

static void read_back(FILE *f, char *text, size_t capacity)
{
    rewind(f);
    size_t n = fread(text, 1, capacity - 1, f);
    text[n] = '\0';
    fclose(f);
}

static volatile int in_captured_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return in_captured_child; }

static void run_in_child(void (*body)(void *), void *ctx, FILE *out, FILE *err)
{
    in_captured_child = 1;
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    body(ctx);
    exit(0);
}

static captured run_captured(void (*body)(void *), void *ctx)
{
    fflush(NULL);
    FILE *out = tmpfile(), *err = tmpfile();
    cr_assert(out != NULL && err != NULL);
    pid_t pid = fork();
    if (pid == 0)
        run_in_child(body, ctx, out, err);
    int status = 0;
    waitpid(pid, &status, 0);
    captured c = { .status = WIFEXITED(status) ? WEXITSTATUS(status) : -1 };
    read_back(out, c.out, sizeof c.out);
    read_back(err, c.err, sizeof c.err);
    return c;
}

typedef struct { char dir[64]; char path[128]; } scratch_dir;

static scratch_dir scratch_new(void)
{
    scratch_dir s;
    snprintf(s.dir, sizeof s.dir, "/tmp/test_harness.XXXXXX");
    cr_assert(mkdtemp(s.dir) != NULL);
    snprintf(s.path, sizeof s.path, "%s/x.npy", s.dir);
    return s;
}

static void scratch_remove(scratch_dir *s)
{
    unlink(s->path);
    cr_assert_eq(rmdir(s->dir), 0, "the directory held more than x.npy");
}

#endif
