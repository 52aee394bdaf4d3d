/// What a `TokenLifecycle` has under way at its IdP: at most one thing at a time.
///
/// Resolution (an `auto` identity learning its server and client), discovery and a fetch
/// exclude each other (no fetch can be built before the endpoints are
/// known), and a fetch a logout abandoned is still under way for the token thread, which
/// reports its answer, but that answer is dropped. A device login's own steps are
/// `DeviceLogin`'s; its polls are fetches like any other.
enum TokenActivity: Sendable {
    /// Nothing is under way.
    case idle
    /// The discovery request (the IdP's metadata) is under way.
    case discovering
    /// An `auto` identity's resolution (`AutoResolution`, on the token thread) is under way.
    case resolving
    /// A fetch is under way; its answer will be taken.
    case fetching(FetchInFlight)
    /// A logout came while this fetch was under way: its answer is dropped, not taken.
    case abandoned(FetchInFlight)

    /// The fetch under way, taken or not.
    var fetch: FetchInFlight? {
        switch self {
        case .fetching(let fetch), .abandoned(let fetch): fetch
        case .idle, .discovering, .resolving: nil
        }
    }

    var isDiscovering: Bool {
        if case .discovering = self { return true }
        return false
    }

    var isResolving: Bool {
        if case .resolving = self { return true }
        return false
    }

    var isIdle: Bool {
        if case .idle = self { return true }
        return false
    }

    var isFetchAbandoned: Bool {
        if case .abandoned = self { return true }
        return false
    }

    /// A fetch whose answer will be taken is under way.
    var isFetchTaken: Bool {
        if case .fetching = self { return true }
        return false
    }

    /// A logout: the fetch under way (if any) is abandoned; discovery goes on.
    mutating func abandonFetch() {
        if case .fetching(let fetch) = self { self = .abandoned(fetch) }
    }

    /// The fetch under way was answered (or needs no request after all): it ends, and is
    /// returned with whether it had been abandoned. Nil, and no change, when none was under way.
    mutating func endFetch() -> (fetch: FetchInFlight, abandoned: Bool)? {
        switch self {
        case .fetching(let fetch):
            self = .idle
            return (fetch, false)
        case .abandoned(let fetch):
            self = .idle
            return (fetch, true)
        case .idle, .discovering, .resolving:
            return nil
        }
    }

    /// Changes the fetch under way (taken or abandoned alike); nothing without one.
    mutating func updateFetch(_ body: (inout FetchInFlight) -> Void) {
        switch self {
        case .fetching(var fetch):
            body(&fetch)
            self = .fetching(fetch)
        case .abandoned(var fetch):
            body(&fetch)
            self = .abandoned(fetch)
        case .idle, .discovering, .resolving:
            break
        }
    }

    /// The discovery request was answered.
    mutating func endDiscovery() {
        if case .discovering = self { self = .idle }
    }

    /// The resolution ended (resolved or failed).
    mutating func endResolution() {
        if case .resolving = self { self = .idle }
    }
}
