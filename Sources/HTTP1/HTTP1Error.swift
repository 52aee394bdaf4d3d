/// Why a message could not be parsed. The proxy turns a request error into a 400/431 answer and
/// an upstream response error into a 502; `reason` is safe to show (it never holds message bytes).
public struct HTTP1Error: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// llhttp rejected the bytes (bad framing, bad token, bare LF, ...).
        case malformed
        /// The head is larger than `maxHeaderBytes`.
        case headTooLarge
        /// More than `maxHeaderCount` header fields.
        case tooManyHeaders
        /// An HTTP/1.1 request without Host, or with two.
        case badHost
        /// A header value with a byte RFC 9110 §5.5 forbids (NUL, CR, LF).
        case invalidHeaderValue
        /// The peer closed before the message was complete.
        case truncated
        /// A transfer coding other than `chunked` (gzip, deflate, ...): the relay would have to
        /// decode it to re-frame the body, and does not.
        case unsupportedTransferCoding
        /// A major HTTP version other than 1 (505).
        case unsupportedVersion
        /// A well-formed method token llhttp does not know (`get`; `QUERY` before llhttp 9.2): 501, as
        /// RFC 9110 §9.1 asks, rather than 400.
        case unsupportedMethod
    }

    public let kind: Kind
    public let reason: String

    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    /// The status a server answers with: 431 for size limits, 501 for a transfer coding or
    /// method it does not implement (RFC 9112 §6.1, RFC 9110 §9.1), 505 for HTTP/2+, else 400.
    public var requestStatus: Int {
        switch kind {
        case .headTooLarge, .tooManyHeaders: return 431
        case .unsupportedTransferCoding, .unsupportedMethod: return 501
        case .unsupportedVersion: return 505
        default: return 400
        }
    }

    public var description: String { reason }
}
