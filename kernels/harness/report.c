/* report.c — reports and tables. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "harness/fail.h"
#include "harness/memory.h"
#include "harness/report.h"
struct table {
    char  *name, *title;
    size_t columns, rows;
    size_t capacity;       /* of cells, in strings */
    char **headings;       /* columns strings */
    char **cells;          /* rows * columns strings, row by row */
};

typedef enum { ITEM_FACT, ITEM_NOTE, ITEM_TABLE } item_kind;
typedef struct {
    item_kind kind;
    char     *key, *label, *text;  /* label: NULL, or words to show instead of key */
    table    *table;
} report_item;
struct report {
    char        *program;
    bool         json;
    size_t       count, capacity;
    report_item *items;
};

static void *grow_array(void *array, size_t *capacity, size_t needed, size_t size)
{
    if (needed <= *capacity)
        return array;
    size_t grown = *capacity ? 2 * *capacity : 8;
    while (grown < needed)
        grown *= 2;
    array = realloc(array, fa_mul(grown, size));
    if (array == NULL)
        bookkeeping_out_of_memory();
    *capacity = grown;
    return array;
}

static char *report_copy(const char *text)
{
    size_t length = strlen(text);
    char *copy = bookkeeping_alloc(length + 1);
    memcpy(copy, text, length + 1);
    return copy;
}

static char *report_vformat(const char *fmt, va_list args)
{
    char *text = NULL;
    if (vasprintf(&text, fmt, args) < 0)
        bookkeeping_out_of_memory();
    return text;
}

static void report_bug(const char *what, const char *name)
{
    fprintf(stderr, "internal error: %s '%s'\n", what, name);
    abort();
}

report *report_new(const char *program, bool json)
{
    report *r = bookkeeping_alloc(sizeof *r);
    *r = (report){ .program = report_copy(program), .json = json };
    return r;
}

static report_item *report_add(report *r, item_kind kind)
{
    r->items = grow_array(r->items, &r->capacity, r->count + 1, sizeof *r->items);
    r->items[r->count] = (report_item){ .kind = kind };
    return &r->items[r->count++];
}

static report_item *report_find_fact(report *r, const char *key)
{
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].kind == ITEM_FACT && strcmp(r->items[i].key, key) == 0)
            return &r->items[i];
    return NULL;
}

void report_fact_labeled(report *r, const char *key, const char *label,
                         const char *formatted)
{
    report_item *item = report_find_fact(r, key);
    if (item == NULL) {
        item = report_add(r, ITEM_FACT);
        item->key = report_copy(key);
    }
    free(item->text);
    item->text = report_copy(formatted);
    if (label != NULL) {
        free(item->label);
        item->label = report_copy(label);
    }
}

void report_fact(report *r, const char *key, const char *formatted)
{
    report_fact_labeled(r, key, NULL, formatted);
}

void report_factf(report *r, const char *key, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    char *text = report_vformat(fmt, args);
    va_end(args);
    report_fact(r, key, text);
    free(text);
}

void report_note(report *r, const char *text)
{
    report_add(r, ITEM_NOTE)->text = report_copy(text);
}

static size_t report_check_table(const report *r, const char *name,
                                 const char *const columns[])
{
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].kind == ITEM_TABLE && strcmp(r->items[i].table->name, name) == 0)
            report_bug("two tables named", name);
    size_t n = 0;
    while (columns[n] != NULL)
        n++;
    if (n == 0)
        report_bug("no columns in table", name);
    return n;
}

table *report_table(report *r, const char *name, const char *title,
                    const char *const columns[])
{
    size_t n = report_check_table(r, name, columns);
    table *t = bookkeeping_alloc(sizeof *t);
    *t = (table){ .name = report_copy(name), .title = report_copy(title), .columns = n };
    t->headings = bookkeeping_alloc(n * sizeof(char *));
    for (size_t j = 0; j < n; j++)
        t->headings[j] = report_copy(columns[j]);
    report_add(r, ITEM_TABLE)->table = t;
    return t;
}

