/// The deadlines of one upstream connection, kept on its one timer: the current purpose's own
/// timeout (queueing for a connection slot, connecting, waiting for the response, idling in the
/// pool) and, once an exchange's
/// request is sent, the deadline of its whole response (`upstreamResponseTotalSeconds`). The
/// timer is set for whichever comes first. The response timeout starts again with every byte;
/// the total deadline never moves, so a response dripped in byte by byte still ends.
///
/// No I/O: times are the loop's milliseconds, passed in.
struct UpstreamDeadlines {
    enum Purpose { case none, queue, connect, response, idle }

    /// What the timer firing at a time means.
    enum Expiry: Equatable { case none, queue, connect, response, responseTotal, idle }

    private(set) var purpose: Purpose = .none
    /// When the purpose's own timeout falls due.
    private var purposeDue: UInt64 = 0
    /// When the whole response must be in; nil when that bound is off or the request is still
    /// going out.
    private(set) var responseDeadline: UInt64?

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
