/// Which direction's reads of a client connection are stopped for the other side's write
/// backlog, and when the client is read: not while the upstream's backlog is full, nor while a
/// lot of pipelined bytes wait for the response before them. A backlog is the socket's, not the
/// request's, so this outlives the exchanges (`Exchange.backpressure`).
struct Backpressure: OptionSet {
    let rawValue: UInt8
    /// The client is not read while the upstream's backlog drains.
    static let clientReads = Backpressure(rawValue: 1)
    /// The upstream is not read while the client's backlog drains.
    static let upstreamReads = Backpressure(rawValue: 2)

    /// Pipelined bytes held while a response is pending before reading stops.
    static let maxBufferedPipelineBytes = 64 * 1024

    /// Pipelined bytes arrived while a response is pending: they wait; reading goes on (saving
    /// two epoll_ctl calls per request and noticing a client that goes away) unless a lot waits.
    static func readsOnWhilePipelined(pipelinedBytes: Int) -> Bool { pipelinedBytes <= maxBufferedPipelineBytes }

    /// Whether the client is read, as far as the backlogs and the pipelined bytes go.
    func readsClient(pipelinedBytes: Int) -> Bool {
        !contains(.clientReads) && pipelinedBytes <= Self.maxBufferedPipelineBytes
    }

    /// What to do when the upstream's backlog drained.
    enum UpstreamDrained {
        case none
        /// Read the client again; `restartBodyClock`: its deadline starts over now.
        case resumeReading(restartBodyClock: Bool)
        /// Reading stays stopped for the pipelined bytes waiting.
        case stayPaused(restartBodyClock: Bool)
    }

    /// The upstream's backlog drained; `tunnelling`: the bytes waiting are the tunnel's, not
    /// pipelined requests; `bodyClockRan`: the request body's deadline was stopped with reading.
    mutating func upstreamBacklogDrained(pipelinedBytes: Int, tunnelling: Bool, bodyClockRan: Bool) -> UpstreamDrained {
        guard contains(.clientReads) else { return .none }
        remove(.clientReads)
        if pipelinedBytes <= Self.maxBufferedPipelineBytes || tunnelling { return .resumeReading(restartBodyClock: bodyClockRan) }
        return .stayPaused(restartBodyClock: bodyClockRan)
    }

    /// The client's backlog drained: returns whether to read the upstream again.
    mutating func clientBacklogDrained() -> Bool {
        remove(.upstreamReads) != nil
    }
}
