/* test_support.h — running a chapter inside its tests. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_TEST_SUPPORT_H
#define FA_TEST_SUPPORT_H
#include <stdbool.h>
/* runs main_fn(argc, argv) with standard output captured; returns what it
   printed, NUL-terminated (malloc'd: free it) */
char *capture_stdout_of(int (*main_fn)(int, char **), int argc, char **argv);
/* the value of fact KEY in a report's JSON, unescaped (malloc'd: free
   it), or NULL when there is no such fact */
char *json_fact(const char *json, const char *key);
/* does the report's JSON hold fact KEY with exactly this VALUE? */
bool json_fact_is(const char *json, const char *key, const char *value);
/* capture_stdout_of, run once per run of a test binary and shared by its
   tests under NAME (see capture_stdout_shared) */
char *capture_stdout_shared(const char *name, int (*main_fn)(int, char **), int argc,
                            char **argv);
/* the runner's clean-up, once all its tests are done */
void capture_shared_forget(const char *name);

/* writes TEXT to a new file /tmp/fa_testXXXXXX, its name into PATH; false on failure */
bool temp_file_with(const char *text, char path[32]);
#endif
