#ifndef REALTIME_COPENSSL_SHIM_H
#define REALTIME_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <string.h>

// Function-like macros do not import into Swift; these wrappers expose them.
static inline long realtime_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int realtime_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int realtime_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long realtime_SSL_set_mode(SSL *ssl, long mode) {
    return SSL_set_mode(ssl, mode);
}
static inline long realtime_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline long realtime_BIO_ctrl_pending(BIO *bio) {
    return (long)BIO_ctrl_pending(bio);
}
static inline long realtime_BIO_set_mem_eof_return(BIO *bio, int value) {
    return BIO_set_mem_eof_return(bio, value);
}
static inline int realtime_SSL_CTX_set_options(SSL_CTX *ctx, unsigned long options) {
    return (int)SSL_CTX_set_options(ctx, options);
}
static inline long realtime_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long realtime_SSL_CTX_set_read_ahead(SSL_CTX *ctx, long yes) {
    return SSL_CTX_set_read_ahead(ctx, yes);
}
static inline long realtime_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
static inline long realtime_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return SSL_CTX_add1_chain_cert(ctx, cert);
}

// The TLS 1.3 read direction can be taken over from OpenSSL at a record boundary (TLSEngine's direct
// reader). That needs the peer's application traffic secret, which OpenSSL 3.0 hands out only through
// the key-log callback, and the number of records already read under it (the next read sequence number),
// counted through the message callback. The state lives in the SSL's ex_data slot 0 (SSL_set_app_data).
typedef struct {
    unsigned char secret[64];
    int secret_length;                         // 0 until the secret is captured
    unsigned long long records_under_secret;   // records read since it was installed
    int stale;                                 // OpenSSL itself read a KeyUpdate: the secret is old
    char label[32];                            // "SERVER_TRAFFIC_SECRET_0" on a client
} realtime_tls_read_secret;

static inline int realtime_hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static inline void realtime_tls_keylog(const SSL *ssl, const char *line) {
    realtime_tls_read_secret *state = (realtime_tls_read_secret *)SSL_get_ex_data(ssl, 0);
    if (state == NULL || state->label[0] == 0) return;
    size_t label_length = strlen(state->label);
    if (strncmp(line, state->label, label_length) != 0 || line[label_length] != ' ') return;
    const char *hex = strrchr(line, ' ');  // "<label> <client random> <secret>"
    if (hex == NULL) return;
    hex += 1;
    size_t digits = strlen(hex);
    if (digits % 2 != 0 || digits / 2 > sizeof(state->secret)) return;
    for (size_t i = 0; i < digits / 2; i++) {
        int high = realtime_hex_value(hex[2 * i]), low = realtime_hex_value(hex[2 * i + 1]);
        if (high < 0 || low < 0) { OPENSSL_cleanse(state->secret, sizeof(state->secret)); return; }
        state->secret[i] = (unsigned char)(high * 16 + low);
    }
    state->secret_length = (int)(digits / 2);
    state->records_under_secret = 0;
}

static inline void realtime_tls_message(int write_p, int version, int content_type, const void *buf,
                                        size_t len, SSL *ssl, void *arg) {
    (void)version; (void)arg;
    realtime_tls_read_secret *state = (realtime_tls_read_secret *)SSL_get_ex_data(ssl, 0);
    if (state == NULL || write_p != 0 || state->secret_length == 0) return;
    if (content_type == SSL3_RT_HEADER) {
        state->records_under_secret += 1;
    } else if (content_type == SSL3_RT_HANDSHAKE && len > 0 && ((const unsigned char *)buf)[0] == 24) {
        state->stale = 1;  // KeyUpdate: OpenSSL moved to a secret we never saw
    }
}

/// Starts capturing `label`'s secret for `ssl` into `state` (owned by the caller, alive as long as `ssl`).
static inline int realtime_tls_capture_read_secret(SSL *ssl, realtime_tls_read_secret *state, const char *label) {
    memset(state, 0, sizeof(*state));
    strncpy(state->label, label, sizeof(state->label) - 1);
    if (SSL_set_ex_data(ssl, 0, state) != 1) return 0;
    SSL_set_msg_callback(ssl, realtime_tls_message);
    return 1;
}

/// Stops the capture and wipes the secret.
static inline void realtime_tls_stop_capture(SSL *ssl, realtime_tls_read_secret *state) {
    SSL_set_msg_callback(ssl, NULL);
    SSL_set_ex_data(ssl, 0, NULL);
    OPENSSL_cleanse(state, sizeof(*state));
}

static inline void realtime_SSL_CTX_capture_secrets(SSL_CTX *ctx) {
    SSL_CTX_set_keylog_callback(ctx, realtime_tls_keylog);
}

static inline int realtime_EVP_CIPHER_CTX_set_tag(EVP_CIPHER_CTX *ctx, void *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, length, tag);
}

#endif
