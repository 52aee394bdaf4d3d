import EventLoop
import HTTP1

/// Why an exchange on an `UpstreamConnection` failed before its response was complete: what
/// happened, in enough detail that each owner can say it in its own terms. The proxy's
/// `UpstreamFailure` (its 502/503/504 answers, metric labels, retries) and the token client's
/// `HTTPClientError` (its log and admin texts) are views of it.
public enum ConnectionFailure: Error, Sendable, Equatable {
    /// The host name did not resolve; the owner resolves, so the text is its own.
    case resolve(String)
    case connect(UVError)
    /// The TLS handshake failed (unknown CA, name mismatch, expired, pin, ...); safe to show.
    case tls(String)
    /// The connect deadline passed while the TLS handshake was still going on.
    case handshakeTimeout
    /// A TLS record failed after the handshake, while the response was awaited or arriving.
    case tlsAfterHandshake(String)
    case connectTimeout
    /// Every connection the pool allows stayed busy for the queue's timeout.
    case queueTimeout
    case responseTimeout
    /// The whole response did not arrive within the total deadline started when the request was sent.
    case responseTotalTimeout
    /// The upstream closed (or reset) the connection before the response was complete.
    case closed(UVError?)
    case badResponse(HTTP1Error)
}
