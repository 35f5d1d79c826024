/*
 * Written for lode's tags fixtures in the style of a small C library's dynamic
 * string module (the shape of Redis' sds.c, BSD-3-Clause); no code is copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"

/** Smallest capacity a buffer grows to. */
#define BUF_MIN_CAPACITY 16
#define BUF_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Guards against a header included twice in one unit. */
#ifndef BUF_DEBUG
#define BUF_DEBUG 0
#endif

/** How a buffer failed. */
typedef enum buf_status {
    BUF_OK = 0,     /**< Nothing went wrong. */
    BUF_ENOMEM,     /**< An allocation failed. */
    BUF_ERANGE,
} buf_status;

/**
 * A growable byte buffer.
 *
 * The bytes are always followed by a NUL, so `data` can be read as a C string.
 */
struct buf {
    char *data;
    size_t len;
    size_t cap;
};

/** A view of part of a buffer, valid until the buffer grows. */
typedef struct {
    const char *ptr;
    size_t len;
} buf_slice;

/* A number or a pointer, for the statistics below. */
union buf_value {
    long number;
    void *pointer;
};

typedef void (*buf_free_fn)(void *);
typedef unsigned long buf_hash;

/** Bytes allocated by every buffer so far. */
static size_t total_allocated = 0;
int buf_verbose;
const char *buf_version = "1.2.0";

static int grow(struct buf *b, size_t need);

/**
 * Creates an empty buffer.
 *
 * @return the buffer, or NULL when out of memory
 */
struct buf *buf_new(void)
{
    struct buf *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    if (grow(b, BUF_MIN_CAPACITY) != 0) {
        free(b);
        return NULL;
    }
    b->data[0] = '\0';
    return b;
}

/** Frees a buffer and its bytes; NULL is allowed. */
void buf_free(struct buf *b)
{
    if (!b)
        return;
    free(b->data);
    free(b);
}

/* Makes room for `need` more bytes past the end. */
static int grow(struct buf *b, size_t need)
{
    size_t cap = BUF_MAX(b->cap * 2, b->len + need + 1);
    char *data = realloc(b->data, cap);
    if (data == NULL)
        return BUF_ENOMEM;
    total_allocated += cap - b->cap;
    b->data = data;
    b->cap = cap;
    return BUF_OK;
}

/**
 * Appends `len` bytes.
 *
 * @param b   the buffer
 * @param src the bytes to append
 * @param len how many
 */
buf_status buf_append(struct buf *b, const char *src, size_t len)
{
    if (b->len + len + 1 > b->cap && grow(b, len) != 0)
        return BUF_ENOMEM;
    memcpy(b->data + b->len, src, len);
    b->len += len;
    b->data[b->len] = '\0';
    return BUF_OK;
}

buf_status buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

/** The bytes from `start`, at most `len` of them. */
buf_slice buf_slice_of(const struct buf *b, size_t start, size_t len)
{
    buf_slice slice = { b->data + start, 0 };
    if (start > b->len)
        start = b->len;
    slice.len = len < b->len - start ? len : b->len - start;
    return slice;
}

/* FNV-1a over the buffer's bytes. */
buf_hash buf_hash_of(const struct buf *b)
{
    buf_hash h = 2166136261u;
    for (size_t i = 0; i < b->len; i++) {
        h ^= (unsigned char)b->data[i];
        h *= 16777619u;
    }
    return h;
}

void buf_dump(const struct buf *b, FILE *out)
{
    if (BUF_DEBUG || buf_verbose)
        fprintf(out, "buf %zu/%zu (%zu total)\n", b->len, b->cap, total_allocated);
    fwrite(b->data, 1, b->len, out);
}
