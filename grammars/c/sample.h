/*
 * Written for lode's tags fixtures in the style of a C library's public header
 * (the shape of zlib's zlib.h and libuv's uv.h, both permissive licences); no code is copied.
 * Its API is prototypes: `lode symbols ring_push` must find them.
 */
#ifndef RING_H
#define RING_H

#include <stddef.h>
#include <stdint.h>

#define RING_VERSION "1.4.2"
#define RING_VERNUM 0x1420

#if defined(_WIN32) && defined(RING_SHARED)
#define RING_EXTERN __declspec(dllexport)
#else
#define RING_EXTERN /* nothing */
#endif

/** An opaque ring buffer of fixed-size records. */
typedef struct ring ring_t;

/** Called for every record a drain removes; returns non-zero to stop. */
typedef int (*ring_visit_fn)(void *record, void *context);

/** Why an operation failed. */
typedef enum {
    RING_OK = 0,
    RING_EFULL = -1,   /**< No free slot. */
    RING_EEMPTY = -2,  /**< Nothing to pop. */
    RING_EINVAL = -3,
} ring_status;

/** Counters kept by every ring. */
struct ring_stats {
    uint64_t pushed;
    uint64_t popped;
    uint64_t dropped;
};

/**
 * Creates a ring of `capacity` records of `record_size` bytes each.
 * Returns NULL when the allocation fails or a size is zero.
 */
ring_t *ring_new(size_t capacity, size_t record_size);

/** Frees the ring and every record still in it. */
void ring_free(ring_t *ring);

/** Copies `record` into the next free slot. */
ring_status ring_push(ring_t *ring, const void *record);

/** Copies the oldest record out and frees its slot. */
ring_status ring_pop(ring_t *ring, void *out);

/** The number of records held. */
size_t ring_len(const ring_t *ring);

/** Calls `visit` on each record, oldest first, removing it. */
size_t ring_drain(ring_t *ring, ring_visit_fn visit, void *context);

/** The ring's counters, or NULL for a NULL ring. */
const struct ring_stats *ring_stats_of(const ring_t *ring);

/** A human-readable name of `status`, never NULL. */
const char *ring_strerror(ring_status status);

/** Splits a "key=value,key=value" option string; the caller frees the result. */
char **ring_parse_options(const char *options, size_t *count);

#ifdef RING_WITH_LOCKS
/** Pushes from several threads at once. */
ring_status ring_push_locked(ring_t *ring, const void *record);
#else
#define ring_push_locked ring_push
#endif

/** Whether the ring is full (inline: called on every push). */
static inline int ring_is_full(const ring_t *ring, size_t capacity)
{
    return ring_len(ring) == capacity;
}

#endif /* RING_H */
