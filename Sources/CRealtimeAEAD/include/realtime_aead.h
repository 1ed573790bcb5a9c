#ifndef REALTIME_AEAD_H
#define REALTIME_AEAD_H
#include <stddef.h>
#include <stdint.h>

// AES-GCM opening (decrypt + verify) for TLS records on x86-64 CPUs with VAES and VPCLMULQDQ: two
// blocks per 256-bit instruction where OpenSSL 3.0 processes one. Elsewhere `available` is 0 and the
// caller uses OpenSSL's EVP.

/// Expanded AES key and GHASH powers; opaque.
typedef struct {
    unsigned char storage[15 * 16 + 16 * 16];
    int rounds;
} realtime_gcm_key;

/// 1 when this CPU (and OS) can run the fast path.
int realtime_gcm_available(void);

/// Expands a 16- or 32-byte AES key; returns 0 for any other length or when unavailable.
int realtime_gcm_init(realtime_gcm_key *key, const uint8_t *raw, size_t length);

/// Decrypts `length` bytes in place with the 12-byte `nonce` and `aad`, and checks `tag`: 1 when it
/// matches (in constant time). On 0 the buffer holds unauthenticated bytes that must not be used.
int realtime_gcm_open(const realtime_gcm_key *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                      uint8_t *data, size_t length, const uint8_t *tag);

/// Wipes a key.
void realtime_gcm_wipe(realtime_gcm_key *key);
#endif
