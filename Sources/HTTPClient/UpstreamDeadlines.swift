/// The deadlines of one upstream connection, kept on its one timer: the current purpose's own
/// timeout (queueing for a connection slot, connecting, waiting for the response, idling in the
/// pool) and, once an exchange's request is sent, the deadline of its whole response
/// (`upstreamResponseTotalSeconds`). The timer is set for whichever comes first. Under the
/// pool's policy the response timeout starts again with every byte; the total deadline never
/// moves, so a response dripped in byte by byte still ends.
///
/// How the clocks run is the owner's `Policy`, decided here and not in the connection: the
/// connection says what happened (resolving starts, connecting starts, bytes moved) and is told
/// when its timer must fire.
///
/// No I/O: times are the loop's milliseconds, passed in.
public struct UpstreamDeadlines {
    /// How an owner's deadlines run, in milliseconds. The upstream pool's connections (`pooled`)
    /// time each step and each silence; the HTTP client's one exchange (`singleExchange`) has two
    /// total bounds, so that a server dripping its answer cannot hold it open.
    public struct Policy: Sendable, Equatable {
        /// When the connect timeout starts.
        public enum ConnectClock: Sendable, Equatable {
            /// When connecting starts: the pool resolves for many connections (with a cache).
            case fromConnecting
            /// Before the host name is resolved: resolving, connecting and the TLS handshake together.
            case fromResolving
        }

        /// What the response timeout measures.
        public enum ResponseClock: Sendable, Equatable {
            /// Silence: it starts again whenever the exchange's bytes move.
            case restartsOnProgress
            /// The whole response, from connected to its last byte.
            case total
        }

        public var connectMilliseconds: UInt64
        public var connectClock: ConnectClock
        public var responseMilliseconds: UInt64
        public var responseClock: ResponseClock
        public var idleMilliseconds: UInt64
        public var queueMilliseconds: UInt64
        /// The whole response's bound from the request sent (`noteRequestSent`); nil: none.
        public var responseTotalMilliseconds: UInt64?

        public init(connectMilliseconds: UInt64, connectClock: ConnectClock, responseMilliseconds: UInt64,
                    responseClock: ResponseClock, idleMilliseconds: UInt64 = 0, queueMilliseconds: UInt64 = 0,
                    responseTotalMilliseconds: UInt64? = nil) {
            self.connectMilliseconds = connectMilliseconds
            self.connectClock = connectClock
            self.responseMilliseconds = responseMilliseconds
            self.responseClock = responseClock
            self.idleMilliseconds = idleMilliseconds
            self.queueMilliseconds = queueMilliseconds
            self.responseTotalMilliseconds = responseTotalMilliseconds
        }

        /// The upstream pool's: connect from connecting, response timeout restarted by progress,
        /// optionally a total deadline from the request sent.
        public static func pooled(connect: UInt64, response: UInt64, idle: UInt64, queue: UInt64, responseTotal: UInt64?) -> Policy {
            Policy(connectMilliseconds: connect, connectClock: .fromConnecting, responseMilliseconds: response,
                   responseClock: .restartsOnProgress, idleMilliseconds: idle, queueMilliseconds: queue,
                   responseTotalMilliseconds: responseTotal)
        }

        /// One exchange on a connection of its own: both deadlines total, neither pushed back.
        public static func singleExchange(connect: UInt64, response: UInt64) -> Policy {
            Policy(connectMilliseconds: connect, connectClock: .fromResolving, responseMilliseconds: response, responseClock: .total)
        }
    }

    enum Purpose { case none, queue, connect, response, idle }

    /// What the timer firing at a time means.
    enum Expiry: Equatable { case none, queue, connect, response, responseTotal, idle }

    private(set) var purpose: Purpose = .none
    /// When the purpose's own timeout falls due.
    private var purposeDue: UInt64 = 0
    /// When the whole response must be in; nil when that bound is off or the request is still
    /// going out.
    private(set) var responseDeadline: UInt64?
    let policy: Policy

