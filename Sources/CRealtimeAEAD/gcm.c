#include "realtime_aead.h"
#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>

#define TARGET __attribute__((target("aes,pclmul,ssse3,sse4.1,avx,avx2,vaes,vpclmulqdq")))

int realtime_gcm_available(void) {
    // Any thread may ask first; they all compute the same answer (atomics keep TSan and the model honest).
    static int cached = -1;
    int answer = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (answer < 0) {
        __builtin_cpu_init();
        answer = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("aes")
            && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("vaes")
            && __builtin_cpu_supports("vpclmulqdq");
        __atomic_store_n(&cached, answer, __ATOMIC_RELAXED);
    }
    return answer;
}

// Layout of the storage: round keys [0, 15), then H^1 .. H^16 (byte-reflected). Stored and loaded
// unaligned: Swift may place the struct anywhere.
#define POWERS 16
TARGET static void load_key(const realtime_gcm_key *key, __m128i *rk, __m128i *power) {
    for (int i = 0; i < 15; i++) rk[i] = _mm_loadu_si128((const __m128i *)(key->storage + 16 * i));
    for (int i = 0; i < POWERS; i++) power[i] = _mm_loadu_si128((const __m128i *)(key->storage + 16 * (15 + i)));
}

TARGET static __m128i expand128_step(__m128i key, __m128i assist) {
    assist = _mm_shuffle_epi32(assist, 0xff);
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, assist);
}

TARGET static __m128i expand256_odd(__m128i previous, __m128i even) {
    // The words of an odd round key mix SubWord (no rotation, no round constant) of the last even one.
    __m128i assist = _mm_shuffle_epi32(_mm_aeskeygenassist_si128(even, 0x00), 0xaa);
    previous = _mm_xor_si128(previous, _mm_slli_si128(previous, 4));
    previous = _mm_xor_si128(previous, _mm_slli_si128(previous, 4));
    previous = _mm_xor_si128(previous, _mm_slli_si128(previous, 4));
    return _mm_xor_si128(previous, assist);
}

#define EXPAND128(i, rcon) rk[i] = expand128_step(rk[i - 1], _mm_aeskeygenassist_si128(rk[i - 1], rcon))
#define EXPAND256(i, rcon) \
    rk[i] = expand128_step(rk[i - 2], _mm_aeskeygenassist_si128(rk[i - 1], rcon)); \
    if (i + 1 < 15) rk[i + 1] = expand256_odd(rk[i - 1], rk[i])

// Multiplication in GF(2^128) of two byte-reflected elements (carry-less product, shift left by one
// for the bit reflection, reduction by x^128 + x^7 + x^2 + x + 1), from the published Intel method.
TARGET static __m128i reduce(__m128i low, __m128i high) {
    __m128i carry_low = _mm_srli_epi32(low, 31), carry_high = _mm_srli_epi32(high, 31);
    low = _mm_slli_epi32(low, 1);
    high = _mm_slli_epi32(high, 1);
    __m128i across = _mm_srli_si128(carry_low, 12);
    carry_high = _mm_slli_si128(carry_high, 4);
    carry_low = _mm_slli_si128(carry_low, 4);
    low = _mm_or_si128(low, carry_low);
    high = _mm_or_si128(_mm_or_si128(high, carry_high), across);
    __m128i a = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(low, 31), _mm_slli_epi32(low, 30)), _mm_slli_epi32(low, 25));
    __m128i b = _mm_srli_si128(a, 4);
    low = _mm_xor_si128(low, _mm_slli_si128(a, 12));
    __m128i c = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(low, 1), _mm_srli_epi32(low, 2)), _mm_srli_epi32(low, 7));
    c = _mm_xor_si128(c, b);
    low = _mm_xor_si128(low, c);
    return _mm_xor_si128(high, low);
}

