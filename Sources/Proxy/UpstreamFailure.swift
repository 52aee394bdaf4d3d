import EventLoop
import HTTP1
import HTTPClient

/// Why an exchange with the upstream failed before it completed, as the proxy answers, counts
/// and logs it: the proxy's view of its connection's `ConnectionFailure`.
enum UpstreamFailure: Error {
    case resolve(String)
    case connect(UVError)
    /// The TLS handshake (or a TLS record later) failed; the reason is safe to show.
    case tls(String)
    case connectTimeout
    /// Every connection `maxUpstreamConnections` allows stayed busy for `upstreamQueueTimeoutSeconds`.
    case queueTimeout
    case responseTimeout
    /// The whole response did not arrive within `upstreamResponseTotalSeconds` of the request.
    case responseTotalTimeout
    /// The upstream closed (or reset) the connection before the response was complete.
    case closed(UVError?)
    case badResponse(HTTP1Error)

    /// Issue 3: a handshake that does not finish is a TLS failure (502), not a slow network; and
    /// a TLS record failing later is a TLS failure too, not a mere close.
    init(_ failure: ConnectionFailure) {
        switch failure {
        case .resolve(let detail): self = .resolve(detail)
        case .connect(let error): self = .connect(error)
        case .tls(let reason), .tlsAfterHandshake(let reason): self = .tls(reason)
        case .handshakeTimeout: self = .tls("TLS handshake timed out")
        case .connectTimeout: self = .connectTimeout
        case .queueTimeout: self = .queueTimeout
        case .responseTimeout: self = .responseTimeout
        case .responseTotalTimeout: self = .responseTotalTimeout
        case .closed(let error): self = .closed(error)
        case .badResponse(let error): self = .badResponse(error)
        }
    }

    /// Nothing of the response arrived, so a request without a body can be sent again on a
    /// new connection (an idle pooled connection the upstream closed just as it was reused).
    var allowsRetryOnFreshConnection: Bool {
        if case .closed = self { return true }
        return false
    }

    /// The `kind` label of `oauth_relay_upstream_errors_total`.
    var metricKind: String {
        switch self {
        case .resolve: "resolve"
        case .connect: "connect"
        case .tls: "tls"
        case .connectTimeout: "connect_timeout"
        case .queueTimeout: "queue_timeout"
        case .responseTimeout, .responseTotalTimeout: "response_timeout"
        case .closed: "closed"
        case .badResponse: "bad_response"
        }
    }
}
