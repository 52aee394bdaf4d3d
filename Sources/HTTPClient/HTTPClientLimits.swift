/// The deadlines of one exchange. Both are total, never pushed back by bytes that arrive: a
/// server that drips its answer a byte at a time cannot hold an exchange open past
/// `connectTimeoutMilliseconds` (resolving, connecting, the TLS handshake) plus
/// `responseTimeoutMilliseconds` (from connected to the last byte of the response).
public struct HTTPClientLimits: Sendable {
    public var connectTimeoutMilliseconds: UInt64
    public var responseTimeoutMilliseconds: UInt64
    public var maxBodyBytes: Int

    public init(connectTimeoutMilliseconds: UInt64 = 5000, responseTimeoutMilliseconds: UInt64 = 30_000, maxBodyBytes: Int = 1 << 20) {
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.responseTimeoutMilliseconds = responseTimeoutMilliseconds
        self.maxBodyBytes = maxBodyBytes
    }

    /// The connection's deadline policy for these limits: both total (`singleExchange`).
    var deadlinePolicy: UpstreamDeadlines.Policy {
        .singleExchange(connect: connectTimeoutMilliseconds, response: responseTimeoutMilliseconds)
    }
}
