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
    var method = ""
    var path = ""
    var routeName = ""
}
