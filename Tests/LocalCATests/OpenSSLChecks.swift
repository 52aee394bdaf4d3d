import COpenSSL
import Crypto
import Foundation

/// What OpenSSL itself, not the code under test, says of a certificate: whether an extension is
/// there and critical, and the result of verifying a leaf under a CA as a TLS client would.
enum OpenSSLChecks {
    /// nil when the certificate has no extension `nid`; else whether it is critical.
    static func isCritical(_ certificate: X509Certificate, _ nid: Int32) -> Bool? {
        let index = X509_get_ext_by_NID(certificate.pointer, nid, -1)
        guard index >= 0, let ext = X509_get_ext(certificate.pointer, index) else { return nil }
        return X509_EXTENSION_get_critical(ext) == 1
    }

    /// `X509_V_OK`, or the `X509_V_ERR_…` code of verifying `leaf` with `authority` as the only
    /// trust anchor, for `purpose` (a TLS server unless told), named `host` when given, at `time`.
    static func verify(_ leaf: X509Certificate, under authority: X509Certificate, host: String?, at time: Int64,
                       purpose: Int32 = X509_PURPOSE_SSL_SERVER) -> Int32 {
        let store = X509_STORE_new()!
        defer { X509_STORE_free(store) }
        X509_STORE_add_cert(store, authority.pointer)
        let context = X509_STORE_CTX_new()!
        defer { X509_STORE_CTX_free(context) }
        X509_STORE_CTX_init(context, store, leaf.pointer, nil)
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_purpose(parameters, purpose)
        X509_VERIFY_PARAM_set_time(parameters, time_t(time))
        if let host { X509_VERIFY_PARAM_set1_host(parameters, host, host.utf8.count) }
        let verified = X509_verify_cert(context) == 1
        defer { ERR_clear_error() }
        return verified ? X509_V_OK : X509_STORE_CTX_get_error(context)
    }

    /// The text of an `X509_V_ERR_…` code, for failure messages.
    static func text(_ code: Int32) -> String {
        String(cString: X509_verify_cert_error_string(Int(code)))
    }
}
