/// Resource limits and timeouts. Durations are in seconds.
public struct Limits: Sendable, Equatable {
    /// Request line plus headers, in bytes (431 beyond).
    public var maxHeaderBytes: Int
    public var maxHeaderCount: Int
    /// An upstream response's status line plus headers, in bytes (502 beyond).
    public var maxResponseHeaderBytes: Int
    /// Time a client has to send the complete request head.
    public var headerTimeoutSeconds: Double
    /// Time a kept-alive client connection may sit idle.
    public var idleTimeoutSeconds: Double
    public var upstreamConnectTimeoutSeconds: Double
    /// Time from the request sent to the upstream's response head, and then between reads of
    /// the response (any byte, and any request body byte sent, starts it again).
    public var upstreamResponseTimeoutSeconds: Double
    /// Time from the whole request sent to the whole response received, however steadily it
    /// comes; nil (the default) sets no such bound.
    public var upstreamResponseTotalSeconds: Double?
    /// On SIGTERM, time in-flight requests get to finish.
    public var shutdownGraceSeconds: Double
    /// How long resolved upstream addresses are reused.
    public var dnsCacheSeconds: Double
    /// Idle connections kept per upstream per worker; 0 disables pooling.
    public var maxIdleUpstreamConnections: Int
    /// Client connections of the process; more are closed when accepted. 0: derived from the
    /// file-descriptor limit at start.
    public var maxConnections: Int
    /// Time a request may wait for its identity's token before it is answered 503.
    public var tokenWaitSeconds: Double
    /// Time a request body has, from its head, to arrive; every byte received extends it by
    /// 1/`requestBodyMinBytesPerSecond` s, so a body slower than that rate on average is cut off
    /// (like Apache's mod_reqtimeout), while a fast large upload never is.
    public var requestBodyTimeoutSeconds: Double
    public var requestBodyMinBytesPerSecond: Int
    /// Connections each worker opens to one upstream (`host:port`), busy, idle or connecting;
    /// 0 (the default) sets no limit. An exchange that finds them all busy queues for one.
    public var maxUpstreamConnections: Int
    /// Time an exchange may queue for an upstream connection before it is answered 503.
    public var upstreamQueueTimeoutSeconds: Double
    /// How often the files named in `RelayConfig.watchedFiles` (certificates, keys, CA bundles,
    /// DPoP and store key files) are looked at (`stat`, never read) for a rotation.
    public var credentialFilePollSeconds: Int

    public init(maxHeaderBytes: Int = 65536, maxHeaderCount: Int = 100, maxResponseHeaderBytes: Int = 65536,
                headerTimeoutSeconds: Double = 30,
                idleTimeoutSeconds: Double = 60, upstreamConnectTimeoutSeconds: Double = 5,
                upstreamResponseTimeoutSeconds: Double = 60, shutdownGraceSeconds: Double = 30,
                dnsCacheSeconds: Double = 30, maxIdleUpstreamConnections: Int = 128, maxConnections: Int = 0, tokenWaitSeconds: Double = 30,
                requestBodyTimeoutSeconds: Double = 30, requestBodyMinBytesPerSecond: Int = 500,
                upstreamResponseTotalSeconds: Double? = nil, maxUpstreamConnections: Int = 0,
                upstreamQueueTimeoutSeconds: Double = 10, credentialFilePollSeconds: Int = 5) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxResponseHeaderBytes = maxResponseHeaderBytes
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.upstreamConnectTimeoutSeconds = upstreamConnectTimeoutSeconds
        self.upstreamResponseTimeoutSeconds = upstreamResponseTimeoutSeconds
        self.shutdownGraceSeconds = shutdownGraceSeconds
        self.dnsCacheSeconds = dnsCacheSeconds
        self.maxIdleUpstreamConnections = maxIdleUpstreamConnections
        self.maxConnections = maxConnections
        self.tokenWaitSeconds = tokenWaitSeconds
        self.requestBodyTimeoutSeconds = requestBodyTimeoutSeconds
        self.requestBodyMinBytesPerSecond = requestBodyMinBytesPerSecond
        self.upstreamResponseTotalSeconds = upstreamResponseTotalSeconds
        self.maxUpstreamConnections = maxUpstreamConnections
        self.upstreamQueueTimeoutSeconds = upstreamQueueTimeoutSeconds
        self.credentialFilePollSeconds = credentialFilePollSeconds
    }
}
