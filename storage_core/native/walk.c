/* The v2 batch-chain walk over a mapped `.log` (walk.py documents the state and the stops).
 *
 * For each batch: the frame (17 bytes: base offset, size, 4 bytes, magic), then for a magic-2
 * batch its 61-byte header and CRC-32C over [21, end); the last offset; optionally Kafka's
 * recovery index rule (an offset-index entry and a time-index offer once more than
 * `index.interval.bytes` were read since the last entry). Anything unusual (a legacy entry, an
 * offset that overflows int64 or the segment's int32 range, an index entry that the Python index
 * would refuse) stops the walk before the batch, with the state as it was, so that the Python
 * side handles that one batch the one way it always has. Every read is inside [0, end), end <= len.
 * A buffer over 2^31 - 1 bytes is refused before anything is read (LK_WALK_TOO_LARGE): a segment
 * position is a Java int, and the offset index stores it in 4 bytes.
 */
#include "native.h"

#define INT32_MAX_ 2147483647LL
#define LK_AHEAD 8 /* batches: enough to cover a memory latency at ~700-byte batches */

static int grow(lk_bytes *out, size_t more) {
    if (out->len + more <= out->cap) return 0;
    size_t cap = out->cap ? out->cap * 2 : 4096;
    while (cap < out->len + more) cap *= 2;
    uint8_t *data = realloc(out->data, cap);
    if (!data) return -1;
    out->data = data;
    out->cap = cap;
    return 0;
}

/* `offset - base` when it is an int32 offset relative to `base` (0 <= r <= 2^31-1). */
static int relative(int64_t offset, int64_t base, int64_t *r) {
    if (__builtin_sub_overflow(offset, base, r)) return 0;
    return *r >= 0 && *r <= INT32_MAX_;
}

