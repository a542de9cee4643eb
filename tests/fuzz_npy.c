/* fuzz_npy.c — a libFuzzer target for the .npy reader.
   Tangled from chapters/app_robustness.nw; edit that file, not this one. */
#define _GNU_SOURCE
#include "harness/harness.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
static void breach(const char *rule)
{
    fprintf(stderr, "accepted a file that breaks the .npy rules: %s\n", rule);
    abort();
}

static size_t accepted_header_length(const uint8_t *data, size_t size, size_t *prefix)
{
    if (size < 10 || data[6] < 1 || data[6] > 3 || data[7] != 0) breach("version");
    *prefix = data[6] == 1 ? 10 : 12;
    if (size < *prefix) breach("prefix");
    size_t length = data[8] | (size_t)data[9] << 8;
    if (data[6] > 1) length |= (size_t)data[10] << 16 | (size_t)data[11] << 24;
    if (length > 65536 || *prefix + length > size) breach("header length");
    return length;
}

static void check_accepted(const uint8_t *data, size_t size, const tensor *t)
{
    size_t prefix, length = accepted_header_length(data, size, &prefix);
    const uint8_t *h = data + prefix;
    if (length == 0 || h[length - 1] != '\n') breach("no newline at the end");
    for (size_t i = 0; i < length; i++) {
        if (!(h[i] >= 0x20 && h[i] < 0x7f) && h[i] != '\t' && h[i] != '\n')
            breach("a byte that is not printable ASCII or white space");
        if (h[i] == '0' && i + 1 < length && h[i + 1] >= '0' && h[i + 1] <= '9'
            && (i == 0 || h[i - 1] < '0' || h[i - 1] > '9'))
            breach("a number with a leading zero");
        if (data[6] == 3 && h[i] == 'L' && i > 0 && h[i - 1] >= '0' && h[i - 1] <= '9')
            breach("a Python 2 long in a version 3.0 header");
    }
    if (size - prefix - length != tensor_count(t) * sizeof(float))
        breach("data size");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.npy", 0);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) abort();
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tensor t;
    if (npy_read(path, &t, err, sizeof err) == 0) {
        check_accepted(data, size, &t);
        tensor_free(&t);
    }
    if (fa_bytes_live() != 0) abort();
    close(fd);
    return 0;
}
