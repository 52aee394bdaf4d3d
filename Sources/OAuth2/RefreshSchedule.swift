/// When a token is refreshed: at `expiresAt - margin`, where the margin is the larger of
/// `refreshSkewSeconds` and 10% of the lifetime, and never more than half the lifetime, so a
/// short-lived token is not refreshed on every request (a 20 s token at 10 s, a 4 s token at
/// 2 s) and a long-lived one well before it expires (a 1 h token 6 min early).
public enum RefreshSchedule {
    public static func margin(lifetime: Double, skew: Double) -> Double {
        min(max(skew, lifetime * 0.1), lifetime * 0.5)
    }

    public static func refreshAt(issuedAt: Double, lifetime: Double, skew: Double) -> Double {
        issuedAt + lifetime - margin(lifetime: lifetime, skew: skew)
    }
}
