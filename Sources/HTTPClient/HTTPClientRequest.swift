import HTTPFields
import TLS

/// A request for `sendHTTPRequest`: where it goes, over TLS or not, and what it says.
public struct HTTPClientRequest: Sendable {
    public var method: String
    public var host: String
    public var port: UInt16
    /// Origin-form target, e.g. `/oauth2/token?x=1`.
    public var target: String
    /// Sent in order after `Host`; `Content-Length` and `Connection` are the client's own.
    public var headers: [HTTPField]
    public var body: [UInt8]
    /// https: the TLS settings to connect with; nil for plain http.
    public var tls: TLSConfiguration?
    /// The response completes with its status and header fields, its body unread and the
    /// connection closed: for a question the head answers (an `auto` identity's probe of its
    /// resource), which a long body or an endless event stream must not hold past the limits.
    public var completesAtHead = false

    public init(method: String, host: String, port: UInt16, target: String, headers: [HTTPField] = [], body: [UInt8] = [],
                tls: TLSConfiguration? = nil) {
        self.method = method
        self.host = host
        self.port = port
        self.target = target
        self.headers = headers
        self.body = body
        self.tls = tls
    }
}
