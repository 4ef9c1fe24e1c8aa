/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as Kafka's batches and snapshots use it.
 *
 * Three implementations behind one function, chosen once at import by what the CPU offers:
 *   - x86-64 with SSE4.2: the `crc32` instruction, 8 bytes at a time, three independent streams
 *     over long buffers (the instruction's latency is three times its throughput); the three
 *     partial CRCs are joined by "shift by N zero bytes" operators, precomputed as tables;
 *   - AArch64 with the CRC extension: the same with `crc32cx`;
 *   - anything else: a slice-by-8 table walk.
 * Check value: CRC-32C("123456789") = 0xE3069283 (tests compare all three with the crc32c package).
 */
#include "native.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <nmmintrin.h>
#define LK_X86 1
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#define LK_ARM 1
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define POLY 0x82f63b78u
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t table[8][256];
static uint32_t long_zeros[4][256];
static uint32_t short_zeros[4][256];
static int hardware; /* 0 table, 1 sse4.2, 2 armv8 */

static uint32_t gf2_times(const uint32_t *matrix, uint32_t vector) {
    uint32_t sum = 0;
    for (; vector; vector >>= 1, matrix++)
        if (vector & 1) sum ^= *matrix;
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *matrix) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(matrix, matrix[n]);
}

/* The operator that feeds `length` zero bytes to a CRC register. */
static void zeros_operator(uint32_t *even, size_t length) {
    uint32_t odd[32];
    odd[0] = POLY; /* one zero bit */
    for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two bits */
    gf2_square(odd, even); /* four bits */
    for (;;) {             /* then bytes: squaring doubles, the bits of `length` pick */
        gf2_square(even, odd);
        length >>= 1;
        if (length == 0) return;
        gf2_square(odd, even);
        length >>= 1;
        if (length == 0) break;
    }
    memcpy(even, odd, sizeof(odd));
}

static void zeros_tables(uint32_t zeros[4][256], size_t length) {
    uint32_t op[32];
    zeros_operator(op, length);
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 0; k < 4; k++) zeros[k][n] = gf2_times(op, n << (8 * k));
}

static inline uint32_t shift(uint32_t zeros[4][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        word ^= crc;
        crc = table[7][word & 0xff] ^ table[6][(word >> 8) & 0xff] ^ table[5][(word >> 16) & 0xff] ^
              table[4][(word >> 24) & 0xff] ^ table[3][(word >> 32) & 0xff] ^ table[2][(word >> 40) & 0xff] ^
              table[1][(word >> 48) & 0xff] ^ table[0][word >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(LK_X86)
#define HW_ATTR __attribute__((target("sse4.2")))
#define HW_U8(c, b) _mm_crc32_u8((c), (b))
#define HW_U64(c, w) ((uint32_t)_mm_crc32_u64((c), (w)))
#elif defined(LK_ARM)
#define HW_ATTR __attribute__((target("+crc")))
#define HW_U8(c, b) __crc32cb((c), (b))
#define HW_U64(c, w) __crc32cd((c), (w))
#endif

#ifdef HW_ATTR
static inline HW_ATTR uint64_t load64(const uint8_t *p) {
    uint64_t word;
    memcpy(&word, p, 8);
    return word;
}

/* Three streams over blocks of `block` bytes while 3 blocks remain; joined by shifting. */
#define THREE_STREAMS(block, zeros)                                                     \
    while (n >= 3 * (block)) {                                                          \
        uint32_t crc1 = 0, crc2 = 0;                                                    \
        const uint8_t *stop = p + (block);                                              \
        do {                                                                            \
            crc0 = HW_U64(crc0, load64(p));                                             \
            crc1 = HW_U64(crc1, load64(p + (block)));                                   \
            crc2 = HW_U64(crc2, load64(p + 2 * (block)));                               \
            p += 8;                                                                     \
        } while (p < stop);                                                             \
        crc0 = shift(zeros, crc0) ^ crc1;                                               \
        crc0 = shift(zeros, crc0) ^ crc2;                                               \
        p += 2 * (block);                                                               \
        n -= 3 * (block);                                                               \
    }

/* Unaligned 8-byte loads cost nothing extra on either CPU: no byte-wise prologue (a batch's CRC
 * range starts at an odd position, and the prologue was a fifth of a small batch's CRC time). */
static HW_ATTR uint32_t crc32c_hardware(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t crc0 = ~crc;
    THREE_STREAMS(LONG_BLOCK, long_zeros)
    THREE_STREAMS(SHORT_BLOCK, short_zeros)
    while (n >= 8) {
        crc0 = HW_U64(crc0, load64(p));
        p += 8;
        n -= 8;
    }
    while (n--) crc0 = HW_U8(crc0, *p++);
    return ~crc0;
}
#endif

void lk_crc32c_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ POLY : crc >> 1;
        table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++) table[k][n] = table[0][table[k - 1][n] & 0xff] ^ (table[k - 1][n] >> 8);
    zeros_tables(long_zeros, LONG_BLOCK);
    zeros_tables(short_zeros, SHORT_BLOCK);
    hardware = 0;
#if defined(LK_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) hardware = 1;
#elif defined(LK_ARM)
    if (getauxval(AT_HWCAP) & HWCAP_CRC32) hardware = 2;
#endif
    {
        const char *force = getenv("LOGKEEPER_CRC32C_TABLE"); /* tests check the fallback too */
        if (force && force[0] == '1') hardware = 0;
    }
}

const char *lk_crc32c_implementation(void) { return hardware == 1 ? "sse4.2" : hardware == 2 ? "armv8" : "table"; }

uint32_t lk_crc32c(uint32_t crc, const uint8_t *p, size_t n) {
#ifdef HW_ATTR
    if (hardware) return crc32c_hardware(crc, p, n);
#endif
    return crc32c_table(crc, p, n);
}
