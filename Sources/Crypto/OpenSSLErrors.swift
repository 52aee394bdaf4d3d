internal import COpenSSL

/// OpenSSL's per-thread error queue, read and emptied at once. Every engine call and every
/// primitive starts with the queue empty (`clear()`), so what is left after a failure belongs
/// to that call.
///
/// `package`, not `public`: the TLS engine reads the same queue (one OpenSSL library behind
/// both modules), and nothing outside this package should.
package enum OpenSSLErrors {
    /// Empties the queue. Looked at first: emptying walks all of its sixteen slots, and before
    /// each TLS read and write it is almost always empty already (about 250 instructions a
    /// request saved on an HTTPS upstream).
    package static func clear() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// The reason text of the earliest queued error (the most specific one), then empties the
    /// queue; `fallback` when it was empty.
    package static func takeReason(fallback: String) -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0, let text = ERR_reason_error_string(code) else { return fallback }
        return String(cString: text)
    }
}