static char **table_new_row(table *t)
{
    size_t needed = fa_mul(t->rows + 1, t->columns);
    t->cells = grow_array(t->cells, &t->capacity, needed, sizeof(char *));
    return &t->cells[t->rows++ * t->columns];
}

void table_row(table *t, const char *const cells[])
{
    char **row = table_new_row(t);
    for (size_t j = 0; j < t->columns; j++)
        row[j] = report_copy(cells[j]);
}

void table_rowf(table *t, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    char *text = report_vformat(fmt, args);
    va_end(args);
    size_t bars = 0;
    for (const char *p = text; *p; p++)
        bars += *p == '|';
    if (bars + 1 != t->columns)
        report_bug("table_rowf: wrong number of cells for table", t->name);
    char **row = table_new_row(t);
    char *cell = text;
    for (size_t j = 0; j < t->columns; j++) {
        char *bar = strchr(cell, '|');
        if (bar != NULL)
            *bar = '\0';
        row[j] = report_copy(cell);
        cell = bar != NULL ? bar + 1 : cell;
    }
    free(text);
}

static size_t text_width(const char *s)
{
    size_t width = 0;
    for (; *s; s++)
        width += ((unsigned char)*s & 0xC0) != 0x80;
    return width;
}

static void print_padded(FILE *out, const char *s, size_t width)
{
    for (size_t w = text_width(s); w < width; w++)
        fputc(' ', out);
    fputs(s, out);
}

static size_t *table_widths(const table *t)
{
    size_t *widths = bookkeeping_alloc(t->columns * sizeof *widths);
    for (size_t j = 0; j < t->columns; j++) {
        widths[j] = text_width(t->headings[j]);
        for (size_t i = 0; i < t->rows; i++) {
            size_t w = text_width(t->cells[i * t->columns + j]);
            widths[j] = w > widths[j] ? w : widths[j];
        }
    }
    return widths;
}

static void print_table_line(FILE *out, char *const cells[], const size_t widths[],
                             size_t columns)
{
    for (size_t j = 0; j < columns; j++) {
        fputs(j > 0 ? "  " : "", out);
        print_padded(out, cells[j], widths[j]);
    }
    fputc('\n', out);
}

static void print_table(FILE *out, const table *t)
{
    size_t *widths = table_widths(t);
    fprintf(out, "%s\n", t->title);
    print_table_line(out, t->headings, widths, t->columns);
    for (size_t j = 0; j < t->columns; j++) {
        fputs(j > 0 ? "  " : "", out);
        for (size_t w = 0; w < widths[j]; w++)
            fputc('-', out);
    }
    fputc('\n', out);
    for (size_t i = 0; i < t->rows; i++)
        print_table_line(out, &t->cells[i * t->columns], widths, t->columns);
    free(widths);
}

static size_t block_end(const report *r, size_t first)
{
    item_kind kind = r->items[first].kind;
    size_t end = first + 1;
    while (kind != ITEM_TABLE && end < r->count && r->items[end].kind == kind)
        end++;
    return end;
}

static const char *fact_display_name(const report_item *item)
{
    return item->label != NULL ? item->label : item->key;
}

static void print_fact_name(FILE *out, const report_item *item, size_t width)
{
    size_t w = text_width(fact_display_name(item));
    fputs(fact_display_name(item), out);
    if (item->label != NULL) {
        fputc(':', out);
        w++;
    }
    for (; w < width + 2; w++)
        fputc(' ', out);
}

static void print_facts(FILE *out, const report_item *items, size_t n)
{
    size_t width = 0;
    for (size_t i = 0; i < n; i++) {
        size_t w = text_width(fact_display_name(&items[i]));
        width = w > width ? w : width;
    }
    for (size_t i = 0; i < n; i++) {
        print_fact_name(out, &items[i], width);
        fprintf(out, "%s\n", items[i].text);
    }
}

