/// When an `auto` identity that only configuration could help (`needsConfiguration`) runs its
/// chain again: the servers may be fixed meanwhile (metadata published, a registration endpoint
/// opened), so after 10 minutes, doubling to an hour, and at once when an operator reloads the
/// configuration or logs the identity out (`dueNow`). Until then requests get the problem.
struct ResolutionRetry: Sendable, Equatable {
    static let policy = BackoffPolicy(initialSeconds: 600, maximumSeconds: 3600, jitter: 0)

    /// Resolutions in a row that ended needing configuration (1 for the first).
    let failures: Int
    /// No resolution starts before this time.
    private(set) var due: Double

    /// After the `failures`th resolution in a row that needed configuration, ended at `now`.
    init(failures: Int, at now: Double) {
        self.failures = failures
        due = now + Self.policy.delay(afterFailures: failures, retryAfter: nil, random: 0)
    }

    /// An operator's reload or logout: the next resolution starts at once.
    mutating func dueNow() {
        due = -.infinity
    }
}
