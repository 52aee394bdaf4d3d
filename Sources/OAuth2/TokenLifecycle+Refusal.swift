// An upstream refusing a token in the token lifecycle (a route's `retryOnStatus`): the token is
// dropped once, and a token fetched because of a refusal is kept until it is old enough, so an
// upstream refusing for other reasons cannot turn its answers into a stream of token requests.

extension TokenLifecycle {
    /// What `refused(token:at:minimumAge:)` did with an upstream's refusal.
    public enum Refusal: String, Sendable, Equatable {
        /// The token was dropped; the next request waits for a new one.
        case dropped
        /// The token is no longer the current one (dropped or replaced already): a request
        /// sent again gets the newer one.
        case superseded
        /// The token was itself fetched after a refusal and is younger than the minimum age:
        /// it stays, and the refusal goes to the client.
        case kept
    }

    /// An upstream refused `token` (a `retryOnStatus` status) at `now`.
    public mutating func refused(token value: String, at now: Double, minimumAge: Double) -> Refusal {
        held.refused(value, at: now, minimumAge: minimumAge)
    }
}
