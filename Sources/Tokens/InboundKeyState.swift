// InboundKeyState: an inbound issuer's signing keys (its JWKS) as the workers see them, and when
// to fetch them again. No I/O, no clock of its own (monotonic seconds are passed in).
//
//   no keys ──(a token needs keys)──▶ fetching ──(JWKS read)──▶ keys
//                                         │                      │ (a token names a kid they lack,
//                                         └─(failed)─▶ failure   │  or they are an hour old)
//                                                                ▼
//                                                            fetching ...
//
// A fetch starts at most once per `minimumRefetchSeconds`, whatever the tokens say: tokens naming
// random `kid`s make at most one JWKS request per interval, and within it a kid the keys lack is
// a key the issuer does not have. While a fetch is under way, the requests that need it wait (at
// most `maxWaitingRequests` of them, each counted once however often its worker wakes it; more
// are told to come back); after a failure, requests that need new keys are answered
// "unavailable" until the interval is over.

import JOSE

/// What to do with a token the keys at hand cannot verify.
public enum InboundKeyNeed: Sendable, Equatable {
    /// Start a fetch (the caller posts it to the token thread) and wait for it.
    case fetchAndWait
    /// A fetch is under way: wait for it.
    case wait
    /// The keys are as fresh as the rate limit allows: the token names a key the issuer does not have.
    case noSuchKey
    /// The keys could not be read lately (`reason`), or too many requests wait already: try again
    /// in `retryAfterSeconds`.
    case unavailable(reason: String, retryAfterSeconds: Int)
}

public struct InboundKeyState: Sendable {
    /// Fetches start at least this far apart.
    public static let minimumRefetchSeconds = 10.0
    /// Keys this old are fetched again in the background (a key the issuer withdrew stops being
    /// trusted within this time).
    public static let maximumKeyAgeSeconds = 3600.0
    /// Requests that may wait for one fetch; more are answered "unavailable".
    public static let maxWaitingRequests = 1000
    /// What a request is told after a failed fetch. The failure itself (a URL, the IdP's status
    /// or words) is logged by the token thread and kept in `failure`, never sent to a caller the
    /// relay has not authenticated.
    public static let keysNotRead = "the issuer's keys could not be read lately"

    private enum Fetch: Sendable {
        case idle
        case inFlight
    }

    /// The issuer's keys, once read.
    public private(set) var keys: JWKSet?
    /// Moves on with every fetch that ends, so a request can tell whether the keys it used are
    /// still the latest.
    public private(set) var generation: UInt64 = 0
    /// Why the last fetch failed (nil when it did not), for the log and tests: a caller is told
    /// `keysNotRead` only.
    public private(set) var failure: String?
    private var fetch = Fetch.idle
    private var lastStart: Double?
    private var keysReadAt: Double?
    private var waiting = 0

    public init() {}

    public var isFetching: Bool { fetch == .inFlight }

    /// A token cannot be verified with `keys` (there are none, or none with its kid), at `now`.
    /// `firstAsk`: false for a parked request asking again when its worker wakes (it was counted
    /// among the waiting when it first asked; a wake-up is not another request).
    public mutating func needKeys(at now: Double, firstAsk: Bool = true) -> InboundKeyNeed {
        switch fetch {
        case .inFlight:
            guard firstAsk else { return .wait }
            guard waiting < Self.maxWaitingRequests else {
                return .unavailable(reason: "too many requests are waiting for the issuer's keys", retryAfterSeconds: 1)
            }
            waiting += 1
            return .wait
        case .idle:
            if let lastStart, now - lastStart < Self.minimumRefetchSeconds {
                let retryAfter = max(1, Int((Self.minimumRefetchSeconds - (now - lastStart)).rounded(.up)))
                if failure != nil { return .unavailable(reason: Self.keysNotRead, retryAfterSeconds: retryAfter) }
                if keys != nil { return .noSuchKey }
            }
            start(at: now)
            waiting += 1
            return .fetchAndWait
        }
    }

    /// Keys at hand that are `maximumKeyAgeSeconds` old start a fetch in the background (true: the
    /// caller posts it); requests go on with them meanwhile.
    public mutating func refreshIfStale(at now: Double) -> Bool {
        guard fetch == .idle, let keysReadAt, now - keysReadAt >= Self.maximumKeyAgeSeconds,
              lastStart.map({ now - $0 >= Self.minimumRefetchSeconds }) ?? true else { return false }
        start(at: now)
        return true
    }

    public mutating func fetched(_ keys: JWKSet, at now: Double) {
        self.keys = keys
        keysReadAt = now
        failure = nil
        ended()
    }

    /// The fetch failed; keys read earlier stay in use for the tokens they verify.
    public mutating func fetchFailed(_ reason: String) {
        failure = reason
        ended()
    }

    private mutating func start(at now: Double) {
        fetch = .inFlight
        lastStart = now
    }

    private mutating func ended() {
        fetch = .idle
        generation += 1
        waiting = 0
    }
}
