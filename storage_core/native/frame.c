/* Framing the records section of a magic-2 batch: `DefaultRecord.readFrom`'s checks, no copies.
 *
 * This mirrors storage_core/records/record.py `frame_record` step by step, including where it
 * reads a byte that is not there (Python's IndexError, "index out of range") and where its general
 * varint decoder runs out ("varint runs past the end of the buffer"): a varint's first and second
 * bytes are read directly, longer ones by the general decoder. Values are Python's exactly: a
 * 5-byte varint keeps all 35 bits, as the Python decoder does; a 10-byte varlong wider than 64
 * bits is reported as FRAME_UNSUPPORTED, and the glue hands that section to the Python twin.
 */
#include "native.h"

static int fail(lk_frame_error *error, int kind, int what, int64_t a, int64_t b) {
    error->kind = kind;
    error->what = what;
    error->a = a;
    error->b = b;
    return -1;
}

static inline int64_t zigzag(uint64_t z) { return (int64_t)(z >> 1) ^ -(int64_t)(z & 1); }

/* The general decoder (varint.py `_decode`): up to `max_bytes` bytes from `pos`. */
static int decode(const uint8_t *data, size_t n, int64_t pos, int max_bytes, int64_t *value, int64_t *next,
                  lk_frame_error *error) {
    uint64_t z = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if ((uint64_t)(pos + i) >= n) return fail(error, FRAME_CORRUPT, E_VARINT_PAST_END, 0, 0);
        uint8_t byte = data[pos + i];
        uint64_t bits = byte & 0x7f;
        if (shift == 63 && (bits >> 1)) return fail(error, FRAME_UNSUPPORTED, E_TOO_WIDE, 0, 0);
        z |= bits << shift;
        if (byte < 0x80) {
            *value = zigzag(z);
            *next = pos + i + 1;
            return 0;
        }
        shift += 7;
    }
    return fail(error, FRAME_CORRUPT, max_bytes == 5 ? E_VARINT_TOO_LONG : E_VARLONG_TOO_LONG, 0, 0);
}

/* A varint as `frame_record` reads one: first byte, second byte, else the general decoder. */
static inline int var(const uint8_t *data, size_t n, int64_t *pos, int max_bytes, int64_t *value,
                      lk_frame_error *error) {
    int64_t p = *pos;
    if (p < 0 || (uint64_t)p >= n) return fail(error, FRAME_INDEX, E_INDEX, 0, 0);
    uint8_t first = data[p];
    if (first < 0x80) {
        *value = zigzag(first);
        *pos = p + 1;
        return 0;
    }
    if ((uint64_t)(p + 1) >= n) return fail(error, FRAME_INDEX, E_INDEX, 0, 0);
    uint8_t second = data[p + 1];
    if (second < 0x80) {
        *value = zigzag((uint64_t)(first & 0x7f) | ((uint64_t)second << 7));
        *pos = p + 2;
        return 0;
    }
    return decode(data, n, p, max_bytes, value, pos, error);
}

int64_t lk_frame_header(const uint8_t *data, size_t n, int64_t pos, int64_t *key_position, int64_t *key_size,
                        int64_t *value_position, int64_t *value_size, lk_frame_error *error) {
    if (var(data, n, &pos, 5, key_size, error)) return -1;
    if (*key_size < 0) return fail(error, FRAME_CORRUPT, E_HEADER_KEY_SIZE, *key_size, 0);
    *key_position = pos;
    pos += *key_size;
    if (var(data, n, &pos, 5, value_size, error)) return -1;
    *value_position = pos;
    if (*value_size >= 0) pos += *value_size;
    return pos;
}

/* Positions stay far from overflow: each step adds at most a 35-bit length to a position that
 * was inside the section (or one such step past it) before the next bounds check. */
static int frame_one(const uint8_t *data, size_t n, int64_t pos, lk_frame *f, lk_frame_error *error) {
    int64_t length;
    if (var(data, n, &pos, 5, &length, error)) return -1;
    int64_t end = pos + length;
    if (length < 0 || (uint64_t)end > n) return fail(error, FRAME_CORRUPT, E_RECORD_PAST_SECTION, length, 0);
    pos += 1; /* attributes, unused */
    if (var(data, n, &pos, 10, &f->timestamp_delta, error)) return -1;
    if (var(data, n, &pos, 5, &f->offset_delta, error)) return -1;
    if (var(data, n, &pos, 5, &f->key_length, error)) return -1;
    f->key_position = pos;
    if (f->key_length > 0) pos += f->key_length;
    if (var(data, n, &pos, 5, &f->value_length, error)) return -1;
    f->value_position = pos;
    if (f->value_length > 0) pos += f->value_length;
    if (var(data, n, &pos, 5, &f->header_count, error)) return -1;
    if (f->header_count < 0 || f->header_count > end - pos)
        return fail(error, FRAME_CORRUPT, E_HEADER_COUNT, f->header_count, 0);
    f->headers_position = pos;
    for (int64_t h = 0; h < f->header_count; h++) {
        int64_t key_position, key_size, value_position, value_size;
        pos = lk_frame_header(data, n, pos, &key_position, &key_size, &value_position, &value_size, error);
        if (pos < 0) return -1;
    }
    if (pos != end) return fail(error, FRAME_CORRUPT, E_RECORD_LENGTH, length, length + pos - end);
    f->end = end;
    return 0;
}

int64_t lk_frame_records(const uint8_t *data, size_t n, int64_t count, lk_frame **frames, lk_frame_error *error) {
    size_t cap = 0;
    int64_t framed = 0, end = 0;
    lk_frame *out = NULL;
    for (; framed < count; framed++) {
        if ((size_t)framed == cap) {
            cap = cap ? cap * 2 : 64;
            lk_frame *grown = realloc(out, cap * sizeof(lk_frame));
            if (!grown) {
                free(out);
                return fail(error, FRAME_NOMEM, 0, 0, 0);
            }
            out = grown;
        }
        if (frame_one(data, n, end, &out[framed], error)) {
            free(out);
            return -1;
        }
        end = out[framed].end;
    }
    if ((uint64_t)end != n) {
        free(out);
        return fail(error, FRAME_CORRUPT, E_BYTES_LEFT, (int64_t)n - end, count);
    }
    *frames = out;
    return framed;
}
