/// Each per-caller identity's callers' generation (SharedCallerEntries.swift) as this replica
/// knows it, by the identity's slot: read from Redis once, then kept until a logout (this
/// replica's, or another's heard on the channel) or until the link goes down (a logout may pass
/// unheard meanwhile). The asks that come while it is being read wait for that read (`Waiter`:
/// what SharedCallerTokens resumes them with). No I/O.
struct CallerGenerations<Waiter> {
    private enum State {
        /// The link's first connection is being made: read once it is up.
        case awaitingLink([Waiter])
        /// Read `read` is under way.
        case reading(read: UInt64, [Waiter])
        case known(String)
    }

    /// What to do with an ask.
    enum Answer: Equatable {
        /// The generation is known.
        case use(String)
        /// Send read `read` (the ask waits for it).
        case read(UInt64)
        /// The ask waits for a read under way or for the link.
        case queued
        /// Redis cannot help: the ask goes without it.
        case alone
    }

    private var states: [Int: State] = [:]
    private var reads: UInt64 = 0

    /// The generation of `slot`, for `waiter`, with the link in state `link`.
    mutating func ask(slot: Int, waiter: Waiter, link: SharedFetch.Link) -> Answer {
        switch states[slot] {
        case .known(let generation):
            return .use(generation)
        case .awaitingLink(let waiters):
            states[slot] = .awaitingLink(waiters + [waiter])
            return .queued
        case .reading(let read, let waiters):
            states[slot] = .reading(read: read, waiters + [waiter])
            return .queued
        case nil:
            switch link {
            case .ready:
                reads += 1
                states[slot] = .reading(read: reads, [waiter])
                return .read(reads)
            case .opening:
                states[slot] = .awaitingLink([waiter])
                return .queued
            case .down:
                return .alone
            }
        }
    }

    /// Read `read` of `slot` answered `generation` (nil: failed). The waiters to resume with it;
    /// none when a logout made the read stale (its waiters asked again then).
    mutating func readDone(slot: Int, read: UInt64, generation: String?) -> [Waiter] {
        guard case .reading(let current, let waiters) = states[slot], current == read else { return [] }
        states[slot] = generation.map(State.known)
        return waiters
    }

    /// The link is up: the reads to send now, by slot.
    mutating func linkReady() -> [(slot: Int, read: UInt64)] {
        var started: [(slot: Int, read: UInt64)] = []
        for (slot, state) in states {
            guard case .awaitingLink(let waiters) = state else { continue }
            reads += 1
            states[slot] = .reading(read: reads, waiters)
            started.append((slot, reads))
        }
        return started
    }

    /// The link went down (or its first connection failed): nothing known is trusted any more,
    /// and every waiter goes without Redis.
    mutating func linkLost() -> [Waiter] {
        var waiting: [Waiter] = []
        for state in states.values {
            switch state {
            case .awaitingLink(let waiters), .reading(_, let waiters): waiting += waiters
            case .known: break
            }
        }
        states.removeAll()
        return waiting
    }

    /// A logout of the identity: the generation known goes; the waiters of a read under way
    /// (which may answer with the generation the logout replaced) are returned to ask again.
    mutating func forget(slot: Int) -> [Waiter] {
        switch states[slot] {
        case .known:
            states[slot] = nil
            return []
        case .reading(_, let waiters):
            states[slot] = nil
            return waiters
        case .awaitingLink, nil:
            return []
        }
    }

    /// A reload retired the slot: its generation is no longer kept (a read under way still
    /// resumes its waiters).
    mutating func retire(slot: Int) {
        if case .known = states[slot] { states[slot] = nil }
    }

    /// The generation known for `slot`, if any.
    func known(slot: Int) -> String? {
        if case .known(let generation) = states[slot] { return generation }
        return nil
    }
}
