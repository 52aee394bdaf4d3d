#ifndef OAUTH_RELAY_COPENSSL_SHIM_H
#define OAUTH_RELAY_COPENSSL_SHIM_H
// OpenSSL for the TLS module (the TLS engine) and the Crypto module (the primitives JOSE, OAuth2
// and the token store use). Swift cannot call function-like macros, so the few those modules need
// are wrapped here as `static inline` functions of the same name with a `shim_` prefix; each does
// exactly what the macro does and nothing more.
#include <openssl/ssl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/bio.h>
#include <openssl/sha.h>

/// SHA-256 of `count` bytes into `digest` (32 bytes) through OpenSSL's low-level functions:
/// deprecated since 3.0 in favour of EVP, but the same code EVP's default provider runs (its
/// assembly, with the CPU's SHA extensions), without the context EVP_Digest allocates, sets up
/// and frees for every call: half the cost of a digest of a few hundred bytes, which an inbound
/// route makes of its caller's token on every request. The context held part of the input: it
/// is wiped. Returns 1, or 0 on failure.
static inline int shim_SHA256_oneshot(const void *data, size_t count, unsigned char *digest) {
    SHA256_CTX context;
    int ok = SHA256_Init(&context) && SHA256_Update(&context, data, count) && SHA256_Final(digest, &context);
    OPENSSL_cleanse(&context, sizeof context);
    return ok;
}

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

/// Parameter pushes for `EVP_PKEY_fromdata`. An `OSSL_PARAM_BLD` keeps the *pointers* to the
/// names (and to string values) until `OSSL_PARAM_BLD_to_param`, so they must outlive the push;
/// Swift's bridged C strings live only for one call, OpenSSL's name macros for ever.
static inline int shim_push_rsa_public_key(OSSL_PARAM_BLD *builder, const BIGNUM *n, const BIGNUM *e) {
    return OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, n)
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, e);
}

/// `point` (SEC 1 uncompressed) must stay valid until `OSSL_PARAM_BLD_to_param`.
static inline int shim_push_p256_public_key(OSSL_PARAM_BLD *builder, const unsigned char *point, size_t length) {
    return OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, SN_X9_62_prime256v1, 0)
        && OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, length);
}

/// The selection `EVP_PKEY_fromdata` takes to build a public key (a macro of other macros).
static inline int shim_EVP_PKEY_PUBLIC_KEY(void) {
    return EVP_PKEY_PUBLIC_KEY;
}

/// Adds `certificate` to the chain a server sends after its own certificate (the reference
/// count is taken: the caller keeps its own).
static inline long shim_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *certificate) {
    return SSL_CTX_add1_chain_cert(ctx, certificate);
}

/// An extension context with no configuration database: extension values are given whole.
static inline void shim_X509V3_set_ctx_nodb(X509V3_CTX *ctx) {
    X509V3_set_ctx_nodb(ctx);
}

static inline int shim_sk_GENERAL_SUBTREE_num(const STACK_OF(GENERAL_SUBTREE) *subtrees) {
    return sk_GENERAL_SUBTREE_num(subtrees);
}

static inline GENERAL_SUBTREE *shim_sk_GENERAL_SUBTREE_value(const STACK_OF(GENERAL_SUBTREE) *subtrees, int index) {
    return sk_GENERAL_SUBTREE_value(subtrees, index);
}

#endif
