import OAuth2

/// Whether the shared Redis store is usable, with no I/O: when to reconnect (backoff with
/// jitter) and when to log — once when an outage begins, once when it ends, never per operation.
///
/// An outage begins with the first failure (a connection that could not be made or was lost, a
/// command that timed out, a command Redis refused) and ends when a connection is up again or,
/// for refusals, when a command succeeds.
///
/// Times are seconds on the caller's monotonic clock (`now`).
struct RedisLinkHealth: Equatable {
    enum State: Equatable {
        /// Connecting; `first` until the first attempt ends (fetches wait for that one only).
        case connecting(first: Bool)
        case ready
        /// Waiting to reconnect.
        case down
    }

    /// Between attempts: 0.1 s doubling up to 2 s, so a restarted Redis is used again within a
    /// couple of seconds, while a fleet of replicas retrying a dead one costs it little.
    static let backoff = BackoffPolicy(initialSeconds: 0.1, maximumSeconds: 2, maximumRetryAfterSeconds: 2, jitter: 0.5)

    /// How long a link must have been up for its loss to be reconnected at once: a server that
    /// closes idle connections does so after seconds at least (Redis `timeout` counts in seconds).
    static let steadySeconds: Double = 1

    private(set) var state = State.connecting(first: true)
    private(set) var inOutage = false
    private var failedAttempts = 0
    /// When the link last became ready (read only while it is).
    private var readySince: Double = 0

    /// Both connections are up at `now`. True when this ends an outage (log that sharing resumed).
    /// The backoff is not reset yet: only a link that stays up is trusted again (`lost`).
    mutating func connected(at now: Double) -> Bool {
        state = .ready
        readySince = now
        return endOutage()
    }

    /// An attempt failed or the link was lost at `now`: when to try again (seconds), and whether
    /// this begins an outage (log it). `random` in 0..<1 picks the jitter.
    ///
    /// A link that was up for `steadySeconds` at least is first reconnected at once, quietly: a
    /// server that closes idle connections (Redis `timeout`, managed services' idle limits) is no
    /// outage. A link lost sooner is a failed attempt like any other, and the backoff goes on
    /// growing: a server that drops each connection as soon as it is ready gets one attempt every
    /// couple of seconds, not a reconnection loop as fast as the network goes.
    mutating func lost(random: Double, at now: Double) -> (beginsOutage: Bool, retryAfter: Double) {
        let wasReady = state == .ready
        let steady = wasReady && now - readySince >= Self.steadySeconds
        state = .down
        if steady {
            failedAttempts = 0
            if !inOutage { return (false, 0) }
        }
        failedAttempts += 1
        let begins = !inOutage
        inOutage = true
        return (begins, Self.backoff.delay(afterFailures: failedAttempts, retryAfter: nil, random: random))
    }

    /// The retry timer fired.
    mutating func reconnecting() {
        state = .connecting(first: false)
    }

    /// A command was refused (an error reply) on a working link. True when this begins an outage.
    mutating func refused() -> Bool {
        let begins = !inOutage
        inOutage = true
        return begins
    }

    /// A command succeeded. True when this ends an outage.
    mutating func succeeded() -> Bool {
        endOutage()
    }

    private mutating func endOutage() -> Bool {
        defer { inOutage = false }
        return inOutage
    }

    /// How a fetch that begins now treats the link.
    var link: SharedFetch.Link {
        switch state {
        case .ready: .ready
        case .connecting(first: true): .opening
        case .connecting(first: false), .down: .down
        }
    }
}
