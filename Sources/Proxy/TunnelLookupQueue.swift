// TunnelLookupQueue and TunnelResolutionCache: the decisions behind a worker's tunnel name
// lookups (`TunnelResolver`), without sockets or a loop. Tunnel lookups share libuv's small
// thread pool with the token client's and the upstream pools' lookups: a client that opens many
// `CONNECT`s to names that resolve slowly must not hold every thread.

/// Which tunnel lookups run now, which wait their turn (first in, first out), and which are
/// refused: at most `maxRunning` at once, at most `maxWaiting` waiting.
struct TunnelLookupQueue<Ticket: Equatable> {
    enum Admission: Equatable {
        /// Start the lookup now (a running place is taken).
        case start
        /// Wait: `finish` hands the place on in turn.
        case wait
        /// Too many wait already: answer 503.
        case refuse
    }

    let maxRunning: Int
    let maxWaiting: Int
    /// Lookups started and not finished (cancelled ones included: their thread is busy until
    /// their callback returns).
    private(set) var running = 0
    private(set) var waiting: [Ticket] = []

    init(maxRunning: Int, maxWaiting: Int) {
        self.maxRunning = maxRunning
        self.maxWaiting = maxWaiting
    }

    mutating func admit(_ ticket: Ticket) -> Admission {
        if running < maxRunning {
            running += 1
            return .start
        }
        guard waiting.count < maxWaiting else { return .refuse }
        waiting.append(ticket)
        return .wait
    }

    /// A waiting lookup is no longer wanted (its tunnel timed out or closed); false when it is
    /// not waiting (it runs, or ended).
    mutating func cancelWaiting(_ ticket: Ticket) -> Bool {
        guard let index = waiting.firstIndex(of: ticket) else { return false }
        waiting.remove(at: index)
        return true
    }

    /// A running lookup's callback returned: the waiting lookup that takes its place, if any.
    mutating func finish() -> Ticket? {
        precondition(running > 0, "a tunnel lookup finished that was not running")
        guard !waiting.isEmpty else {
            running -= 1
            return nil
        }
        return waiting.removeFirst()
    }
}

/// The addresses tunnel lookups found, kept `dnsCacheSeconds` per host name; at most `capacity`
/// names (when full, expired entries go, then all: a worker that tunnels to that many names at
/// once gains little from the cache).
struct TunnelResolutionCache<Address> {
    private struct Entry {
        var addresses: [Address]
        var expiresAt: UInt64
    }

    let capacity: Int
    private var entries: [String: Entry] = [:]

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { entries.count }

    /// The addresses of `host` when they have not expired at `now`.
    func addresses(of host: String, at now: UInt64) -> [Address]? {
        guard let entry = entries[host], now < entry.expiresAt else { return nil }
        return entry.addresses
    }

    mutating func store(_ addresses: [Address], of host: String, at now: UInt64, forMilliseconds lifetime: UInt64) {
        guard lifetime > 0, !addresses.isEmpty else { return }
        if entries[host] == nil && entries.count >= capacity {
            entries = entries.filter { now < $0.value.expiresAt }
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        }
        entries[host] = Entry(addresses: addresses, expiresAt: now + lifetime)
    }
}