static void print_text(FILE *out, const report *r)
{
    for (size_t i = 0, end; i < r->count; i = end) {
        end = block_end(r, i);
        fputs(i > 0 ? "\n" : "", out);
        if (r->items[i].kind == ITEM_TABLE)
            print_table(out, r->items[i].table);
        else if (r->items[i].kind == ITEM_FACT)
            print_facts(out, &r->items[i], end - i);
        else
            for (size_t k = i; k < end; k++)
                fprintf(out, "%s\n", r->items[k].text);
    }
}

static void print_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    fputc('"', out);
}

static void print_json_list(FILE *out, char *const strings[], size_t n)
{
    fputc('[', out);
    for (size_t j = 0; j < n; j++) {
        fputs(j > 0 ? ", " : "", out);
        print_json_string(out, strings[j]);
    }
    fputc(']', out);
}

static void print_json_fact(FILE *out, const report_item *fact)
{
    print_json_string(out, fact->key);
    fputs(": ", out);
    print_json_string(out, fact->text);
}

static void print_json_table(FILE *out, const table *t)
{
    print_json_string(out, t->name);
    fputs(": {\"title\": ", out);
    print_json_string(out, t->title);
    fputs(",\n      \"columns\": ", out);
    print_json_list(out, t->headings, t->columns);
    fputs(",\n      \"rows\": [", out);
    for (size_t i = 0; i < t->rows; i++) {
        fputs(i > 0 ? ",\n        " : "\n        ", out);
        print_json_list(out, &t->cells[i * t->columns], t->columns);
    }
    fputs(t->rows > 0 ? "\n      ]}" : "]}", out);
}

static void print_json_members(FILE *out, const report *r, const char *name,
                               item_kind kind)
{
    const char *separator = "\n    ";
    fprintf(out, "  \"%s\": {", name);
    for (size_t i = 0; i < r->count; i++)
        if (r->items[i].kind == kind) {
            fputs(separator, out);
            if (kind == ITEM_FACT)
                print_json_fact(out, &r->items[i]);
            else
                print_json_table(out, r->items[i].table);
            separator = ",\n    ";
        }
    fputs(separator[0] == ',' ? "\n  },\n" : "},\n", out);
}

static char *report_text(const report *r)
{
    char *text = NULL;
    size_t length = 0;
    FILE *memory = open_memstream(&text, &length);
    if (memory == NULL)
        bookkeeping_out_of_memory();
    print_text(memory, r);
    fclose(memory);
    return text;
}

static void print_json(FILE *out, const report *r)
{
    char *text = report_text(r);
    fputs("{\n  \"program\": ", out);
    print_json_string(out, r->program);
    fputs(",\n", out);
    print_json_members(out, r, "facts", ITEM_FACT);
    print_json_members(out, r, "tables", ITEM_TABLE);
    fputs("  \"text\": ", out);
    print_json_string(out, text);
    fputs("\n}\n", out);
    free(text);
}

static void table_free(table *t)
{
    for (size_t j = 0; j < t->columns; j++)
        free(t->headings[j]);
    for (size_t k = 0; k < t->rows * t->columns; k++)
        free(t->cells[k]);
    free(t->headings);
    free(t->cells);
    free(t->name);
    free(t->title);
    free(t);
}

static void report_free(report *r)
{
    for (size_t i = 0; i < r->count; i++) {
        free(r->items[i].key);
        free(r->items[i].label);
        free(r->items[i].text);
        if (r->items[i].kind == ITEM_TABLE)
            table_free(r->items[i].table);
    }
    free(r->items);
    free(r->program);
    free(r);
}

void report_finish(report *r, FILE *out)
{
    if (r->json)
        print_json(out, r);
    else
        print_text(out, r);
    errno = 0;
    bool failed = fflush(out) != 0 || ferror(out);
    int failure = errno ? errno : EIO;
    char program[64];
    snprintf(program, sizeof program, "%s", r->program);
    report_free(r);
    if (failed)
        die_usage(program, "cannot write the report: %s", strerror(failure));
}

