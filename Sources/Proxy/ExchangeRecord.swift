/// What the metrics and the access log keep of an exchange; reset for each request.
struct ExchangeRecord {
    var status = 0
    var bodyBytesSent = 0
    /// Nanoseconds on the worker's clock (0: not timed, or recorded already).
    var startedAt: UInt64 = 0
    var upstreamStartedAt: UInt64 = 0
    var upstreamHeadAt: UInt64 = 0
    /// When the response ended, if known without reading the clock again: a response that ends
    /// in the upstream read that carried its head ends at that read's time (0: read the clock).
    var endedAt: UInt64 = 0
    /// The request as the access log shows it; nil when the access log is off. Boxed: every
    /// client connection, an idle one too, holds its last record, and most relays do not log.
    var logged: LoggedRequest?
}

/// The request's fields the access log shows (`ExchangeRecord.logged`).
final class LoggedRequest {
    let method: String
    var path = ""
    var routeName = ""

    init(method: String) {
        self.method = method
    }
}