TARGET static __m128i gf_multiply(__m128i a, __m128i b) {
    __m128i low = _mm_clmulepi64_si128(a, b, 0x00);
    __m128i high = _mm_clmulepi64_si128(a, b, 0x11);
    __m128i middle = _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x10), _mm_clmulepi64_si128(a, b, 0x01));
    low = _mm_xor_si128(low, _mm_slli_si128(middle, 8));
    high = _mm_xor_si128(high, _mm_srli_si128(middle, 8));
    return reduce(low, high);
}

TARGET static __m128i byte_reverse_mask(void) {
    return _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

TARGET static __m128i encrypt_block(const __m128i *rk, int rounds, __m128i block) {
    block = _mm_xor_si128(block, rk[0]);
    for (int round = 1; round < rounds; round++) block = _mm_aesenc_si128(block, rk[round]);
    return _mm_aesenclast_si128(block, rk[rounds]);
}

TARGET int realtime_gcm_init(realtime_gcm_key *key, const uint8_t *raw, size_t length) {
    if (!realtime_gcm_available() || (length != 16 && length != 32)) return 0;
    memset(key, 0, sizeof(*key));
    __m128i rk[15] = {0};
    rk[0] = _mm_loadu_si128((const __m128i *)raw);
    if (length == 16) {
        key->rounds = 10;
        EXPAND128(1, 0x01); EXPAND128(2, 0x02); EXPAND128(3, 0x04); EXPAND128(4, 0x08); EXPAND128(5, 0x10);
        EXPAND128(6, 0x20); EXPAND128(7, 0x40); EXPAND128(8, 0x80); EXPAND128(9, 0x1b); EXPAND128(10, 0x36);
    } else {
        key->rounds = 14;
        rk[1] = _mm_loadu_si128((const __m128i *)(raw + 16));
        EXPAND256(2, 0x01); EXPAND256(4, 0x02); EXPAND256(6, 0x04); EXPAND256(8, 0x08);
        EXPAND256(10, 0x10); EXPAND256(12, 0x20); EXPAND256(14, 0x40);
    }
    __m128i h = _mm_shuffle_epi8(encrypt_block(rk, key->rounds, _mm_setzero_si128()), byte_reverse_mask());
    __m128i power[POWERS];
    power[0] = h;
    for (int i = 1; i < POWERS; i++) power[i] = gf_multiply(power[i - 1], h);
    for (int i = 0; i < 15; i++) _mm_storeu_si128((__m128i *)(key->storage + 16 * i), rk[i]);
    for (int i = 0; i < POWERS; i++) _mm_storeu_si128((__m128i *)(key->storage + 16 * (15 + i)), power[i]);
    return 1;
}

void realtime_gcm_wipe(realtime_gcm_key *key) {
    volatile unsigned char *bytes = (volatile unsigned char *)key;
    for (size_t i = 0; i < sizeof(*key); i++) bytes[i] = 0;
}

// Folds one 16-byte block (already byte-reflected) into the running hash.
TARGET static __m128i ghash_block(__m128i hash, __m128i block, __m128i h) {
    return gf_multiply(_mm_xor_si128(hash, block), h);
}

TARGET static __m128i counter_block(__m128i nonce_block, uint32_t counter) {
    return _mm_insert_epi32(nonce_block, (int)__builtin_bswap32(counter), 3);
}

TARGET int realtime_gcm_open(const realtime_gcm_key *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                             uint8_t *data, size_t length, const uint8_t *tag) {
    __m128i rk[15], power[POWERS];
    load_key(key, rk, power);
    const int rounds = key->rounds;
    const __m128i reverse = byte_reverse_mask();
    const __m256i reverse2 = _mm256_broadcastsi128_si256(reverse);
    unsigned char padded[16];

    __m128i nonce_block = _mm_setzero_si128();
    memcpy(&nonce_block, nonce, 12);
    __m128i hash = _mm_setzero_si128();
    for (size_t offset = 0; offset < aad_length; offset += 16) {
        size_t take = aad_length - offset < 16 ? aad_length - offset : 16;
        memset(padded, 0, 16);
        memcpy(padded, aad + offset, take);
        hash = ghash_block(hash, _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)padded), reverse), power[0]);
    }

    __m256i keys2[15];
    for (int i = 0; i <= rounds; i++) keys2[i] = _mm256_broadcastsi128_si256(rk[i]);
    // H powers for the eight blocks of a chunk: the first pair meets H^8 and H^7, the last H^2 and H^1.
    const __m256i p87 = _mm256_set_m128i(power[6], power[7]);
    const __m256i p65 = _mm256_set_m128i(power[4], power[5]);
    const __m256i p43 = _mm256_set_m128i(power[2], power[3]);
    const __m256i p21 = _mm256_set_m128i(power[0], power[1]);

    uint32_t counter = 2;  // 1 is for the tag
    size_t offset = 0;

    // Sixteen blocks a turn: eight independent 256-bit AES streams keep both AES units busy despite
    // their latency. Counters live byte-reversed so one 32-bit add advances two of them (mod 2^32, as
    // GCM's inc32 does).
    if (length >= 256) {
        __m256i wide_powers[8];  // pair j meets H^(16-2j) and H^(15-2j)
        for (int j = 0; j < 8; j++) wide_powers[j] = _mm256_set_m128i(power[14 - 2 * j], power[15 - 2 * j]);
        __m256i counters = _mm256_set_m128i(_mm_shuffle_epi8(counter_block(nonce_block, counter + 1), reverse),
                                            _mm_shuffle_epi8(counter_block(nonce_block, counter), reverse));
        const __m256i two = _mm256_set_epi32(0, 0, 0, 2, 0, 0, 0, 2);
        for (; length - offset >= 256; offset += 256) {
            uint8_t *chunk = data + offset;
            __m256i stream[8];
            for (int j = 0; j < 8; j++) {
                stream[j] = _mm256_xor_si256(_mm256_shuffle_epi8(counters, reverse2), keys2[0]);
                counters = _mm256_add_epi32(counters, two);
            }
            __m256i low = _mm256_setzero_si256(), high = _mm256_setzero_si256(), middle = _mm256_setzero_si256();
            for (int j = 0; j < 8; j++) {
                __m256i x = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(chunk + 32 * j)), reverse2);
                if (j == 0) x = _mm256_xor_si256(x, _mm256_zextsi128_si256(hash));
                low = _mm256_xor_si256(low, _mm256_clmulepi64_epi128(x, wide_powers[j], 0x00));
                high = _mm256_xor_si256(high, _mm256_clmulepi64_epi128(x, wide_powers[j], 0x11));
                middle = _mm256_xor_si256(middle, _mm256_xor_si256(_mm256_clmulepi64_epi128(x, wide_powers[j], 0x01),
                                                                   _mm256_clmulepi64_epi128(x, wide_powers[j], 0x10)));
                stream[j] = _mm256_aesenc_epi128(stream[j], keys2[1]);
            }
            for (int round = 2; round < rounds; round++) {
                for (int j = 0; j < 8; j++) stream[j] = _mm256_aesenc_epi128(stream[j], keys2[round]);
            }
            for (int j = 0; j < 8; j++) {
                __m256i text = _mm256_loadu_si256((const __m256i *)(chunk + 32 * j));
                _mm256_storeu_si256((__m256i *)(chunk + 32 * j),
                                    _mm256_xor_si256(text, _mm256_aesenclast_epi128(stream[j], keys2[rounds])));
            }
            __m128i low1 = _mm_xor_si128(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
            __m128i high1 = _mm_xor_si128(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1));
            __m128i middle1 = _mm_xor_si128(_mm256_castsi256_si128(middle), _mm256_extracti128_si256(middle, 1));
            low1 = _mm_xor_si128(low1, _mm_slli_si128(middle1, 8));
            high1 = _mm_xor_si128(high1, _mm_srli_si128(middle1, 8));
            hash = reduce(low1, high1);
            counter += 16;
        }
    }
    for (; length - offset >= 128; offset += 128) {
        uint8_t *chunk = data + offset;
        __m256i c0 = _mm256_loadu_si256((const __m256i *)chunk);
        __m256i c1 = _mm256_loadu_si256((const __m256i *)(chunk + 32));
        __m256i c2 = _mm256_loadu_si256((const __m256i *)(chunk + 64));
        __m256i c3 = _mm256_loadu_si256((const __m256i *)(chunk + 96));

        // Keystream for eight counters, two per register.
        __m256i k0 = _mm256_set_m128i(counter_block(nonce_block, counter + 1), counter_block(nonce_block, counter));
        __m256i k1 = _mm256_set_m128i(counter_block(nonce_block, counter + 3), counter_block(nonce_block, counter + 2));
        __m256i k2 = _mm256_set_m128i(counter_block(nonce_block, counter + 5), counter_block(nonce_block, counter + 4));
        __m256i k3 = _mm256_set_m128i(counter_block(nonce_block, counter + 7), counter_block(nonce_block, counter + 6));
        counter += 8;
        k0 = _mm256_xor_si256(k0, keys2[0]);
        k1 = _mm256_xor_si256(k1, keys2[0]);
        k2 = _mm256_xor_si256(k2, keys2[0]);
        k3 = _mm256_xor_si256(k3, keys2[0]);

        // The hash of the ciphertext, interleaved with the AES rounds: products summed unreduced.
        __m256i x0 = _mm256_shuffle_epi8(c0, reverse2);
        x0 = _mm256_xor_si256(x0, _mm256_zextsi128_si256(hash));
        __m256i x1 = _mm256_shuffle_epi8(c1, reverse2);
        __m256i x2 = _mm256_shuffle_epi8(c2, reverse2);
        __m256i x3 = _mm256_shuffle_epi8(c3, reverse2);
        __m256i low = _mm256_clmulepi64_epi128(x0, p87, 0x00);
        __m256i high = _mm256_clmulepi64_epi128(x0, p87, 0x11);
        __m256i middle = _mm256_xor_si256(_mm256_clmulepi64_epi128(x0, p87, 0x01), _mm256_clmulepi64_epi128(x0, p87, 0x10));
        for (int round = 1; round < 4; round++) {
            k0 = _mm256_aesenc_epi128(k0, keys2[round]); k1 = _mm256_aesenc_epi128(k1, keys2[round]);
            k2 = _mm256_aesenc_epi128(k2, keys2[round]); k3 = _mm256_aesenc_epi128(k3, keys2[round]);
        }
        low = _mm256_xor_si256(low, _mm256_clmulepi64_epi128(x1, p65, 0x00));
        high = _mm256_xor_si256(high, _mm256_clmulepi64_epi128(x1, p65, 0x11));
        middle = _mm256_xor_si256(middle, _mm256_xor_si256(_mm256_clmulepi64_epi128(x1, p65, 0x01), _mm256_clmulepi64_epi128(x1, p65, 0x10)));
        for (int round = 4; round < 7; round++) {
            k0 = _mm256_aesenc_epi128(k0, keys2[round]); k1 = _mm256_aesenc_epi128(k1, keys2[round]);
            k2 = _mm256_aesenc_epi128(k2, keys2[round]); k3 = _mm256_aesenc_epi128(k3, keys2[round]);
        }
        low = _mm256_xor_si256(low, _mm256_clmulepi64_epi128(x2, p43, 0x00));
        high = _mm256_xor_si256(high, _mm256_clmulepi64_epi128(x2, p43, 0x11));
        middle = _mm256_xor_si256(middle, _mm256_xor_si256(_mm256_clmulepi64_epi128(x2, p43, 0x01), _mm256_clmulepi64_epi128(x2, p43, 0x10)));
        low = _mm256_xor_si256(low, _mm256_clmulepi64_epi128(x3, p21, 0x00));
        high = _mm256_xor_si256(high, _mm256_clmulepi64_epi128(x3, p21, 0x11));
        middle = _mm256_xor_si256(middle, _mm256_xor_si256(_mm256_clmulepi64_epi128(x3, p21, 0x01), _mm256_clmulepi64_epi128(x3, p21, 0x10)));
        for (int round = 7; round < rounds; round++) {
            k0 = _mm256_aesenc_epi128(k0, keys2[round]); k1 = _mm256_aesenc_epi128(k1, keys2[round]);
            k2 = _mm256_aesenc_epi128(k2, keys2[round]); k3 = _mm256_aesenc_epi128(k3, keys2[round]);
        }
        k0 = _mm256_aesenclast_epi128(k0, keys2[rounds]); k1 = _mm256_aesenclast_epi128(k1, keys2[rounds]);
        k2 = _mm256_aesenclast_epi128(k2, keys2[rounds]); k3 = _mm256_aesenclast_epi128(k3, keys2[rounds]);
        _mm256_storeu_si256((__m256i *)chunk, _mm256_xor_si256(c0, k0));
        _mm256_storeu_si256((__m256i *)(chunk + 32), _mm256_xor_si256(c1, k1));
        _mm256_storeu_si256((__m256i *)(chunk + 64), _mm256_xor_si256(c2, k2));
        _mm256_storeu_si256((__m256i *)(chunk + 96), _mm256_xor_si256(c3, k3));

        // Fold the two lanes, then one reduction for the eight blocks.
        __m128i low1 = _mm_xor_si128(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
        __m128i high1 = _mm_xor_si128(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1));
        __m128i middle1 = _mm_xor_si128(_mm256_castsi256_si128(middle), _mm256_extracti128_si256(middle, 1));
        low1 = _mm_xor_si128(low1, _mm_slli_si128(middle1, 8));
        high1 = _mm_xor_si128(high1, _mm_srli_si128(middle1, 8));
        hash = reduce(low1, high1);
    }
    for (; offset < length; offset += 16) {
        size_t take = length - offset < 16 ? length - offset : 16;
        memset(padded, 0, 16);
        memcpy(padded, data + offset, take);
        __m128i block = _mm_loadu_si128((const __m128i *)padded);
        hash = ghash_block(hash, _mm_shuffle_epi8(block, reverse), power[0]);
        __m128i plain = _mm_xor_si128(block, encrypt_block(rk, rounds, counter_block(nonce_block, counter)));
        counter += 1;
        _mm_storeu_si128((__m128i *)padded, plain);
        memcpy(data + offset, padded, take);
    }
    // The lengths block: bits of additional data, then bits of ciphertext, both big-endian.
    __m128i lengths = _mm_set_epi64x((long long)((uint64_t)aad_length * 8), (long long)((uint64_t)length * 8));
    hash = ghash_block(hash, lengths, power[0]);
    __m128i expected = _mm_xor_si128(_mm_shuffle_epi8(hash, reverse), encrypt_block(rk, rounds, counter_block(nonce_block, 1)));
    __m128i given = _mm_loadu_si128((const __m128i *)tag);
    __m128i difference = _mm_xor_si128(expected, given);
    memset(padded, 0, 16);
    return _mm_testz_si128(difference, difference);
}

#else
int realtime_gcm_available(void) { return 0; }
int realtime_gcm_init(realtime_gcm_key *key, const uint8_t *raw, size_t length) {
    (void)key; (void)raw; (void)length;
    return 0;
}
int realtime_gcm_open(const realtime_gcm_key *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                      uint8_t *data, size_t length, const uint8_t *tag) {
    (void)key; (void)nonce; (void)aad; (void)aad_length; (void)data; (void)length; (void)tag;
    return 0;
}
void realtime_gcm_wipe(realtime_gcm_key *key) {
    volatile unsigned char *bytes = (volatile unsigned char *)key;
    for (size_t i = 0; i < sizeof(*key); i++) bytes[i] = 0;
}
#endif