int lk_walk(const uint8_t *buf, size_t len, int64_t *s, lk_bytes *oe, lk_bytes *te) {
    if (len > (size_t)INT32_MAX_) return LK_WALK_TOO_LARGE; /* so every position below fits an int32 */
    int64_t pos = s[W_POSITION], end = s[W_END];
    if (end < 0 || (uint64_t)end > len) end = (int64_t)len;
    const int64_t flags = s[W_FLAGS], segment_base = s[W_SEGMENT_BASE], interval = s[W_INTERVAL];
    const int64_t replay = s[W_REPLAY], epoch_floor = s[W_EPOCH_FLOOR];
    int64_t batches = s[W_BATCHES], have_last = s[W_HAVE_LAST], last_offset = s[W_LAST_OFFSET];
    int64_t last_index_entry = s[W_LAST_INDEX_ENTRY], max_ts = s[W_MAX_TIMESTAMP], offset_of_max = s[W_OFFSET_OF_MAX];
    int64_t oi_count = s[W_OI_COUNT], oi_last = s[W_OI_LAST];
    int64_t ti_count = s[W_TI_COUNT], ti_last_ts = s[W_TI_LAST_TIMESTAMP], ti_last = s[W_TI_LAST_OFFSET];
    const int64_t oi_capacity = s[W_OI_CAPACITY], ti_capacity = s[W_TI_CAPACITY];
    int64_t have_skipped = s[W_HAVE_SKIPPED], skipped_last = s[W_SKIPPED_LAST];
    int stop;
    if (pos < 0) pos = end; /* never read before the buffer */
    for (;;) {
        if (pos + 17 >= end) {
            stop = pos >= end ? STOP_END : STOP_TRUNCATED_HEADER;
            break;
        }
        const uint8_t *b = buf + pos;
        const int64_t base = (int64_t)lk_be64(b);
        const int32_t size = (int32_t)lk_be32(b + 8);
        const int magic = (int8_t)b[16];
        if (size < 14) {
            stop = STOP_SIZE_TOO_SMALL;
            break;
        }
        const int64_t batch_end = pos + 12 + (int64_t)size;
        if (batch_end > end) {
            stop = STOP_PAST_END;
            break;
        }
        /* Where the next header lies depends on this one's size, so a walk that reads only the
         * headers (WF_CHECK_ORDER without the CRC) waits for memory at every batch once batches
         * are wider than the CPU's own prefetching reaches. A producer writes batches of similar
         * sizes: ask for the header LK_AHEAD batches ahead as if they were all this size. A hint
         * inside [0, end), never a read: a wrong guess costs nothing but the hint. */
        const int64_t ahead = batch_end + LK_AHEAD * (batch_end - pos);
        if (ahead + 64 < end) {
            __builtin_prefetch(buf + ahead);
            __builtin_prefetch(buf + ahead + 64);
        }
        if (magic == 0 || magic == 1) {
            stop = STOP_LEGACY;
            break;
        }
        if (magic != 2) {
            stop = STOP_BAD_MAGIC;
            break;
        }
        if ((int64_t)size + 12 < 61) {
            stop = STOP_V2_TOO_SMALL;
            break;
        }
        /* pos + 61 <= batch_end <= end: the whole header is inside the buffer */
        const uint32_t crc = lk_be32(b + 17);
        const int32_t delta = (int32_t)lk_be32(b + 23);
        const int64_t batch_max = (int64_t)lk_be64(b + 35);
        const int64_t producer_id = (int64_t)lk_be64(b + 43);
        const int32_t epoch = (int32_t)lk_be32(b + 12);
        if ((flags & WF_VERIFY_CRC) && lk_crc32c(0, b + 21, (size_t)(batch_end - pos - 21)) != crc) {
            stop = STOP_CRC_MISMATCH;
            break;
        }
        int64_t last;
        if (__builtin_add_overflow(base, (int64_t)delta, &last)) {
            stop = STOP_SLOW;
            break;
        }
        if (have_last && (((flags & WF_CHECK_OFFSETS) && last <= last_offset) ||
                          ((flags & WF_CHECK_ORDER) && base <= last_offset))) {
            stop = STOP_OFFSETS_BACKWARDS;
            break;
        }
        if (flags & WF_INDEX) {
            int64_t rel, time_rel = 0;
            if (!relative(last, segment_base, &rel)) {
                stop = STOP_SLOW; /* OffsetOverflowError, raised by the Python side */
                break;
            }
            int64_t new_max = max_ts, new_offset_of_max = offset_of_max;
            if (batch_max > new_max) {
                new_max = batch_max;
                new_offset_of_max = last;
            }
            int entry = pos - last_index_entry > interval, time_entry = 0;
            if (entry) {
                if (oi_count >= oi_capacity || (oi_count && rel <= oi_last) || ti_count >= ti_capacity - 1) {
                    stop = STOP_SLOW; /* the index is full or the offsets go backwards */
                    break;
                }
                int64_t previous_ts = -1;
                if (ti_count) {
                    int64_t offset_rel;
                    if (__builtin_sub_overflow(new_offset_of_max, segment_base, &offset_rel) || offset_rel < ti_last ||
                        new_max < ti_last_ts) {
                        stop = STOP_SLOW;
                        break;
                    }
                    previous_ts = ti_last_ts;
                }
                if (new_max > previous_ts) {
                    if (!relative(new_offset_of_max, segment_base, &time_rel)) {
                        stop = STOP_SLOW;
                        break;
                    }
                    time_entry = 1;
                }
                if (grow(oe, 8) || grow(te, 12)) return -1;
                lk_put_be32(oe->data + oe->len, (uint32_t)rel);
                lk_put_be32(oe->data + oe->len + 4, (uint32_t)pos); /* 0 <= pos < len <= 2^31 - 1 */
                oe->len += 8;
                oi_count++;
                oi_last = rel;
                if (time_entry) {
                    lk_put_be64(te->data + te->len, (uint64_t)new_max);
                    lk_put_be32(te->data + te->len + 8, (uint32_t)time_rel);
                    te->len += 12;
                    ti_count++;
                    ti_last_ts = new_max;
                    ti_last = time_rel;
                }
                last_index_entry = pos;
            }
            max_ts = new_max;
            offset_of_max = new_offset_of_max;
        }
        batches++;
        have_last = 1;
        last_offset = last;
        if (replay == REPLAY_EVERY ||
            (replay == REPLAY_PRODUCER_OR_EPOCH && (producer_id >= 0 || (epoch >= 0 && epoch > epoch_floor)))) {
            s[W_BATCH_POSITION] = pos;
            pos = batch_end;
            stop = STOP_REPLAY;
            break;
        }
        if (replay) {
            have_skipped = 1;
            skipped_last = last;
        }
        pos = batch_end;
    }
    s[W_POSITION] = pos;
    s[W_BATCHES] = batches;
    s[W_HAVE_LAST] = have_last;
    s[W_LAST_OFFSET] = last_offset;
    s[W_LAST_INDEX_ENTRY] = last_index_entry;
    s[W_MAX_TIMESTAMP] = max_ts;
    s[W_OFFSET_OF_MAX] = offset_of_max;
    s[W_OI_COUNT] = oi_count;
    s[W_OI_LAST] = oi_last;
    s[W_TI_COUNT] = ti_count;
    s[W_TI_LAST_TIMESTAMP] = ti_last_ts;
    s[W_TI_LAST_OFFSET] = ti_last;
    s[W_HAVE_SKIPPED] = have_skipped;
    s[W_SKIPPED_LAST] = skipped_last;
    return stop;
}