    /// `policy` is what the purpose-level steps (`startConnecting`, `noteProgress`, ...) follow;
    /// `start(_:after:now:)` takes its duration from the caller.
    init(policy: Policy = .pooled(connect: 0, response: 0, idle: 0, queue: 0, responseTotal: nil)) {
        self.policy = policy
    }

    /// When the timer must fire.
    var due: UInt64 {
        guard let responseDeadline, boundsExchange else { return purposeDue }
        return min(purposeDue, responseDeadline)
    }

    /// The total deadline bounds queueing, connecting and waiting for the response, nothing else.
    private var boundsExchange: Bool { purpose == .queue || purpose == .connect || purpose == .response }

    /// Starts `purpose`'s own timeout (again); returns when the timer must fire.
    mutating func start(_ purpose: Purpose, after milliseconds: UInt64, now: UInt64) -> UInt64 {
        self.purpose = purpose
        purposeDue = now + milliseconds
        return due
    }

    /// The request is sent: the whole response is due `milliseconds` from `now`. Returns when
    /// the timer must fire, or nil while no timer runs (the host name is still being resolved:
    /// starting the connect timeout sets it).
    mutating func startResponseDeadline(after milliseconds: UInt64, now: UInt64) -> UInt64? {
        responseDeadline = now + milliseconds
        return boundsExchange ? due : nil
    }

    /// A new exchange on this connection: no total deadline until its request is sent.
    mutating func beginExchange() {
        responseDeadline = nil
    }

    /// The purpose's own timeout is over (queueing ended); the total deadline stays.
    mutating func endPurpose() {
        purpose = .none
    }

    /// Nothing is due: the response is complete, or the connection became a tunnel.
    mutating func stop() {
        purpose = .none
        responseDeadline = nil
    }

    // MARK: The steps of an exchange, timed by the policy

    /// The host name is about to be resolved: under `.fromResolving` the connect timeout starts
    /// now. Returns when the timer must fire, or nil while no timer runs yet.
    mutating func startResolving(now: UInt64) -> UInt64? {
        guard policy.connectClock == .fromResolving else { return nil }
        return start(.connect, after: policy.connectMilliseconds, now: now)
    }

    /// Connecting starts; a connect timeout started before resolving keeps its time.
    mutating func startConnecting(now: UInt64) -> UInt64 {
        if policy.connectClock == .fromResolving && purpose == .connect { return due }
        return start(.connect, after: policy.connectMilliseconds, now: now)
    }

    /// The connection can carry the exchange (connected, or taken over idle): the response is awaited.
    mutating func startResponse(now: UInt64) -> UInt64 {
        start(.response, after: policy.responseMilliseconds, now: now)
    }

    /// Whether the exchange's bytes moving (a read, request body written) restart the response
    /// timeout now; then `startResponse` does.
    var restartsOnProgress: Bool {
        purpose == .response && policy.responseClock == .restartsOnProgress
    }

    mutating func startQueue(now: UInt64) -> UInt64 {
        start(.queue, after: policy.queueMilliseconds, now: now)
    }

    mutating func startIdle(now: UInt64) -> UInt64 {
        start(.idle, after: policy.idleMilliseconds, now: now)
    }

    /// The request is sent: the policy's total response deadline, if any, starts (see
    /// `startResponseDeadline(after:now:)`). Nil when no timer needs setting.
    mutating func startResponseTotal(now: UInt64) -> UInt64? {
        guard let total = policy.responseTotalMilliseconds else { return nil }
        return startResponseDeadline(after: total, now: now)
    }

    /// What the timer firing at `now` means; `.none` when nothing has fallen due.
    func expiry(at now: UInt64) -> Expiry {
        if let responseDeadline, boundsExchange, now >= responseDeadline { return .responseTotal }
        guard now >= purposeDue else { return .none }
        switch purpose {
        case .none: return .none
        case .queue: return .queue
        case .connect: return .connect
        case .response: return .response
        case .idle: return .idle
        }
    }
}
