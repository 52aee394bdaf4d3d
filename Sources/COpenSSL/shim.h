#ifndef OAUTH_RELAY_COPENSSL_SHIM_H
#define OAUTH_RELAY_COPENSSL_SHIM_H
// OpenSSL for the TLS module. Swift cannot call function-like macros, so the few the engine
// needs are wrapped here as `static inline` functions of the same name with a `shim_` prefix;
// each does exactly what the macro does and nothing more.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/bio.h>

static inline long shim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long shim_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}

/// Client-side caching only, kept outside OpenSSL's internal store: the relay keeps the
/// sessions itself (see ClientSessionCache.swift).
static inline long shim_SSL_CTX_set_client_session_cache(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}

static inline uint64_t shim_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}

static inline int shim_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline void shim_BIO_set_retry_read(BIO *bio) {
    BIO_set_retry_read(bio);
}

static inline void shim_BIO_clear_retry_flags(BIO *bio) {
    BIO_clear_retry_flags(bio);
}

static inline long shim_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

static inline int shim_sk_X509_num(const STACK_OF(X509) *chain) {
    return sk_X509_num(chain);
}

static inline X509 *shim_sk_X509_value(const STACK_OF(X509) *chain, int index) {
    return sk_X509_value(chain, index);
}

static inline unsigned long shim_XN_FLAG_RFC2253(void) {
    return XN_FLAG_RFC2253;
}

#endif
