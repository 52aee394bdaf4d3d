import Crypto
import Endpoints
import SafeText

/// The introspections under way on the token loop, each with the callers waiting for its answer:
/// one question to the IdP per (identity, endpoint, token), however many requests carry that new
/// token meanwhile. No I/O: `Introspections` sends the question when `join` says `.first` and
/// hands the answer to everyone `land` returns.
///
/// Bounded: at most `maximum` different tokens are asked about at once (each is a connection to
/// the IdP); a caller beyond that is told `.overloaded` and nothing is sent, so a flood of made-up
/// tokens cannot open a socket each.
struct IntrospectionFlights<Waiter> {
    enum Admission: Equatable {
        /// No question about this token is under way: ask it (and `land` its answer).
        case first
        /// A question is under way: its answer comes to this waiter too.
        case joined
        /// Too many questions under way: this waiter was not taken.
        case overloaded
    }

    let maximum: Int
    private var waiting: [IntrospectionFlightKey: [Waiter]] = [:]

    init(maximum: Int) {
        self.maximum = max(1, maximum)
    }

    /// How many questions are under way.
    var count: Int { waiting.count }

    mutating func join(_ key: IntrospectionFlightKey, _ waiter: Waiter) -> Admission {
        if waiting[key] != nil {
            waiting[key]!.append(waiter)
            return .joined
        }
        guard waiting.count < maximum else { return .overloaded }
        waiting[key] = [waiter]
        return .first
    }

    /// The question of `key` ended: its waiters, in the order they came (none when it had ended
    /// already). A waiter that asks again from its completion starts a new question.
    mutating func land(_ key: IntrospectionFlightKey) -> [Waiter] {
        waiting.removeValue(forKey: key) ?? []
    }
}

/// One introspection question: the identity that asks (its client authentication; an IdP may
/// answer each client differently), the endpoint, and the SHA-256 of the token (the token itself
/// is not kept as a key).
struct IntrospectionFlightKey: Hashable, Sendable {
    let slot: Int
    let endpoint: HTTPURL
    let tokenDigest: [UInt8]

    init(slot: Int, endpoint: HTTPURL, token: Secret) {
        self.slot = slot
        self.endpoint = endpoint
        self.tokenDigest = SHA256.hash(Array(token.value.utf8))
    }
}
