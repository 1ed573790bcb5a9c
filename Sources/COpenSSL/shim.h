#ifndef REALTIME_COPENSSL_SHIM_H
#define REALTIME_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/pem.h>

// Function-like macros do not import into Swift; these wrappers expose them.
static inline long realtime_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int realtime_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
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

#ifdef __linux__
// The POSIX event loop (Linux only, where this module is linked) needs epoll and eventfd, which the
// Glibc module does not export.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

// Names the calling thread (at most 15 bytes are kept); prctl is variadic, so Swift cannot call it.
static inline int realtime_set_current_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
#endif
#endif
