/// What the metrics and the access log keep of an exchange; reset for each request.
struct ExchangeRecord {
    var status = 0
    var bodyBytesSent = 0
    /// Nanoseconds on the worker's clock (0: not timed, or recorded already).
    var startedAt: UInt64 = 0
    var upstreamStartedAt: UInt64 = 0
    var upstreamHeadAt: UInt64 = 0
    var method = ""
    var path = ""
    var routeName = ""
}
