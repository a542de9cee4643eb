/* fuzz_safetensors.c — a libFuzzer target for the safetensors reader.
   Tangled from chapters/ch12_real_model.nw. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness/safetensors.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    char err[512];
    st_file f;
    if (!copy) abort();
    memcpy(copy, data, size);
    if (st_parse(copy, size, &f, err, sizeof err) == 0) {
        for (size_t i = 0; i < f.count; i++) {
            const st_tensor *t = &f.tensors[i];
            const unsigned char *p = t->data;
            if (p < copy + 8 || p + (t->end - t->begin) > copy + size) abort();
        }
        if (f.count && (const unsigned char *)f.tensors[f.count - 1].data
                       + (f.tensors[f.count - 1].end - f.tensors[f.count - 1].begin) != copy + size) abort();
        st_close(&f);
    } else if (f.tensors || f.count) abort();
    free(copy);
    return 0;
}
