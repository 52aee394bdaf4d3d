import JOSE

/// `inbound.dpop` and its companions: whether callers may, must or must not present their
/// tokens DPoP-bound (`Authorization: DPoP` with a `DPoP` proof, RFC 9449 §7.1), and what a
/// proof may be.
public struct InboundDPoP: Sendable, Equatable {
    public enum Mode: String, Sendable, Equatable, CaseIterable {
        /// Bearer and DPoP presentations both; a token bound by `cnf.jkt` only as DPoP.
        case allowed
        /// DPoP presentations only.
        case required
        /// Bearer presentations only; a bound token is refused (it can be used with a proof only).
        case refused
    }

    public var mode: Mode
    /// How far a proof's `iat` may be from now, either way, in seconds.
    public var windowSeconds: Int
    /// The proof signature algorithms accepted (never HS256 nor `none`).
    public var algorithms: [JWSAlgorithm]

    public static let defaultWindowSeconds = 60
    public static let maxWindowSeconds = 300
    public static let defaultAlgorithms: [JWSAlgorithm] = [.es256, .rs256, .ps256, .edDSA]

    public init(mode: Mode = .allowed, windowSeconds: Int = Self.defaultWindowSeconds, algorithms: [JWSAlgorithm] = Self.defaultAlgorithms) {
        self.mode = mode
        self.windowSeconds = windowSeconds
        self.algorithms = algorithms
    }
}
