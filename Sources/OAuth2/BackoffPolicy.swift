/// How long an identity waits after failed token requests: exponential (`initialSeconds`
/// doubling per consecutive failure up to `maximumSeconds`) with jitter (up to `jitter` of
/// the delay taken off at random, so many relays do not retry in step), and never less than
/// the token endpoint's `Retry-After` (itself capped at `maximumRetryAfterSeconds`, so a
/// mistaken day-long value does not silence an identity for a day).
public struct BackoffPolicy: Sendable, Equatable {
    public var initialSeconds: Double
    public var maximumSeconds: Double
    public var maximumRetryAfterSeconds: Double
    /// The share of the delay (0...1) that jitter may take off.
    public var jitter: Double

    public init(initialSeconds: Double = 1, maximumSeconds: Double = 60, maximumRetryAfterSeconds: Double = 300,
                jitter: Double = 0.5) {
        self.initialSeconds = initialSeconds
        self.maximumSeconds = maximumSeconds
        self.maximumRetryAfterSeconds = maximumRetryAfterSeconds
        self.jitter = jitter
    }

    /// The delay after `failures` consecutive failures (1 for the first), with `random` in
    /// 0..<1 choosing the jitter.
    public func delay(afterFailures failures: Int, retryAfter: Double?, random: Double) -> Double {
        let doublings = UInt64(min(max(failures - 1, 0), 62))
        let exponential = min(maximumSeconds, initialSeconds * Double(UInt64(1) << doublings))
        let jittered = exponential * (1 - jitter * random)
        guard let retryAfter else { return jittered }
        return max(jittered, min(retryAfter, maximumRetryAfterSeconds))
    }
}
