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
final class ClientSessionCache: Sendable {
    private let sessions = Locked<[String: CachedSession]>([:])

    func session(for host: String) -> CachedSession? {
        sessions.withLock { $0[host] }
    }

    func store(_ session: CachedSession, for host: String) {
        sessions.withLock { $0[host] = session }
    }
}

/// One reference to an `SSL_SESSION`, freed with the last Swift reference. A cached session is
/// only read after it is established (OpenSSL copies a session before changing it), so engines
/// on several threads may offer the same one.
final class CachedSession: @unchecked Sendable {
    let session: OpaquePointer

    /// Takes over the caller's reference to `session`.
    init(adopting session: OpaquePointer) {
        self.session = session
    }

    deinit {
        SSL_SESSION_free(session)
    }
}
