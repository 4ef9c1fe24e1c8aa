/* MD5 (RFC 1321), the hash of Kafka's SkimpyOffsetMap (`MessageDigest.getInstance("MD5")`).
 *
 * Keys are short (tens of bytes), so the whole message is hashed in one call: full 64-byte
 * blocks straight from the key, then the padded tail (0x80, zeros, the bit length little-endian)
 * in one or two blocks on the stack. Tests compare it with hashlib's MD5.
 */
#include "native.h"

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static inline uint32_t rotl(uint32_t x, int c) { return (x << c) | (x >> (32 - c)); }
static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#define STEP(f, a, b, c, d, m, k, s) (a) = (b) + rotl((a) + (f) + (m) + (k), (s))

static void block(uint32_t h[4], const uint8_t *p) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++) m[i] = le32(p + 4 * i);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 16; i += 4) {
        STEP((b & c) | (~b & d), a, b, c, d, m[i], K[i], 7);
        STEP((a & b) | (~a & c), d, a, b, c, m[i + 1], K[i + 1], 12);
        STEP((d & a) | (~d & b), c, d, a, b, m[i + 2], K[i + 2], 17);
        STEP((c & d) | (~c & a), b, c, d, a, m[i + 3], K[i + 3], 22);
    }
    for (int i = 16; i < 32; i += 4) {
        STEP((b & d) | (c & ~d), a, b, c, d, m[(5 * i + 1) & 15], K[i], 5);
        STEP((a & c) | (b & ~c), d, a, b, c, m[(5 * i + 6) & 15], K[i + 1], 9);
        STEP((d & b) | (a & ~b), c, d, a, b, m[(5 * i + 11) & 15], K[i + 2], 14);
        STEP((c & a) | (d & ~a), b, c, d, a, m[(5 * i + 16) & 15], K[i + 3], 20);
    }
    for (int i = 32; i < 48; i += 4) {
        STEP(b ^ c ^ d, a, b, c, d, m[(3 * i + 5) & 15], K[i], 4);
        STEP(a ^ b ^ c, d, a, b, c, m[(3 * i + 8) & 15], K[i + 1], 11);
        STEP(d ^ a ^ b, c, d, a, b, m[(3 * i + 11) & 15], K[i + 2], 16);
        STEP(c ^ d ^ a, b, c, d, a, m[(3 * i + 14) & 15], K[i + 3], 23);
    }
    for (int i = 48; i < 64; i += 4) {
        STEP(c ^ (b | ~d), a, b, c, d, m[(7 * i) & 15], K[i], 6);
        STEP(b ^ (a | ~c), d, a, b, c, m[(7 * i + 7) & 15], K[i + 1], 10);
        STEP(a ^ (d | ~b), c, d, a, b, m[(7 * i + 14) & 15], K[i + 2], 15);
        STEP(d ^ (c | ~a), b, c, d, a, m[(7 * i + 21) & 15], K[i + 3], 21);
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void lk_md5(const uint8_t *p, size_t n, uint8_t digest[16]) {
    uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    uint64_t bits = (uint64_t)n * 8;
    while (n >= 64) {
        block(h, p);
        p += 64;
        n -= 64;
    }
    uint8_t tail[128];
    memset(tail, 0, sizeof(tail));
    if (n) memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t blocks = n + 9 > 64 ? 2 : 1;
    for (int i = 0; i < 8; i++) tail[blocks * 64 - 8 + i] = (uint8_t)(bits >> (8 * i));
    for (size_t i = 0; i < blocks; i++) block(h, tail + 64 * i);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) digest[4 * i + k] = (uint8_t)(h[i] >> (8 * k));
}
