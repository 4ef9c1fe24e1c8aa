/* The native core of storage_core: plain C over byte spans, no Python object in sight.
 *
 * Every function here reads only inside the span it is given (every read is bounds-checked
 * against the span's length before it happens) and never allocates more than a bounded,
 * checked amount. The Python glue (module.c) pins the buffers, releases the GIL around the
 * loops and turns results into Python objects; the twins in pure.py are the reference.
 */
#ifndef LK_NATIVE_H
#define LK_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Big-endian loads through memcpy: no unaligned access, no aliasing. */
static inline uint32_t lk_be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}
static inline uint64_t lk_be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}
static inline uint16_t lk_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline void lk_put_be32(uint8_t *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}
static inline void lk_put_be64(uint8_t *p, uint64_t v) {
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}

/* ---- crc32c.c ---------------------------------------------------------------------------- */
void lk_crc32c_init(void);
const char *lk_crc32c_implementation(void);
/* CRC-32C of p[0..n) continuing from `crc` (0 for a fresh CRC); unsigned, as Kafka stores it. */
uint32_t lk_crc32c(uint32_t crc, const uint8_t *p, size_t n);

/* ---- md5.c ------------------------------------------------------------------------------- */
void lk_md5(const uint8_t *p, size_t n, uint8_t digest[16]);

/* ---- walk.c: the v2 batch-chain walk (see walk.py for the state layout) ------------------- */
enum {
    W_POSITION, W_END, W_BATCHES, W_HAVE_LAST, W_LAST_OFFSET, W_FLAGS, W_SEGMENT_BASE, W_INTERVAL,
    W_LAST_INDEX_ENTRY, W_MAX_TIMESTAMP, W_OFFSET_OF_MAX, W_OI_COUNT, W_OI_CAPACITY, W_OI_LAST,
    W_TI_COUNT, W_TI_CAPACITY, W_TI_LAST_TIMESTAMP, W_TI_LAST_OFFSET, W_REPLAY, W_EPOCH_FLOOR,
    W_BATCH_POSITION, W_HAVE_SKIPPED, W_SKIPPED_LAST, W_FIELDS
};
enum { WF_VERIFY_CRC = 1, WF_CHECK_OFFSETS = 2, WF_INDEX = 4, WF_CHECK_ORDER = 8 };
enum { REPLAY_NONE = 0, REPLAY_EVERY = 1, REPLAY_PRODUCER_OR_EPOCH = 2 };
enum {
    STOP_END, STOP_TRUNCATED_HEADER, STOP_SIZE_TOO_SMALL, STOP_PAST_END, STOP_BAD_MAGIC,
    STOP_V2_TOO_SMALL, STOP_CRC_MISMATCH, STOP_LEGACY, STOP_OFFSETS_BACKWARDS, STOP_SLOW, STOP_REPLAY
};

typedef struct {
    uint8_t *data;
    size_t len, cap;
} lk_bytes;

/* Returns a STOP_* code; `state` (W_FIELDS int64s) is read and updated; index entries, big-endian
 * as in the files, are appended to `offset_entries` and `time_entries`. -1: out of memory;
 * LK_WALK_TOO_LARGE: `len` is over 2^31 - 1 (Kafka's positions are Java ints, and the offset index
 * stores them in 4 bytes), nothing read or changed. */
#define LK_WALK_TOO_LARGE (-2)
int lk_walk(const uint8_t *buf, size_t len, int64_t *state, lk_bytes *offset_entries, lk_bytes *time_entries);

/* ---- frame.c: the records section of a v2 batch ------------------------------------------- */
typedef struct {
    int64_t end, timestamp_delta, offset_delta, key_position, key_length, value_position, value_length;
    int64_t headers_position; /* where the header count varint ends (headers are decoded by the glue) */
    int64_t header_count;
} lk_frame;

enum { FRAME_OK = 0, FRAME_CORRUPT = 1, FRAME_INDEX = 2, FRAME_UNSUPPORTED = 3, FRAME_NOMEM = 4 };
typedef struct {
    int kind;          /* FRAME_* */
    int what;          /* which message (frame.c's E_*) */
    int64_t a, b;      /* its numbers */
} lk_frame_error;

enum {
    E_INDEX, E_VARINT_PAST_END, E_VARINT_TOO_LONG, E_VARLONG_TOO_LONG, E_RECORD_PAST_SECTION,
    E_HEADER_COUNT, E_HEADER_KEY_SIZE, E_RECORD_LENGTH, E_BYTES_LEFT, E_TOO_WIDE
};

/* Frame `count` records of data[0..n) (DefaultRecord.readFrom's checks); frames go to a malloc'd
 * array the caller frees. Returns the number framed, or -1 with `error` set. */
int64_t lk_frame_records(const uint8_t *data, size_t n, int64_t count, lk_frame **frames, lk_frame_error *error);

/* One header of a framed record: key/value spans; returns the position after it, -1 with error. */
int64_t lk_frame_header(const uint8_t *data, size_t n, int64_t pos, int64_t *key_position, int64_t *key_size,
                        int64_t *value_position, int64_t *value_size, lk_frame_error *error);

/* ---- offset_map.c: Kafka's SkimpyOffsetMap ------------------------------------------------ */
enum { M_SLOTS, M_ENTRIES, M_FIRST_PUT, M_LAST_PUT, M_SUPERSEDED_VALID, M_BITS_BYTES, M_ORDERED, M_FIELDS };
typedef struct {
    uint8_t *slots;   /* M_SLOTS x 24 bytes */
    uint8_t *bits;    /* M_BITS_BYTES bytes of superseded bits */
    int64_t *state;   /* M_FIELDS */
} lk_map;

/* Returns 1 and the slot position (bytes) holding `digest`, or 0 and the empty slot's. */
int lk_map_position(const lk_map *map, const uint8_t digest[16], int64_t *position);
/* One put; returns 0, or -1 when every slot is taken (Kafka's require(entries < slots)). */
int lk_map_put(lk_map *map, const uint8_t *key, size_t key_length, int64_t offset);
/* The offset stored for `key` (-1: none) in *offset; returns 0, or -1 when every slot was visited. */
int lk_map_get(const lk_map *map, const uint8_t *key, size_t key_length, int64_t *offset);
int lk_map_superseded(const lk_map *map, int64_t offset);

#endif
