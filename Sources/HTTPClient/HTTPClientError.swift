import HTTP1

/// Why `sendHTTPRequest` failed, in the words the token thread logs and the admin API shows.
public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case resolve(String)
    case connect(String)
    /// The TLS handshake failed (unknown CA, name mismatch, expired, pin, ...).
    case tls(String)
    case connectTimeout
    case responseTimeout
    /// The server closed before a complete response.
    case closedEarly
    case invalidResponse(String)
    case bodyTooLarge(limit: Int)
    case cancelled

    public var description: String {
        switch self {
        case .resolve(let detail): return "cannot resolve the host: \(detail)"
        case .connect(let detail): return "cannot connect: \(detail)"
        case .tls(let detail): return "TLS failed: \(detail)"
        case .connectTimeout: return "connecting timed out"
        case .responseTimeout: return "no complete response in time"
        case .closedEarly: return "the server closed the connection before a complete response"
        case .invalidResponse(let detail): return "invalid HTTP response: \(detail)"
        case .bodyTooLarge(let limit): return "response body larger than \(limit) bytes"
        case .cancelled: return "cancelled"
        }
    }

    /// The client's view of its connection's failure: a handshake that outlasts the connect
    /// deadline is a slow connect, and a connection that ends mid-response, for whatever reason
    /// (TLS included), closed early.
    init(_ failure: ConnectionFailure) {
        switch failure {
        case .resolve(let detail): self = .resolve(detail)
        case .connect(let error): self = .connect(error.name)
        case .tls(let reason): self = .tls(reason)
        // The client never queues (it has no pool), so that too is only a connect taking long.
        case .connectTimeout, .handshakeTimeout, .queueTimeout: self = .connectTimeout
        case .responseTimeout, .responseTotalTimeout: self = .responseTimeout
        case .closed, .tlsAfterHandshake: self = .closedEarly
        case .badResponse(let error): self = .invalidResponse(error.reason)
        }
    }
}
