/// The bearer token a request's caller showed on a route with `inbound`, once the route's check
/// admitted it: what a lookup made on the caller's behalf (a token exchanged for this caller)
/// keys on and sends. Never logged: its description names only its expiry.
public struct CallerToken: Sendable, Equatable, CustomStringConvertible {
    /// The token as the caller sent it (the compact JWT).
    public let value: String
    /// SHA-256 of `value`'s UTF-8 bytes: the key of every cache that holds something per caller.
    public let digest: [UInt8]
    /// The token's `exp` (seconds since 1970); nil when it has none.
    public let expiresAt: Int64?

    public init(value: String, digest: [UInt8], expiresAt: Int64?) {
        self.value = value
        self.digest = digest
        self.expiresAt = expiresAt
    }

    public var description: String {
        "CallerToken(expiresAt: \(expiresAt.map(String.init) ?? "none"))"
    }
}
