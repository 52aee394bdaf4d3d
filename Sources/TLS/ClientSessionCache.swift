internal import COpenSSL
import Locking

/// The last resumable TLS session per host, for one client `TLSConfiguration`, so that the
/// next pooled connection to that host resumes it (an abbreviated handshake: no certificate
/// chain, no key exchange signature).
///
/// OpenSSL hands over sessions through the context's new-session callback (at the end of a
/// TLS 1.2 handshake; with TLS 1.3, when a NewSessionTicket arrives after it); the engine that
/// caused the callback decides whether the session may be kept (`TLSEngine.sessionArrived`):
/// only once the connection passed its pin check, so a resumed connection, which sees no
/// certificate, is always one whose first connection was pinned.
///
/// The cache holds its own copy of each session, and every connection resumes from a copy of
/// the cached one (`SSL_SESSION_dup`), so nothing OpenSSL does to a connection's session reaches
/// the cache. It does a lot: a TLS 1.3 client marks the session it resumed as used up
/// (single-use tickets, RFC 8446 §C.4), and any connection freed without close_notify marks its
/// session unresumable. On one shared session object, each resumption made every connection
/// opened before the next ticket arrived a full handshake (6 of 32 opened at once, in
/// tests/integration/tls/test_tls_resumption.py). nginx (`proxy_ssl_session_reuse`) and HAProxy
/// do the same: they keep a session serialized and give each connection its own. The privacy
/// reason for single-use tickets (an observer linking connections) means nothing between the
/// relay and its upstream, which share their addresses anyway. The cache's own rule instead:
/// a connection that fails forgets the session it resumed from or received (`forget`).
final class ClientSessionCache: Sendable {
    private let sessions = Locked<[String: CachedSession]>([:])

    func session(for host: String) -> CachedSession? {
        sessions.withLock { $0[host] }
    }

    func store(_ session: CachedSession, for host: String) {
        sessions.withLock { $0[host] = session }
    }

    /// Drops `session` for `host`, unless another connection has stored a newer one since.
    func forget(_ session: CachedSession, for host: String) {
        sessions.withLock { cached in
            if cached[host] === session { cached[host] = nil }
        }
    }
}

/// One reference to an `SSL_SESSION` that no connection uses, freed with the last Swift
/// reference. Engines on several threads copy it (`SSL_SESSION_dup` only reads its source).
final class CachedSession: @unchecked Sendable {
    private let session: OpaquePointer

    /// A copy of `session` (the caller keeps its reference), or nil when OpenSSL cannot copy it.
    init?(copying session: OpaquePointer) {
        guard let copy = SSL_SESSION_dup(session) else { return nil }
        self.session = copy
    }

    deinit {
        SSL_SESSION_free(session)
    }

    /// Makes `ssl` resume a copy of this session; false when OpenSSL cannot copy it.
    func offer(to ssl: OpaquePointer) -> Bool {
        guard let copy = SSL_SESSION_dup(session) else { return false }
        defer { SSL_SESSION_free(copy) }  // SSL_set_session takes a reference of its own
        return SSL_set_session(ssl, copy) == 1
    }
}
