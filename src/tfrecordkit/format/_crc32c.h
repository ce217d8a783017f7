/* CRC-32C (Castagnoli) and TFRecord's masked form: SSE4.2 instructions where the CPU has
 * them, an 8-table slice otherwise. Shared by the Example codec (_codec.c) and the
 * TensorFlow op reading records by offset (readers/tf_data/_read_frames.cc); call
 * crc_setup() once before masked_crc(). */
#ifndef TFRECORDKIT_CRC32C_H
#define TFRECORDKIT_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint32_t crc_table[8][256];

static void crc_table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc; /* little-endian */
        crc = crc_table[7][w & 0xFF] ^ crc_table[6][(w >> 8) & 0xFF] ^
              crc_table[5][(w >> 16) & 0xFF] ^ crc_table[4][(w >> 24) & 0xFF] ^
              crc_table[3][(w >> 32) & 0xFF] ^ crc_table[2][(w >> 40) & 0xFF] ^
              crc_table[1][(w >> 48) & 0xFF] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SSE42_CRC 1
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
                                                              size_t n) {
    uint64_t c = ~crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
#endif

static int use_hw_crc = 0;

static void crc_setup(void) {
    crc_table_init();
#ifdef HAVE_SSE42_CRC
    __builtin_cpu_init();
    use_hw_crc = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint32_t masked_crc(const uint8_t *p, size_t n) {
#ifdef HAVE_SSE42_CRC
    uint32_t crc = use_hw_crc ? crc32c_hw(0, p, n) : crc32c_table(0, p, n);
#else
    uint32_t crc = crc32c_table(0, p, n);
#endif
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#endif
