/* Kafka's SkimpyOffsetMap over a buffer the Python side owns (cleaner/offset_map.py documents the
 * layout: 24-byte slots of MD5 + big-endian int64 offset, probing, the superseded bits).
 * Probing: 13 probes from the hash's bytes, then `slots` linear probes from the last one's slot, so
 * every slot is visited before it gives up (a full map and an absent key), where the Python
 * reference raises too.
 */
#include "native.h"

#define ENTRY 24

int lk_map_position(const lk_map *map, const uint8_t digest[16], int64_t *position) {
    const int64_t slots = map->state[M_SLOTS];
    static const uint8_t empty[ENTRY];
    for (int64_t attempt = 0; attempt <= slots + 12; attempt++) {
        /* |int32| first, then + attempt - 12: the linear probes are `slots` consecutive integers >= 0 */
        int64_t probe = (int32_t)lk_be32(digest + (attempt <= 12 ? attempt : 12));
        probe = (probe < 0 ? -probe : probe) + (attempt <= 12 ? 0 : attempt - 12);
        int64_t p = probe % slots * ENTRY;
        const uint8_t *slot = map->slots + p;
        if (memcmp(slot, digest, 16) == 0) {
            *position = p;
            return 1;
        }
        if (memcmp(slot, empty, ENTRY) == 0) {
            *position = p;
            return 0;
        }
    }
    return -1;
}

static void supersede(lk_map *map, int64_t offset) {
    int64_t *s = map->state;
    if (!s[M_SUPERSEDED_VALID]) return;
    int64_t bit;
    if (__builtin_sub_overflow(offset, s[M_FIRST_PUT], &bit) || bit < 0 || (bit >> 3) + 1 > s[M_BITS_BYTES]) {
        s[M_SUPERSEDED_VALID] = 0; /* over its share: the cleaner looks keys up instead */
        return;
    }
    map->bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));
}

int lk_map_put(lk_map *map, const uint8_t *key, size_t key_length, int64_t offset) {
    int64_t *s = map->state, position;
    uint8_t digest[16];
    lk_md5(key, key_length, digest);
    int found = lk_map_position(map, digest, &position);
    if (found < 0) return -1;
    if (offset <= s[M_LAST_PUT]) { /* not increasing: the bits could not be trusted */
        s[M_SUPERSEDED_VALID] = 0;
        s[M_ORDERED] = 0;
    }
    s[M_LAST_PUT] = offset;
    if (found) {
        supersede(map, (int64_t)lk_be64(map->slots + position + 16));
    } else {
        if (!s[M_ENTRIES]) s[M_FIRST_PUT] = offset;
        memcpy(map->slots + position, digest, 16);
        s[M_ENTRIES]++;
    }
    lk_put_be64(map->slots + position + 16, (uint64_t)offset);
    return 0;
}

int lk_map_get(const lk_map *map, const uint8_t *key, size_t key_length, int64_t *offset) {
    uint8_t digest[16];
    int64_t position;
    lk_md5(key, key_length, digest);
    int found = lk_map_position(map, digest, &position);
    if (found < 0) return -1;
    *offset = found ? (int64_t)lk_be64(map->slots + position + 16) : -1;
    return 0;
}

int lk_map_superseded(const lk_map *map, int64_t offset) {
    const int64_t *s = map->state;
    int64_t bit;
    if (!s[M_SUPERSEDED_VALID] || !s[M_ENTRIES]) return 0;
    if (__builtin_sub_overflow(offset, s[M_FIRST_PUT], &bit) || bit < 0 || (bit >> 3) >= s[M_BITS_BYTES]) return 0;
    return (map->bits[bit >> 3] >> (bit & 7)) & 1;
}
