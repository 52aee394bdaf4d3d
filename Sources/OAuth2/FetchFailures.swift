/// The failures of one identity's requests to its IdP, and the backoff they cause: the streak
/// of failures in a row (`consecutive`, with `retryAt`: both cleared when a request succeeds)
/// and the last failure, kept after a recovery for the `/identities` view.
struct FetchFailures: Sendable {
    var policy: BackoffPolicy
    /// The last failure (nil before any, or after discovery succeeded).
    var last: TokenEndpointError?
    /// Failures in a row: the backoff's exponent.
    private(set) var consecutive = 0
    /// Before this time no fetch starts (nil: no backoff).
    private(set) var retryAt: Double?
    /// Chooses the backoff's jitter.
    private var random: any RandomNumberGenerator & Sendable

    init(policy: BackoffPolicy, random: some RandomNumberGenerator & Sendable) {
        self.policy = policy
        self.random = random
    }

    /// A request failed: the streak grows, and the next request waits for the backoff
    /// (`Retry-After` honoured).
    mutating func record(_ error: TokenEndpointError, at now: Double) {
        last = error
        consecutive += 1
        let jitter = Double.random(in: 0..<1, using: &random)
        retryAt = now + policy.delay(afterFailures: consecutive, retryAfter: error.retryAfter, random: jitter)
    }

    /// A request succeeded (or a token store gave a token): the streak is over.
    mutating func streakEnded() {
        consecutive = 0
        retryAt = nil
    }

    /// What a request without a valid token is answered while the streak lasts (nil when it
    /// does not): 503 with a `Retry-After` for a temporary failure, 502 for a refusal.
    /// Discovery is tried again after the backoff whatever failed (`discoveryFailing`): a 503.
    /// An `auto` identity's failure names its code first (`resource_mismatch: …`), as a script
    /// reads it; `/identities` shows the code apart.
    private static func described(_ error: TokenEndpointError) -> String {
        if case .autoSetup(let setup) = error { return "\(setup.code): \(setup.description)" }
        return error.description
    }

    func problem(identity: String, discoveryFailing: Bool, at now: Double) -> TokenUnavailable? {
        guard consecutive > 0, let last else { return nil }
        let temporary = last.isTemporary || discoveryFailing
        let retryAfter = Int(((retryAt ?? now) - now).rounded(.up))
        return TokenUnavailable(identity: identity, reason: temporary ? .unavailable : .refused,
                                retryAfterSeconds: temporary ? max(1, retryAfter) : nil,
                                oauthError: last.oauthError?.code.rawValue,
                                oauthErrorDescription: last.oauthError?.errorDescription,
                                detail: "no valid token for identity \(identity): \(Self.described(last))")
    }
}
