/// When a token is refreshed: at `expiresAt - margin`, where the margin is the larger of
/// `refreshSkewSeconds` and 10% of the lifetime, and never more than half the lifetime, so a
/// short-lived token is not refreshed on every request (a 20 s token at 10 s, a 4 s token at
/// 2 s) and a long-lived one well before it expires (a 1 h token 6 min early).
///
/// Never sooner than `minimumInterval` after the token was requested: a token endpoint that
/// hands out tokens living a few milliseconds would otherwise be asked again as fast as it
/// answers. Such a token still expires when it says (an expired token is never injected);
/// requests then wait for the next one.
public enum RefreshSchedule {
    /// The shortest time between a token request and the scheduled refresh after it.
    public static let minimumInterval: Double = 1

    public static func margin(lifetime: Double, skew: Double) -> Double {
        min(max(skew, lifetime * 0.1), lifetime * 0.5)
    }

    public static func refreshAt(issuedAt: Double, lifetime: Double, skew: Double) -> Double {
        issuedAt + max(minimumInterval, lifetime - margin(lifetime: lifetime, skew: skew))
    }
}
