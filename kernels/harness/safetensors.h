/* safetensors.h — safetensors files mapped and checked, and the small JSON
   reader they need. Tangled from chapters/ch12_real_model.nw; edit that file. */
#ifndef FA_SAFETENSORS_H
#define FA_SAFETENSORS_H
#include <stdbool.h>
#include <stddef.h>
typedef struct { const char *at, *start, *end; char err[160]; } json_cursor;
json_cursor json_begin(const char *text, size_t length);
bool json_fail(json_cursor *c, const char *what);    /* notes the first error; false */
bool json_expect(json_cursor *c, char ch);           /* spaces, then CH */
bool json_at(json_cursor *c, char ch);               /* spaces; is the next byte CH? */
bool json_next(json_cursor *c, char close, bool *more);   /* ',' or CLOSE */
bool json_string(json_cursor *c, char *out, size_t cap, size_t *length);
bool json_number(json_cursor *c, double *value);
bool json_skip(json_cursor *c, int depth);           /* any value */
/* C at an object: VALUE at KEY's value; false with an empty err if absent */
bool json_member(const json_cursor *c, const char *key, json_cursor *value);
typedef enum { ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8,
               ST_BOOL, ST_DTYPES } st_dtype;
enum { ST_MAX_DIMS = 8, ST_NAME_MAX = 256, ST_HEADER_MAX = 100000000 };
typedef struct {
    char name[ST_NAME_MAX];
    st_dtype dtype;
    int ndim;
    size_t shape[ST_MAX_DIMS];
    size_t begin, end;        /* byte offsets in the data, after the header */
    const void *data;         /* into the mapped file */
} st_tensor;
typedef struct { void *map; size_t size; bool mapped; size_t count; st_tensor *tensors; } st_file;
int  st_parse(const unsigned char *bytes, size_t size, st_file *f, char *err, size_t errlen);
int  st_open(const char *path, st_file *f, char *err, size_t errlen);
void st_close(st_file *f);
const st_tensor *st_find(const st_file *f, const char *name);
const char *st_dtype_name(st_dtype t);
#endif
